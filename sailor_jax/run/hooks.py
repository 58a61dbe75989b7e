"""The plain hooks of a SAILOR run: one iteration's phases, in the main thread.

Host orchestration. `SailorHooks` is the `runner.SegmentHooks` that `loop` uses unless the run
is pipelined (`pipeline.PipelinedHooks`, its subclass). Its `step` is one SAILOR iteration,
one call per phase: train (`runner.Segments.train`), collect, rank, update theta, settle,
record (`phases`), checkpoint (`runner.Segments.checkpoint`); before segment 0 the warm-up
(`Context.warm_up`) and, every `eval_every` segments, `evaluate_seeds`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sailor_jax.config import SailorConfig
from sailor_jax.logging import MetricLogger
from sailor_jax.run import phases, runner
from sailor_jax.run.results import IterationRecord, LoopState, SeedUpdate, total_tokens
from sailor_jax.run.theta_update import segment_scores, update_stall

__all__ = ["SailorHooks", "evaluate_seeds", "progress_line"]


class SailorHooks:
    """`runner.SegmentHooks` of a SAILOR run: the judge phases between segments (host-only)."""

    label = "SAILOR"
    """What the progress bar calls the run (`loop.run`'s `label`: a comparison's arm name)."""

    def __init__(self, ctx: phases.Context, state: LoopState):
        self.ctx, self.state = ctx, state
        self.num_segments = ctx.cfg.iterations
        self.timings = state.timings

    def before_segment(self, segment: int, runner_state: Any, note: Callable[[str], None]
                       ) -> None:
        """Before segment 0, run the warm-up updates (`Context.warm_up`), each noted on the
        progress bar as `<label>  warm-up k/K updates`."""
        if segment == 0 and self.ctx.warm_up is not None:
            self.ctx.warm_up(self.ctx, self.state, runner_state,
                             lambda text: note(f"{self.label}  {text}"))

    def thetas(self) -> np.ndarray:
        """`float32[R, F]`: the S SAILOR rows, then (baseline) S rows of the start."""
        cfg, thetas = self.ctx.cfg, self.state.thetas
        if not cfg.baseline:
            return thetas
        return np.concatenate([thetas, np.tile(self.ctx.start, (cfg.num_seeds, 1))])

    def step(self, segment: int, run: runner.Segments) -> str:
        """One SAILOR iteration, top to bottom: train the segment on the current thetas,
        collect the agent's and the reference player's games, have the judge rank them,
        update theta, record and log, checkpoint. Returns the progress text."""
        ctx, state, cfg = self.ctx, self.state, self.ctx.cfg
        self.before_segment(segment, run.state, run.note)  # the warm-up, before segment 0
        metrics, seconds = run.train(segment, self.thetas())
        t, s = state.iteration, cfg.num_seeds
        train_score = segment_scores(metrics, s)
        update_stall(state, train_score, cfg.refine.min_improvement)
        phase_seconds, batch, tokens = {"train": seconds}, None, None
        if cfg.self_align:
            batch, phase_seconds["collect"] = phases.collect_batch(ctx, run.state, t)
            rankings, phase_seconds["rank"] = phases.rank(ctx, state, batch, t)
            judged = phases.update_theta(ctx, state, batch, rankings, train_score, t)
            phase_seconds |= judged.seconds
            new_thetas, updates, tokens = phases.settle(state, judged), judged.updates, \
                judged.tokens
        else:
            new_thetas = state.thetas.copy()
            updates = [SeedUpdate(message="fixed reward (self_align=False)") for _ in range(s)]
        record = phases.record_iteration(ctx, state, t, train_score, phase_seconds, batch,
                                         new_thetas, updates, run.logger, metrics, tokens)
        self.record(record, self.periodic_evaluation(segment, run.state), run.logger)
        run.checkpoint(segment)
        return progress_line(state, record, self.label)

    def record(self, record: IterationRecord, evaluation: dict | None,
               logger: MetricLogger) -> None:
        """Append an iteration's record with its periodic evaluation (logged when there is
        one) to the run's state."""
        record.evaluation = evaluation
        if evaluation is not None:
            logger.log(record.env_steps, {"eval/score_mean": evaluation["score_mean"]})
        self.state.iterations.append(record)

    def periodic_evaluation(self, segment: int, runner_state: Any) -> dict | None:
        """Every `eval_every` segments but the last (which the final evaluation covers), the
        SAILOR seeds' `evaluate_seeds`, timed into `timings["eval"]`; else None."""
        cfg = self.ctx.cfg
        if not (cfg.eval_every and (segment + 1) % cfg.eval_every == 0
                and segment + 1 < cfg.iterations):
            return None
        t0 = time.perf_counter()
        evaluation = evaluate_seeds(cfg, runner_state, 0,
                                    jax.random.fold_in(self.ctx.key_eval, segment))
        self.timings["eval"] += time.perf_counter() - t0
        return evaluation

    @property
    def next_iteration(self) -> int:
        """The first iteration not yet recorded: on resume, log records tagged with it or a
        later `iteration` are dropped (`logging.rewind_logs`) and judged again."""
        return self.state.iteration

    def to_json(self) -> dict:
        return self.state.to_json()

    def load_json(self, state: dict) -> None:
        self.state = LoopState.from_json(state)
        self.timings = self.state.timings


def progress_line(state: LoopState, record: IterationRecord, label: str = "SAILOR") -> str:
    """The progress bar's text after an iteration: the run's `label`, SPS, the agreement with
    the judge (none without one), and an endpoint judge's tokens (this iteration's and the
    run's)."""
    tau = runner.nanmean(s.kendall_tau_after for s in record.seeds)
    line = f"{label}  SPS {record.sps:8,.0f}"
    if tau == tau:  # a kept-fixed reward has no judge, so no agreement
        line += f"  agreement(tau) {tau:+.2f}"
    run_tokens = total_tokens(state.warmup + state.iterations)
    if record.judge_tokens is not None and run_tokens is not None:
        line += f"  tokens {sum(record.judge_tokens.values()):,} (run {run_tokens['total']:,})"
    return line


def evaluate_seeds(cfg: SailorConfig, runner_state: Any, start: int, key: jax.Array) -> dict:
    """Evaluate rows `start .. start + S - 1` (SAILOR: 0, baseline: S) of the runner."""
    params = runner.rows(runner_state.params, start, cfg.num_seeds)
    return runner.evaluate_rows(params, cfg.ppo.network, cfg.eval, key, cfg.num_seeds)
