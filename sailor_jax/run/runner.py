"""The one host segment runner: output folder, compile timing, segments, logs, checkpoints, resume.

Host-only. Every training job here (the SAILOR loop, fixed-reward PPO, the DQN transfer test)
is the same sequence around a compiled `segment(runner_state, thetas[R, F]) -> (runner_state,
metrics)`: write `config.json` (refusing to mix runs), on resume restore the newest checkpoint
that restores and drop the log records written after it, compile ahead of time (timed alone),
then per segment: ask the hooks for the rows' reward weights, train, fetch the metrics to the
host, let the hooks do their between-segment work (SAILOR: collect, judge, preferences,
update, refine), checkpoint, report progress. What happens between segments is the
`SegmentHooks` protocol; `fixed_reward.FixedReward` is the hooks of a fixed-reward run
(no judge).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, Protocol

import jax
import numpy as np

from sailor_jax.agents import evaluation
from sailor_jax.config import EvalConfig, NetworkConfig
from sailor_jax.logging import MetricLogger, cut_lines, rewind_logs, to_jsonable
from sailor_jax.run.checkpoint import Checkpointer
from sailor_jax.scale import sharding

UPDATE_METRICS: dict[str, str] = {
    "charts/episodic_return": "episode_score", "charts/episodic_length": "episode_length",
    "charts/episode_max_tile": "episode_max_tile", "charts/reward_mean": "reward_mean",
    "charts/learning_rate": "lr", "losses/policy_loss": "policy_loss",
    "losses/value_loss": "value_loss", "losses/entropy": "entropy",
    "losses/approx_kl": "approx_kl", "losses/clip_fraction": "clip_fraction",
    "losses/explained_variance": "explained_variance"}
"""Log tag -> `SegmentMetrics` field, averaged over seeds per PPO update (CleanRL's tags)."""

_log = logging.getLogger(__name__)


class SegmentHooks(Protocol):
    """What a run does between compiled segments (host-only).

    `timings` is the run's wall-clock seconds per phase; the runner adds `compile`, `train`
    and `checkpoint`, the hooks their own phases. `to_json` / `load_json` carry the hooks'
    state through every checkpoint, so a resumed run continues exactly. Hooks with work in
    flight between segments (`pipeline.PipelinedHooks`) also define `after_restore(runner)`,
    called once after a checkpoint is restored, `finish(logger)`, called after the last
    segment, and `abort()`, called when the run stops with an exception. Hooks that need the
    state a segment starts from define `before_segment(segment, runner, note)` (the segment
    donates it: copy what is kept; `note(text)` shows a long job's progress before the
    segment trains, `Segments.note`). Hooks that run a whole segment's step themselves define
    `step(segment, run) -> progress text` (`run`: the `Segments`, whose `train` and
    `checkpoint` they call; `Segments.step` is the default: train, `after_segment`,
    checkpoint). Hooks whose logs
    carry an `iteration` field define `next_iteration`, the first iteration whose records the
    restored state does not cover (`logging.rewind_logs` drops them on resume).
    """

    num_segments: int
    timings: dict[str, float]

    def thetas(self) -> np.ndarray:
        """`float32[R, F]` reward weights of every vmapped row for the next segment."""

    def after_segment(self, segment: int, runner: Any, metrics: Any, seconds: float,
                      logger: MetricLogger) -> str:
        """Work after segment `segment` trained in `seconds`; returns the progress text."""

    def to_json(self) -> dict:
        """The hooks' state as JSON (saved with every checkpoint)."""

    def load_json(self, state: dict) -> None:
        """Restore the state `to_json` returned (on resume)."""


class Segments:
    """One run's compiled segment with its row layout, checkpointer and logger (host-only):
    the two calls a segment's step makes around the hooks' work, `train` and `checkpoint`.
    `state` is the runner state, `[R', ...]` rows laid out over the devices."""

    def __init__(self, segment: Any, layout: sharding.SeedLayout, ckpt: Checkpointer,
                 logger: MetricLogger, hooks: SegmentHooks, state: Any,
                 note: Callable[[str], None] | None = None):
        self.segment, self.layout, self.ckpt, self.logger = segment, layout, ckpt, logger
        self.hooks, self.state = hooks, state
        self.note = note or (lambda text: None)
        """`note(text)`: the progress bar's description until the segment's end (with output
        to a file, a line), for work before a segment trains."""

    def train(self, seg: int, thetas: np.ndarray) -> tuple[Any, float]:
        """Train segment `seg` on `thetas` (`float32[R, F]`); return its metrics on the host
        and its wall-clock seconds (added to `timings["train"]`). Later log records carry
        `"segment": seg`."""
        t0 = time.perf_counter()
        self.state, metrics = self.segment(self.state, self.layout.put(thetas))
        metrics = self.layout.to_host(metrics)  # blocks until the segment is done
        seconds = time.perf_counter() - t0
        timings = self.hooks.timings
        timings["train"] = timings.get("train", 0.0) + seconds
        self.logger.context = {"segment": seg}
        return metrics, seconds

    def checkpoint(self, seg: int) -> None:
        """Save the runner state and the hooks' state as checkpoint `seg + 1` (timed into
        `timings["checkpoint"]` and logged at the segment's step)."""
        t0 = time.perf_counter()
        self.ckpt.save(seg + 1, self.layout.unpad(self.state),
                       to_jsonable({"segment": seg + 1, "hooks": self.hooks.to_json()}))
        seconds = time.perf_counter() - t0
        timings = self.hooks.timings
        timings["checkpoint"] = timings.get("checkpoint", 0.0) + seconds
        self.logger.log(self.logger.step, {"time/checkpoint": seconds})

    def step(self, seg: int, hooks: SegmentHooks) -> str:
        """The default step of segment `seg`: train, the hooks' `after_segment`, checkpoint;
        returns the progress text."""
        if hasattr(hooks, "before_segment"):
            hooks.before_segment(seg, self.state, self.note)
        metrics, seconds = self.train(seg, hooks.thetas())
        description = hooks.after_segment(seg, self.state, metrics, seconds, self.logger)
        self.checkpoint(seg)
        return description


KEEP_CHECKPOINTS = 2
"""Checkpoints a run keeps: the newest, and one to fall back to when the newest is damaged."""


def run_segments(out_dir: str, runner: Any, segment: Any, hooks: SegmentHooks, *,
                 resume: bool = False, tensorboard: bool = True, progress=None,
                 label: str = "train", hparams: dict | None = None,
                 devices: int | None = None) -> Any:
    """Train `hooks.num_segments` segments with checkpoints every segment. Host-only.

    The R rows are laid out over `devices` devices (`sharding.SeedLayout`, padded to a
    multiple of the device count); hooks and checkpoints see exactly the R real rows, so a
    run checkpointed on one device count resumes on another. Only process 0 writes logs.
    Every `metrics.jsonl` record gets `"segment": k`, the segment after which it was written
    (`hooks.finish`'s: `num_segments`), so that a resume can drop what it writes again
    (`resume_run`). Should anything raise, `hooks.abort()` (if defined) stops work in flight.

    Args:
      out_dir: run folder (already holding `config.json`, see `prepare_out_dir`); receives
        `metrics.jsonl`, `tb/` and `checkpoints/`.
      runner: the freshly initialised runner state (`[R, ...]` rows, host or one device);
        on resume, the shapes the latest checkpoint is restored into.
      segment: the jitted `segment(runner, thetas float32[R', F]) -> (runner, metrics)`.
      hooks: what happens between segments (see `SegmentHooks`).
      resume: continue from the newest checkpoint in `out_dir` that restores, if there is
        one (see `resume_run`).
      tensorboard: also write TensorBoard events (and the hyperparameter table `hparams`).
      progress: optional `rich.progress.Progress` (one task named `label`).
      hparams: the run config as JSON, logged to TensorBoard once (CleanRL's table).
      devices: devices of the `seed` mesh axis (None: all devices JAX sees).

    Returns:
      The runner state after the last segment, `[R, ...]` global arrays.

    Raises:
      ValueError: `devices` is more than JAX sees.
      UserError: `resume`, and checkpoints exist but none restores.
    """
    layout = sharding.SeedLayout(len(hooks.thetas()), devices)
    main = sharding.is_main_process()
    with Checkpointer(os.path.join(out_dir, "checkpoints"),
                      max_to_keep=KEEP_CHECKPOINTS) as ckpt, \
            MetricLogger(out_dir if main else None, tensorboard=tensorboard) as logger:
        restored = resume_run(out_dir, ckpt, layout, runner, hooks) if resume else None
        runner, start = restored or (layout.put(runner), 0)
        if restored is None and hparams is not None:
            logger.log_hparams(hparams)
        try:
            t0 = time.perf_counter()
            segment = segment.lower(runner, layout.put(hooks.thetas())).compile()
            hooks.timings["compile"] = time.perf_counter() - t0  # ahead of time: timed alone
            task = progress.add_task(label, total=hooks.num_segments, completed=start) \
                if progress else None
            note = (lambda text: progress.update(task, description=text)) if progress else None
            run = Segments(segment, layout, ckpt, logger, hooks, runner, note)
            for seg in range(start, hooks.num_segments):
                description = hooks.step(seg, run) if hasattr(hooks, "step") else \
                    run.step(seg, hooks)
                if progress:
                    progress.update(task, advance=1, description=description)
            runner = run.state
            logger.context = {"segment": hooks.num_segments}
            if hasattr(hooks, "finish"):
                hooks.finish(logger)
        except BaseException:
            if hasattr(hooks, "abort"):
                hooks.abort()
            raise
    return layout.unpad(runner)


def resume_run(out_dir: str, ckpt: Checkpointer, layout: sharding.SeedLayout, runner: Any,
               hooks: SegmentHooks) -> tuple[Any, int] | None:
    """Restore the newest checkpoint that restores, and rewind the logs to it. Host-only.

    A damaged newer checkpoint is moved aside and reported as a warning of the
    `sailor_jax.run.runner` logger (shown on the console): which steps were skipped, why, and
    which step the run continues from; so is every log line cut short (dropped). Then the
    hooks get the checkpoint's state (`load_json`, `after_restore`) and every `*.jsonl` log
    in `out_dir` loses the records the resumed run writes again (`rewind_logs`; all of them
    when there is no checkpoint).

    Returns:
      `(runner state padded to the layout, segment to continue from)`, or None when
      `out_dir` has no checkpoint (the run starts from segment 0).

    Raises:
      UserError: checkpoints exist but none restores (`Checkpointer.restore_newest`).
    """
    restored = None
    if ckpt.latest_step() is not None:
        restored = ckpt.restore_newest(layout.abstract_checkpoint(runner))
        if restored.skipped:
            why = "; ".join(f"step {s}: {reason}" for s, reason in restored.skipped)
            _log.warning("resume: newer checkpoints in %s did not restore (%s) and were "
                         "renamed <step>.unusable; continuing from checkpoint step %d",
                         ckpt.directory, why, restored.step)
        hooks.load_json(restored.meta["hooks"])
    start = 0 if restored is None else restored.meta["segment"]
    if sharding.is_main_process():
        _warn_cut_lines(out_dir)
        rewind_logs(out_dir, start, getattr(hooks, "next_iteration", start))
    if restored is None:
        return None
    runner = layout.pad(restored.state)
    if hasattr(hooks, "after_restore"):
        hooks.after_restore(runner)
    return runner, start


def _warn_cut_lines(out_dir: str) -> None:
    """Warn about every JSONL line `rewind_logs` drops because it was cut short or garbled
    (not a JSON object in UTF-8)."""
    for name in sorted(os.listdir(out_dir)):
        cut = cut_lines(os.path.join(out_dir, name)) if name.endswith(".jsonl") else []
        if cut:
            _log.warning("resume: %s line%s %s %s not a whole record (cut short or "
                         "garbled by a kill or a full disk) and %s dropped",
                         os.path.join(out_dir, name), "s" * (len(cut) > 1),
                         ", ".join(map(str, cut)),
                         "are" if len(cut) > 1 else "is", "are" if len(cut) > 1 else "is")


def log_updates(logger: MetricLogger, metrics: Any, env_steps_start: int,
                batch_size: int) -> None:
    """Log one record per PPO update of `SegmentMetrics` (`[U]` or `[S, U]`). Host-only.

    Seeds are averaged (NaN-aware: an update in which no episode ended has no score); the
    record's step is the per-seed env steps after that update.
    """
    m = jax.tree.map(lambda x: np.asarray(x, np.float64).reshape(-1, np.shape(x)[-1]),
                     jax.device_get(metrics))
    for u in range(m.lr.shape[-1]):
        record = {tag: nanmean(getattr(m, field)[:, u]) for tag, field in UPDATE_METRICS.items()}
        record["charts/episodes"] = float(np.sum(m.episodes[:, u]))
        record["charts/max_tile"] = float(np.max(m.max_tile[:, u]))
        logger.log(env_steps_start + (u + 1) * batch_size, record)


def nanmean(values) -> float:
    """Mean of the finite values (None and NaN skipped); NaN when there are none. Host-only."""
    x = np.asarray([np.nan if v is None else v for v in values], np.float64)
    return float(np.mean(x[np.isfinite(x)])) if np.isfinite(x).any() else float("nan")


def rows(tree: Any, start: int, count: int) -> Any:
    """Rows `start .. start + count - 1` of every leaf's leading (seed) axis."""
    return jax.tree.map(lambda x: x[start:start + count], tree)


def evaluate_rows(params: Any, net: NetworkConfig, eval_cfg: EvalConfig, key: jax.Array,
                  num_seeds: int, evaluate=None) -> dict:
    """Evaluate the first `num_seeds` rows of `[R, ...]` params greedily (or as `eval_cfg`
    says). Host-only.

    Args:
      params: network parameters with a leading seed axis of at least `num_seeds` rows.
      net / eval_cfg: the network and evaluation protocol (games per seed, move cap).
      key: evaluation key, split into one key per seed.
      evaluate: a compiled `evaluate(params, key)` to use instead of PPO's (e.g. DQN's).

    Returns:
      The pooled `evaluation.summarize` dict plus `per_seed` (a list of `num_seeds`).
    """
    evaluate = evaluate or evaluation.make_evaluate(net, eval_cfg.episodes, eval_cfg.max_len)
    keys = np.asarray(jax.random.split(key, num_seeds))  # host: valid on every process
    stats = sharding.to_host(jax.vmap(evaluate)(rows(params, 0, num_seeds), keys))
    pooled = evaluation.summarize(stats)
    pooled["per_seed"] = [evaluation.summarize(jax.tree.map(lambda x, s=s: x[s], stats))
                          for s in range(num_seeds)]
    return pooled
