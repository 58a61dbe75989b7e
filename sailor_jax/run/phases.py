"""The phases of one SAILOR iteration, run between segments by the hooks.

Host orchestration. After iteration t's segment, the plain hooks (`hooks.SailorHooks`) run
`iteration`: `collect_batch` samples M games per seed with the current stochastic policy,
`judge` ranks them by the judge (one `rank_groups` call for all seeds) and computes each seed's
updated theta (`theta_update.align_step`: discordant + concordant pairs, the update, refinement),
`settle` applies the judgement on every process, `record_iteration` records (`commit`) and
logs it; the warm-up (`warmup`) runs the same phases before any segment. The pipelined
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
from sailor_jax.judges import moves
from sailor_jax.judges.base import Ranker
from sailor_jax.logging import MetricLogger
from sailor_jax.run import runner
from sailor_jax.run.results import IterationRecord, LoopState, SeedUpdate, total_tokens
from sailor_jax.run.theta_update import align_step, segment_scores, update_stall
from sailor_jax.scale import sharding

__all__ = ["Context", "Judgement", "collect_batch", "commit", "iteration", "judge",
           "judge_moves", "record_iteration", "rows_sps", "settle"]


@dataclasses.dataclass
class Context:
    """The fixed parts of a SAILOR run, built once (host-only)."""

    cfg: SailorConfig
    spec: RewardSpec
    theta0: np.ndarray
    """`float32[F]` initial (and baseline rows') reward weights."""
    collect: Callable
    """Compiled `collect(params[S], reference_params[S], keys[S]) -> TrajectoryBatch` with a
    leading seed axis (`loop._collector`)."""
    ranker: Ranker | None
    advisor: refinement.Advisor | None
    key_collect: jax.Array
    key_eval: jax.Array
    warm_up: Callable | None = None
    """`warm_up(ctx, state, runner_state, reference_params)` before segment 0
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
    kept_pairs: list[list[dict]] | None = None
    """Per seed, the preference pairs kept for the next iterations (`keep_iterations > 0`)."""
    tokens: dict[str, int] | None = None
    """`{"prompt", "completion"}` tokens an endpoint judge reported (None: not an endpoint)."""


def iteration(ctx: Context, state: LoopState, runner_state: Any, metrics: Any,
              seconds: float, logger: MetricLogger, reference_params: Any = None
              ) -> IterationRecord:
    """Everything after iteration t's segment: judge, update theta, log. Updates `state`.
    `reference_params`: as `collect_batch` takes them."""
    cfg, s, t = ctx.cfg, ctx.cfg.num_seeds, state.iteration
    phase_seconds = {"train": seconds}
    train_score = segment_scores(metrics, s)
    update_stall(state, train_score, cfg.refine.min_improvement)
    batch = None
    if cfg.self_align:
        batch, phase_seconds["collect"] = collect_batch(ctx, runner_state, t, reference_params)
        judged = judge(ctx, state, batch, train_score, t)
        phase_seconds |= judged.seconds
        new_thetas, updates, tokens = settle(state, judged), judged.updates, judged.tokens
    else:
        new_thetas, tokens = state.thetas.copy(), None
        updates = [SeedUpdate(message="fixed reward (self_align=False)") for _ in range(s)]
    return record_iteration(ctx, state, t, train_score, phase_seconds, batch, new_thetas,
                            updates, logger, metrics, tokens)


def collect_batch(ctx: Context, runner_state: Any, t: int, reference_params: Any = None
                  ) -> tuple[Any, float]:
    """Sample iteration t's M games per seed (host `TrajectoryBatch [S, M, ...]`, seconds).

    `reference_params`: the `[S, ...]` network that plays the reference games when
    `reference_policy="previous"` (the agent before segment t); None: the current agent's,
    which the expert reference does not read."""
    t0 = time.perf_counter()
    keys = np.asarray(jax.random.split(jax.random.fold_in(ctx.key_collect, t),
                                       ctx.cfg.num_seeds))
    params = runner.rows(runner_state.params, 0, ctx.cfg.num_seeds)
    batch = sharding.to_host(ctx.collect(
        params, params if reference_params is None else reference_params, keys))
    return batch, time.perf_counter() - t0


def judge(ctx: Context, state: LoopState, batch: Any, train_score: list[float | None],
          t: int, log_iteration: int | None = None) -> Judgement:
    """Rank iteration t's games and compute the updated (and refined) thetas.

    Reads `state` (thetas, stall counters, past scores) and changes nothing, so it may run in
    a worker thread (`pipeline`). Process 0 judges; the others return zeros, replaced by
    process 0's thetas in `settle`. A judge with a `log_context` (the LLM) tags its log
    records with `"iteration": log_iteration` (None: t), as the refinement advisor does; the
    warm-up tags its rounds below 0, so that a resumed run keeps them (`logging.rewind_logs`).
    """
    cfg, s = ctx.cfg, ctx.cfg.num_seeds
    if not sharding.is_main_process():  # process 0 judges; the others take its thetas
        return Judgement(np.zeros_like(state.thetas), [SeedUpdate(message="theta from "
                                                                  "process 0")] * s,
                         {"rank": 0.0, "update": 0.0}, [])
    t0 = time.perf_counter()
    ctx.ranker.reseed(int(np.random.default_rng([cfg.seed, t]).integers(2**31)))
    if hasattr(ctx.ranker, "log_context"):
        ctx.ranker.log_context = {"iteration": t if log_iteration is None else log_iteration}
    usage = getattr(ctx.ranker, "token_usage", None)
    if usage is not None:  # the budget counts what the warm-up and finished iterations spent
        usage.start((total_tokens(state.warmup + state.iterations) or {}).get("total", 0))
    groups = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(s)]
    judged_moves = judge_moves(ctx, groups, t) if cfg.judged == "moves" else None
    rankings = [None] * s if judged_moves else ctx.ranker.rank_groups(groups)
    rank_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    stalled = [k >= cfg.refine.patience for k in state.stall]
    history = [r.train_score for r in state.iterations if r.train_score] + [train_score]
    kept = None
    if cfg.alignment.keep_iterations > 0:  # copies: the state changes only in `settle`
        kept = [list(k) for k in state.kept_pairs] + [[]] * (s - len(state.kept_pairs))
    new_thetas, updates = align_step(state.thetas, batch, rankings, ctx.spec, cfg, t,
                                     ctx.advisor, stalled, history, kept=kept,
                                     aggregate=getattr(ctx.ranker, "aggregate", "sum"),
                                     moves=judged_moves)
    refined = [k for k, update in enumerate(updates) if update.refine is not None]
    tokens = None if usage is None else {  # the judge's and a sharing refinement advisor's
        "prompt": usage.prompt, "completion": usage.completion}
    return Judgement(new_thetas, updates, {"rank": rank_s, "update": time.perf_counter() - t0},
                     refined, kept, tokens)


def judge_moves(ctx: Context, groups: list[Any], t: int
                ) -> list[tuple[moves.MoveGroups, np.ndarray]]:
    """Per seed, `cfg.move_boards` boards sampled from its group (host `TrajectoryBatch`) and
    every legal move from them (`judges.moves`), with the judge's action values `float64[B, 4]`
    (one judge call for all seeds). Seeded by `[cfg.seed, t, seed, 3]`, so a resumed run
    judges the same moves."""
    cfg, sampled = ctx.cfg, []
    for k, group in enumerate(groups):
        rng = np.random.default_rng([cfg.seed, t, k, 3])
        boards = moves.sample_boards(group, cfg.move_boards, rng)
        sampled.append(moves.move_groups(boards, int(rng.integers(2**31))))
    pooled = moves.MoveGroups(*(np.concatenate([getattr(g, f.name) for g in sampled])
                                for f in dataclasses.fields(moves.MoveGroups)))
    values = ctx.ranker.move_values(pooled)
    ends = np.cumsum([len(g) for g in sampled])[:-1]
    return list(zip(sampled, np.split(values, ends), strict=True))


def settle(state: LoopState, judged: Judgement) -> np.ndarray:
    """Apply a judgement's stall resets and kept pairs; return process 0's thetas on every
    process (the kept pairs live on process 0, which alone judges and updates)."""
    for k in judged.refined:
        state.stall[k] = 0  # wait `patience` iterations again before the next question
    if judged.kept_pairs is not None:
        state.kept_pairs = judged.kept_pairs
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
