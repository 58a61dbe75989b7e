"""Fixed-reward PPO training runs (the baseline agent): segments, logs, checkpoints, evaluation.

Host orchestration around the compiled `ppo.train_segment`; used by
`experiments/train_ppo.py` and by the SAILOR loop for its same-budget baseline.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax import evaluation, ppo
from sailor_jax.checkpoint import Checkpointer
from sailor_jax.config import EvalConfig, PPOConfig, TrainConfig
from sailor_jax.logging import MetricLogger, to_jsonable
from sailor_jax.reward import RewardSpec


def update_records(metrics, env_steps_start: int, cfg: PPOConfig) -> list[dict]:
    """Turn `SegmentMetrics` (`[U]` or `[S, U]`) into one log record per update. Host-only.

    Seeds are averaged (NaN-aware: updates in which no episode ended have no score).
    """
    m = jax.tree.map(lambda x: np.asarray(x, np.float64).reshape(-1, np.shape(x)[-1]),
                     jax.device_get(metrics))
    records = []
    for u in range(m.lr.shape[-1]):
        def mean(x, u=u):
            col = x[:, u]
            return float(np.nanmean(col)) if np.any(np.isfinite(col)) else float("nan")

        records.append({
            "env_steps": env_steps_start + (u + 1) * cfg.batch_size,
            "charts/episodic_return": mean(m.episode_score),
            "charts/episodic_length": mean(m.episode_length),
            "charts/episode_max_tile": mean(m.episode_max_tile),
            "charts/episodes": float(np.sum(m.episodes[:, u])),
            "charts/max_tile": float(np.max(m.max_tile[:, u])),
            "charts/reward_mean": mean(m.reward_mean),
            "charts/learning_rate": mean(m.lr),
            "losses/policy_loss": mean(m.policy_loss),
            "losses/value_loss": mean(m.value_loss),
            "losses/entropy": mean(m.entropy),
            "losses/approx_kl": mean(m.approx_kl),
            "losses/clip_fraction": mean(m.clip_fraction),
            "losses/explained_variance": mean(m.explained_variance),
        })
    return records


def evaluate_params(params, net, eval_cfg: EvalConfig, key: jax.Array, num_seeds: int) -> dict:
    """Evaluate `[S, ...]` params; return pooled and per-seed summaries. Host-only wrapper."""
    evaluate = evaluation.make_evaluate(net, eval_cfg.episodes, eval_cfg.max_len, eval_cfg.greedy)
    return evaluate_seeds(evaluate, params, key, num_seeds)


def evaluate_seeds(evaluate, params, key: jax.Array, num_seeds: int) -> dict:
    """Run a compiled `evaluate(params, key)` on `[S, ...]` params (vmapped, keys split from
    `key`); return the pooled `evaluation.summarize` dict plus `per_seed` (a list of S). Host-only.
    """
    stats = jax.vmap(evaluate)(params, jax.random.split(key, num_seeds))
    stats = jax.device_get(stats)
    pooled = evaluation.summarize(stats)
    pooled["per_seed"] = [evaluation.summarize(jax.tree.map(lambda x, s=s: x[s], stats))
                          for s in range(num_seeds)]
    return pooled


def train(cfg: TrainConfig, out_dir: str, resume: bool = False, progress=None) -> dict:
    """Train, checkpoint every segment, evaluate, write `results.json`. Host-only.

    Args:
      cfg: the run configuration.
      out_dir: output folder (metrics.jsonl, tb/, checkpoints/, config.json, results.json).
      resume: continue from the latest checkpoint in `out_dir` (config must match).
      progress: optional `rich.progress.Progress` to report on.

    Returns:
      The results dict written to `results.json`.

    Raises:
      ValueError: `out_dir` holds a run and `resume` is False, or its config differs.
    """
    config_json = json.dumps(to_jsonable(dataclasses.asdict(cfg)), indent=2, sort_keys=True)
    prepare_out_dir(out_dir, config_json, resume)
    spec = RewardSpec()
    theta = spec.validate(cfg.theta if cfg.theta is not None else spec.theta0)
    thetas = jnp.broadcast_to(jnp.asarray(theta), (cfg.num_seeds, theta.shape[0]))
    init, segment = ppo.make_train(cfg.ppo, num_seeds=cfg.num_seeds)
    key_init, key_eval, key_random = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    runner = init(key_init)
    timings = {"compile_s": 0.0, "train_s": 0.0, "checkpoint_s": 0.0}
    start = 0
    with Checkpointer(os.path.join(out_dir, "checkpoints"), max_to_keep=2) as ckpt, \
            MetricLogger(out_dir, tensorboard=cfg.tensorboard) as logger:
        if resume and ckpt.latest_step() is not None:
            runner, meta = ckpt.restore(jax.eval_shape(lambda: runner))
            start, timings = meta["segment"], {**timings, **meta["timings"]}
        t0 = time.perf_counter()
        segment = segment.lower(runner, thetas).compile()  # ahead of time: compile timed alone
        timings["compile_s"] = time.perf_counter() - t0
        task = progress.add_task("train", total=cfg.num_segments, completed=start) \
            if progress else None
        for seg in range(start, cfg.num_segments):
            t0 = time.perf_counter()
            runner, metrics = segment(runner, thetas)
            metrics = jax.device_get(metrics)  # blocks until the segment is done
            dt = time.perf_counter() - t0
            timings["train_s"] += dt
            steps_done = seg * cfg.ppo.steps_per_segment
            for rec in update_records(metrics, steps_done, cfg.ppo):
                logger.log(rec["env_steps"], rec)
            sps = cfg.num_seeds * cfg.ppo.steps_per_segment / dt
            logger.log((seg + 1) * cfg.ppo.steps_per_segment, {"charts/SPS": sps})
            t0 = time.perf_counter()
            ckpt.save(seg + 1, runner, {"segment": seg + 1, "timings": timings})
            timings["checkpoint_s"] += time.perf_counter() - t0
            if progress:
                last = np.asarray(metrics.episode_score, np.float64)[..., -1]
                score = np.mean(last[np.isfinite(last)]) if np.isfinite(last).any() else np.nan
                progress.update(task, advance=1, description=f"train  score {score:7.0f}  "
                                f"SPS {sps:9,.0f}")
    t0 = time.perf_counter()
    results = {"config": json.loads(config_json), "theta": theta.tolist(),
               "feature_names": list(spec.names),
               "env_steps_per_seed": cfg.num_segments * cfg.ppo.steps_per_segment,
               "evaluation": evaluate_params(runner.params, cfg.ppo.network, cfg.eval, key_eval,
                                             cfg.num_seeds)}
    if cfg.evaluate_random:
        stats = evaluation.random_policy_stats(key_random, cfg.eval.episodes * cfg.num_seeds,
                                               cfg.eval.max_len)
        results["random_policy_evaluation"] = evaluation.summarize(stats)
    timings["eval_s"] = time.perf_counter() - t0
    results["timings"] = timings
    results["sps"] = (cfg.num_seeds * cfg.num_segments * cfg.ppo.steps_per_segment
                      / timings["train_s"]) if timings["train_s"] > 0 else None
    with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(to_jsonable(results), f, indent=2)
    return results


def prepare_out_dir(out_dir: str, config_json: str, resume: bool) -> None:
    """Create `out_dir`, refusing to mix runs: an existing config must match on resume."""
    path = os.path.join(out_dir, "config.json")
    if os.path.exists(path):
        if not resume:
            raise ValueError(f"{out_dir} already holds a run; pass --resume to continue it or "
                             "choose another --out")
        with open(path, encoding="utf-8") as f:
            if f.read() != config_json:
                raise ValueError(f"--resume: the config differs from the one saved in {path}")
        return
    os.makedirs(out_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(config_json)
