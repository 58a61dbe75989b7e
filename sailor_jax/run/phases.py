"""The phases of one SAILOR iteration, called in order by `hooks.SailorHooks.step`.

Host orchestration. After iteration t's segment trains, `collect_batch` samples M games per
seed with the current stochastic policy, `rank` has the judge rank them (one `rank_groups`
call for all seeds), `update_theta` computes each seed's updated theta
(`theta_update.align_step`: discordant + concordant pairs, the update, refinement), `settle`
applies it on every process, `record_iteration` records (`commit`) and logs it; then the
runner checkpoints. The warm-up (`warmup`) runs the same phases before any segment. The pipelined
hooks (`pipeline.PipelinedHooks`) run the same phases with the judge in a worker thread; `loop`
picks one of the two. After Zeng et al. 2024, "Learning Reward for Robot Skills Using Large
Language Models via Self-Alignment".
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sailor_jax.alignment import refinement
from sailor_jax.config import SailorConfig
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges.base import Ranker
from sailor_jax.logging import MetricLogger
from sailor_jax.run import runner
from sailor_jax.run.results import IterationRecord, LoopState, SeedUpdate, total_tokens
from sailor_jax.run.theta_update import align_step
from sailor_jax.scale import sharding

__all__ = ["Context", "Judgement", "collect_batch", "commit", "judge", "rank",
           "record_iteration", "rows_sps", "settle", "update_theta"]


@dataclasses.dataclass
class Context:
    """The fixed parts of a SAILOR run, built once (host-only)."""

    cfg: SailorConfig
    spec: RewardSpec
    start: np.ndarray
    """`float32[F]` start reward weights (the SAILOR rows' theta before any update, and the
    baseline rows' throughout)."""
    collect: Callable
    """Compiled `collect(params[S], keys[S]) -> TrajectoryBatch` with a leading seed axis
    (`loop._collector`)."""
    ranker: Ranker | None
    advisor: refinement.Advisor | None
    key_collect: jax.Array
    key_eval: jax.Array
    warm_up: Callable | None = None
    """`warm_up(ctx, state, runner_state, note)` before segment 0
    (`warmup.warm_up` when `cfg.warmup_updates > 0` and theta is learned; None: none)."""


@dataclasses.dataclass
class Judgement:
    """What judging one iteration's trajectories produced (host-only)."""

    thetas: np.ndarray
    """`float32[S, F]` after the update (process 0's; zeros on the others until broadcast)."""
    updates: list[SeedUpdate]
    seconds: dict[str, float]
    """`rank` and `update` wall-clock seconds."""
    refined: list[int]
    """Seeds that asked for refinement: their stall counters restart."""
    tokens: dict[str, int] | None = None
    """`{"prompt", "completion"}` tokens an endpoint judge reported (None: not an endpoint)."""


def collect_batch(ctx: Context, runner_state: Any, t: int) -> tuple[Any, float]:
    """Sample iteration t's M games per seed (host `TrajectoryBatch [S, M, ...]`, seconds)."""
    t0 = time.perf_counter()
    keys = np.asarray(jax.random.split(jax.random.fold_in(ctx.key_collect, t),
                                       ctx.cfg.num_seeds))
    params = runner.rows(runner_state.params, 0, ctx.cfg.num_seeds)
    batch = sharding.to_host(ctx.collect(params, keys))
    return batch, time.perf_counter() - t0


def rank(ctx: Context, state: LoopState, batch: Any, t: int,
         log_iteration: int | None = None) -> tuple[list | None, float]:
    """The judge's rankings of iteration t's games, one `rank_groups` call for all seeds, and
    its seconds. Process 0 ranks; the others return None.

    Reads `state` and changes nothing, so it may run in a worker thread (`pipeline`). A judge
    with a `log_context` (the LLM) tags its log records with `"iteration": log_iteration`
    (None: t), as the refinement advisor does; the warm-up tags its rounds below 0, so that a
    resumed run keeps them (`logging.rewind_logs`).
    """
    if not sharding.is_main_process():  # process 0 judges; the others take its thetas
        return None, 0.0
    t0 = time.perf_counter()
    ctx.ranker.reseed(int(np.random.default_rng([ctx.cfg.seed, t]).integers(2**31)))
    if hasattr(ctx.ranker, "log_context"):
        ctx.ranker.log_context = {"iteration": t if log_iteration is None else log_iteration}
    usage = getattr(ctx.ranker, "token_usage", None)
    if usage is not None:  # the budget counts what the warm-up and finished iterations spent
        usage.start((total_tokens(state.warmup + state.iterations) or {}).get("total", 0))
    groups = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(ctx.cfg.num_seeds)]
    rankings = ctx.ranker.rank_groups(groups)
    return rankings, time.perf_counter() - t0


def update_theta(ctx: Context, state: LoopState, batch: Any, rankings: list | None,
                 train_score: list[float | None], t: int) -> Judgement:
    """Each seed's updated (and refined) theta from the judge's `rankings` of iteration t's
    games (`theta_update.align_step`: discordant + concordant pairs, the update, refinement).

    Reads `state` and changes nothing (`settle` applies the result). `rankings` None (a
    process other than 0): zeros, replaced by process 0's thetas in `settle`.
    """
    cfg, s = ctx.cfg, ctx.cfg.num_seeds
    if rankings is None:
        return Judgement(np.zeros_like(state.thetas),
                         [SeedUpdate(message="theta from process 0")] * s, {"update": 0.0}, [])
    t0 = time.perf_counter()
    stalled = [k >= cfg.refine.patience for k in state.stall]
    history = [r.train_score for r in state.iterations if r.train_score] + [train_score]
    new_thetas, updates = align_step(state.thetas, batch, rankings, ctx.spec, cfg, t,
                                     ctx.advisor, stalled, history,
                                     aggregate=getattr(ctx.ranker, "aggregate", "sum"),
                                     evidence=heldout_history(state, s),
                                     beliefs=last_beliefs(state, s))
    refined = [k for k, update in enumerate(updates) if update.refine is not None]
    usage = getattr(ctx.ranker, "token_usage", None)
    tokens = None if usage is None else {  # the judge's and a sharing refinement advisor's
        "prompt": usage.prompt, "completion": usage.completion}
    return Judgement(new_thetas, updates, {"update": time.perf_counter() - t0}, refined, tokens)


def heldout_history(state: LoopState, num_seeds: int) -> list[list[float | None]]:
    """Per seed, the `heldout_p` of every earlier update (the warm-up's, then the iterations'):
    what the judge-evidence gate combines (`theta_update.align_step`)."""
    records = state.warmup + state.iterations
    return [[r.seeds[k].heldout_p for r in records if k < len(r.seeds)]
            for k in range(num_seeds)]


def last_beliefs(state: LoopState, num_seeds: int) -> list[dict | None]:
    """Per seed, the `belief` its latest update left (the warm-up's, then the iterations';
    None: none yet): the bt_reliability update's prior (`theta_update.align_step`)."""
    records = state.warmup + state.iterations
    return [next((r.seeds[k].belief for r in reversed(records)
                  if k < len(r.seeds) and r.seeds[k].belief is not None), None)
            for k in range(num_seeds)]


def judge(ctx: Context, state: LoopState, batch: Any, train_score: list[float | None],
          t: int, log_iteration: int | None = None) -> Judgement:
    """`rank` then `update_theta`, as one call (the warm-up's rounds and the pipelined
    judgement in its worker thread); the judgement's seconds hold both phases'."""
    rankings, rank_s = rank(ctx, state, batch, t, log_iteration)
    judged = update_theta(ctx, state, batch, rankings, train_score, t)
    judged.seconds = {"rank": rank_s, **judged.seconds}
    return judged


def settle(state: LoopState, judged: Judgement) -> np.ndarray:
    """Apply a judgement's stall resets; return process 0's thetas on every process."""
    for k in judged.refined:
        state.stall[k] = 0  # wait `patience` iterations again before the next question
    return sharding.broadcast_from_main(judged.thetas)


def record_iteration(ctx: Context, state: LoopState, t: int, train_score: list[float | None],
                     phase_seconds: dict[str, float], batch: Any, new_thetas: np.ndarray,
                     updates: list[SeedUpdate], logger: MetricLogger,
                     metrics: Any = None, judge_tokens: dict[str, int] | None = None
                     ) -> IterationRecord:
    """`commit` iteration t, then log its PPO updates (`metrics`, when given) and its record;
    return the record."""
    s = ctx.cfg.num_seeds
    record = commit(ctx, state, t, train_score, phase_seconds, batch, new_thetas, updates,
                    judge_tokens)
    if metrics is not None:
        runner.log_updates(logger, runner.rows(metrics, 0, s), t * ctx.cfg.ppo.steps_per_segment,
                           ctx.cfg.ppo.batch_size)
    logger.log(record.env_steps, {**_scalars(ctx.spec, record, new_thetas), "iteration": t,
                                  "seeds": [u.to_json() for u in updates]})
    return record


def commit(ctx: Context, state: LoopState, t: int, train_score: list[float | None],
           phase_seconds: dict[str, float], batch: Any, new_thetas: np.ndarray,
           updates: list[SeedUpdate], judge_tokens: dict[str, int] | None = None,
           env_steps: int | None = None) -> IterationRecord:
    """Add a theta update's host phase seconds to the timings (the runner times `train`),
    append its thetas (`float32[S, F]`) to the theta history and return its record.

    `t`: the iteration (a warm-up round's is negative); `env_steps`: the steps trained when
    it was judged (None: `(t + 1)` segments; a warm-up's: 0, which records SPS 0);
    `judge_tokens`: an endpoint judge's, when given. `batch`: host `TrajectoryBatch` or None.
    """
    cfg = ctx.cfg
    for phase, dt in phase_seconds.items():
        if phase != "train":
            state.timings[phase] = state.timings.get(phase, 0.0) + dt
    state.theta_history.append(new_thetas.tolist())
    seconds = phase_seconds["train"]
    host = sum(v for k, v in phase_seconds.items() if k not in ("train", "rank", "update")) \
        if "judge_wait" in phase_seconds else sum(phase_seconds.values()) - seconds
    if env_steps is None:
        env_steps = (t + 1) * cfg.ppo.steps_per_segment
    return IterationRecord(
        iteration=t, env_steps=env_steps, sps=rows_sps(cfg, seconds) if env_steps else 0.0,
        seconds=phase_seconds, host_overhead_s=host, theta=new_thetas.tolist(), seeds=updates,
        train_score=train_score,
        sampled_score_mean=None if batch is None else float(np.mean(batch.score)),
        sampled_length_mean=None if batch is None else float(np.mean(batch.lengths)),
        judge_tokens=judge_tokens, sampled_ended=ended_counts(batch, cfg.reference_games))


def ended_counts(batch: Any, reference_games: int) -> dict[str, list[int]] | None:
    """Per seed, the judged trajectories that contain their game's end, among the agent's and
    among the reference policy's (the last `reference_games` of each group): where the judge
    can see `game_over` at all. `batch`: host `TrajectoryBatch` with `Phi [S, M, F]`,
    or None."""
    if batch is None:
        return None
    ended = np.asarray(batch.Phi)[..., FEATURE_NAMES.index("game_over")] > 0  # [S, M]
    agents = ended.shape[1] - reference_games
    return {"agent": ended[:, :agents].sum(axis=1).tolist(),
            "reference": ended[:, agents:].sum(axis=1).tolist()}


def _scalars(spec: RewardSpec, record: IterationRecord, thetas: np.ndarray) -> dict:
    """The iteration's TensorBoard scalars (CleanRL-style group/name tags)."""
    seeds = record.seeds
    return {
        "sailor/num_discordant": np.mean([u.num_discordant for u in seeds]),
        "sailor/num_concordant": np.mean([u.num_concordant for u in seeds]),
        "sailor/alignment": runner.nanmean(u.kendall_tau_after for u in seeds),
        "sailor/alignment_before": runner.nanmean(u.kendall_tau_before for u in seeds),
        "sailor/refinements": sum(u.refine is not None for u in seeds),
        "charts/SPS": record.sps,
        "charts/sampled_score": record.sampled_score_mean,
        "charts/segment_score": runner.nanmean(record.train_score),
        **{f"sailor/theta_{n}": float(np.mean(thetas[:, k])) for k, n in enumerate(spec.names)},
        **{f"time/{k}": v for k, v in record.seconds.items()},
        "time/host_overhead": record.host_overhead_s}


def rows_sps(cfg: SailorConfig, seconds: float) -> float:
    """Env steps per second of one segment over all vmapped rows (SAILOR + baseline seeds)."""
    rows = cfg.rows
    return rows * cfg.ppo.steps_per_segment / max(seconds, 1e-9)
