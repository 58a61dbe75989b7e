"""Stale-theta pipelining: the judge ranks iteration t while segment t+1 already trains.

Host-only. `PipelinedHooks` are the SAILOR hooks with the judge phase (ranking, preferences,
theta update) moved to one worker thread (JAX and PyTorch release the GIL in their kernels):

    segment t   trains on state.thetas        | judge(t-1) runs in the worker
    after it:   collect iteration t's games (main thread), wait for judge(t-1) and apply
                its thetas, submit judge(t) starting from them
    segment t+1 trains on judge(t-1)'s thetas | judge(t) runs in the worker

So the theta that iteration t's judgement produces trains from segment t+2 on, one segment
later than without pipelining; segments 0 and 1 train on the start. Every judgement starts from
the newest thetas, so the updates form one chain, but the games it ranks were played by a
policy trained on thetas one update older. The run stays deterministic: the worker reads a
fixed state and the main thread applies judgements in iteration order.

A checkpoint taken while judge(t) is in flight stores iteration t's training summary
(`pending`); `after_restore` collects iteration t's games again from the restored runner
state (same params, same key) and resubmits the judgement, so kill + resume gives the theta
history of an uninterrupted run, and its logs: `next_iteration` is then t, so the resume first
drops the in-flight judgement's `llm.jsonl` / `refine.jsonl` records (`logging.rewind_logs`).
`finish` waits for the last judgement (its theta trains nothing but completes
`theta_history`).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sailor_jax.logging import MetricLogger
from sailor_jax.run import hooks, phases, runner
from sailor_jax.run.results import LoopState
from sailor_jax.run.theta_update import segment_scores, update_stall

__all__ = ["PipelinedHooks"]


class PipelinedHooks(hooks.SailorHooks):
    """`runner.SegmentHooks` of a pipelined SAILOR run (see the module docstring)."""

    def __init__(self, ctx: phases.Context, state: LoopState):
        super().__init__(ctx, state)
        self.timings.setdefault("judge_wait", 0.0)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge")
        self.pending: dict | None = None
        """Iteration whose judgement is in flight: t, train_score, seconds, evaluation."""
        self._future: Future | None = None
        self._batch: Any = None

    def step(self, segment: int, run: runner.Segments) -> str:
        """The default step (`runner.Segments.step`): train, `after_segment`, checkpoint."""
        return run.step(segment, self)

    def after_segment(self, segment: int, runner_state: Any, metrics: Any, seconds: float,
                      logger: MetricLogger) -> str:
        cfg = self.ctx.cfg
        train_score = segment_scores(metrics, cfg.num_seeds)
        runner.log_updates(logger, runner.rows(metrics, 0, cfg.num_seeds),
                           segment * cfg.ppo.steps_per_segment, cfg.ppo.batch_size)
        batch, collect_s = phases.collect_batch(self.ctx, runner_state, segment)
        self._settle(logger)
        update_stall(self.state, train_score, cfg.refine.min_improvement)
        self.pending = {"t": segment, "train_score": train_score,
                        "seconds": {"train": seconds, "collect": collect_s},
                        "evaluation": self.periodic_evaluation(segment, runner_state)}
        self._submit(batch)
        return f"SAILOR (pipelined)  SPS {phases.rows_sps(cfg, seconds):8,.0f}"

    def after_restore(self, runner_state: Any) -> None:
        """Resubmit the judgement that was in flight at the checkpoint (same games, redone)."""
        if self.pending is not None:
            batch, _ = phases.collect_batch(self.ctx, runner_state, self.pending["t"])
            self._submit(batch)

    def finish(self, logger: MetricLogger) -> None:
        """Wait for the judgement in flight, apply and log it, and stop the worker."""
        self._settle(logger)
        self._pool.shutdown()

    def abort(self) -> None:
        """Stop the worker after the judgement under way (the run is stopping on an error),
        so that nothing writes to the logs once the run has returned."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def to_json(self) -> dict:
        return {**self.state.to_json(), "pending": self.pending}

    def load_json(self, state: dict) -> None:
        super().load_json(state)
        self.pending = state.get("pending")
        self._future = self._batch = None

    def _submit(self, batch: Any) -> None:
        p, self._batch = self.pending, batch
        self._future = self._pool.submit(phases.judge, self.ctx, self.state, batch,
                                         p["train_score"], p["t"])

    def _settle(self, logger: MetricLogger) -> None:
        """Wait for the pending judgement (if any); record and log its iteration."""
        if self.pending is None:
            return
        t0 = time.perf_counter()
        judged = self._future.result()  # re-raises the worker's exception (e.g. a kill)
        p, wait_s = self.pending, time.perf_counter() - t0
        new_thetas = phases.settle(self.state, judged)
        seconds = {**p["seconds"], **judged.seconds, "judge_wait": wait_s}
        record = phases.record_iteration(self.ctx, self.state, p["t"], p["train_score"], seconds,
                                       self._batch, new_thetas, judged.updates, logger,
                                       judge_tokens=judged.tokens)
        self.record(record, p["evaluation"], logger)
        self.pending = self._future = self._batch = None
