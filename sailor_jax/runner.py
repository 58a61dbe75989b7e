"""The one host segment runner: output folder, compile timing, segments, logs, checkpoints, resume.

Host-only. Every training job here (the SAILOR loop, fixed-reward PPO, the DQN transfer test)
is the same sequence around a compiled `segment(runner_state, thetas[R, F]) -> (runner_state,
metrics)`: write `config.json` (refusing to mix runs), restore the latest checkpoint on
resume, compile ahead of time (timed alone), then per segment: ask the hooks for the rows'
reward weights, train, fetch the metrics to the host, let the hooks do their between-segment
work (SAILOR: collect, judge, preferences, update, refine), checkpoint, report progress.
What happens between segments is the `SegmentHooks` protocol; `FixedReward` is the hooks of a
fixed-reward run (no judge).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Protocol

import jax
import numpy as np

from sailor_jax import evaluation, ppo, sharding
from sailor_jax.checkpoint import Checkpointer
from sailor_jax.config import EvalConfig, NetworkConfig, TrainConfig
from sailor_jax.logging import MetricLogger, to_jsonable
from sailor_jax.reward import RewardSpec
from sailor_jax.run_dir import prepare_out_dir

UPDATE_METRICS: dict[str, str] = {
    "charts/episodic_return": "episode_score", "charts/episodic_length": "episode_length",
    "charts/episode_max_tile": "episode_max_tile", "charts/reward_mean": "reward_mean",
    "charts/learning_rate": "lr", "losses/policy_loss": "policy_loss",
    "losses/value_loss": "value_loss", "losses/entropy": "entropy",
    "losses/approx_kl": "approx_kl", "losses/clip_fraction": "clip_fraction",
    "losses/explained_variance": "explained_variance"}
"""Log tag -> `SegmentMetrics` field, averaged over seeds per PPO update (CleanRL's tags)."""


class SegmentHooks(Protocol):
    """What a run does between compiled segments (host-only).

    `timings` is the run's wall-clock seconds per phase; the runner adds `compile`, `train`
    and `checkpoint`, the hooks their own phases. `to_json` / `load_json` carry the hooks'
    state through every checkpoint, so a resumed run continues exactly. Hooks with work in
    flight between segments (`pipeline.PipelinedHooks`) also define `after_restore(runner)`,
    called once after a checkpoint is restored, and `finish(logger)`, called after the last
    segment.
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


def run_segments(out_dir: str, runner: Any, segment: Any, hooks: SegmentHooks, *,
                 resume: bool = False, tensorboard: bool = True, progress=None,
                 label: str = "train", hparams: dict | None = None,
                 devices: int | None = None) -> Any:
    """Train `hooks.num_segments` segments with checkpoints every segment. Host-only.

    The R rows are laid out over `devices` devices (`sharding.SeedLayout`, padded to a
    multiple of the device count); hooks and checkpoints see exactly the R real rows, so a
    run checkpointed on one device count resumes on another. Only process 0 writes logs.

    Args:
      out_dir: run folder (already holding `config.json`, see `prepare_out_dir`); receives
        `metrics.jsonl`, `tb/` and `checkpoints/`.
      runner: the freshly initialised runner state (`[R, ...]` rows, host or one device);
        on resume, the shapes the latest checkpoint is restored into.
      segment: the jitted `segment(runner, thetas float32[R', F]) -> (runner, metrics)`.
      hooks: what happens between segments (see `SegmentHooks`).
      resume: continue from the latest checkpoint in `out_dir`, if there is one.
      tensorboard: also write TensorBoard events (and the hyperparameter table `hparams`).
      progress: optional `rich.progress.Progress` (one task named `label`).
      hparams: the run config as JSON, logged to TensorBoard once (CleanRL's table).
      devices: devices of the `seed` mesh axis (None: all devices JAX sees).

    Returns:
      The runner state after the last segment, `[R, ...]` global arrays.

    Raises:
      ValueError: `devices` is more than JAX sees.
    """
    layout = sharding.SeedLayout(len(hooks.thetas()), devices)
    main = sharding.is_main_process()
    with Checkpointer(os.path.join(out_dir, "checkpoints"), max_to_keep=2) as ckpt, \
            MetricLogger(out_dir if main else None, tensorboard=tensorboard) as logger:
        start = 0
        if resume and ckpt.latest_step() is not None:
            restored, meta = ckpt.restore(layout.abstract_checkpoint(runner))
            runner = layout.pad(restored)
            start = meta["segment"]
            hooks.load_json(meta["hooks"])
            if hasattr(hooks, "after_restore"):
                hooks.after_restore(runner)
        else:
            runner = layout.put(runner)
            if hparams is not None:
                logger.log_hparams(hparams)
        t0 = time.perf_counter()
        segment = segment.lower(runner, layout.put(hooks.thetas())).compile()
        hooks.timings["compile"] = time.perf_counter() - t0  # ahead of time: timed alone
        task = progress.add_task(label, total=hooks.num_segments, completed=start) \
            if progress else None
        for seg in range(start, hooks.num_segments):
            t0 = time.perf_counter()
            runner, metrics = segment(runner, layout.put(hooks.thetas()))
            metrics = layout.to_host(metrics)  # blocks until the segment is done
            seconds = time.perf_counter() - t0
            hooks.timings["train"] = hooks.timings.get("train", 0.0) + seconds
            description = hooks.after_segment(seg, runner, metrics, seconds, logger)
            t0 = time.perf_counter()
            ckpt.save(seg + 1, layout.unpad(runner), to_jsonable({"segment": seg + 1,
                                                                  "hooks": hooks.to_json()}))
            hooks.timings["checkpoint"] = (hooks.timings.get("checkpoint", 0.0)
                                           + time.perf_counter() - t0)
            if progress:
                progress.update(task, advance=1, description=description)
        if hasattr(hooks, "finish"):
            hooks.finish(logger)
    return layout.unpad(runner)


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
    evaluate = evaluate or evaluation.make_evaluate(net, eval_cfg.episodes, eval_cfg.max_len,
                                                    eval_cfg.greedy)
    keys = np.asarray(jax.random.split(key, num_seeds))  # host: valid on every process
    stats = sharding.to_host(jax.vmap(evaluate)(rows(params, 0, num_seeds), keys))
    pooled = evaluation.summarize(stats)
    pooled["per_seed"] = [evaluation.summarize(jax.tree.map(lambda x, s=s: x[s], stats))
                          for s in range(num_seeds)]
    return pooled


@dataclasses.dataclass
class FixedReward:
    """`SegmentHooks` of a fixed-reward run: every row trains on `theta`, no judge.

    Logs every PPO update (`log_updates`) and the segment's env steps per second over all
    rows (`charts/SPS`).
    """

    theta_rows: np.ndarray
    """`float32[R, F]` reward weights of the rows."""
    num_segments: int
    steps_per_segment: int
    batch_size: int
    timings: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"compile": 0.0, "train": 0.0, "checkpoint": 0.0})

    def thetas(self) -> np.ndarray:
        return self.theta_rows

    def after_segment(self, segment, runner, metrics, seconds, logger) -> str:
        log_updates(logger, metrics, segment * self.steps_per_segment, self.batch_size)
        sps = len(self.theta_rows) * self.steps_per_segment / seconds
        logger.log((segment + 1) * self.steps_per_segment, {"charts/SPS": sps})
        last = np.asarray(metrics.episode_score, np.float64)[..., -1]
        return f"train  score {nanmean(last):7.0f}  SPS {sps:9,.0f}"

    def to_json(self) -> dict:
        return {"timings": dict(self.timings)}

    def load_json(self, state: dict) -> None:
        self.timings.update(state["timings"])


def train_fixed(cfg: TrainConfig, out_dir: str, resume: bool = False, progress=None,
                devices: int | None = None) -> dict:
    """Train PPO on one fixed reward theta over vmapped seeds; evaluate; write `results.json`.

    Host-only. The runner with `FixedReward` hooks; the final greedy evaluation sits next to a
    uniformly random legal-move policy's (`cfg.evaluate_random`).

    Args:
      cfg: the run configuration.
      out_dir: output folder (config.json, metrics.jsonl, tb/, checkpoints/, results.json).
      resume: continue from the latest checkpoint in `out_dir` (config must match).
      progress: optional `rich.progress.Progress`.
      devices: devices the seeds are sharded over (`sharding.SeedLayout`; None: all).

    Returns:
      The results dict written to `results.json` by process 0 (config, theta, feature_names,
      env_steps_per_seed, evaluation, random_policy_evaluation, timings, sps).

    Raises:
      ValueError: `out_dir` holds a run and `resume` is False, or its config differs.
    """
    config = prepare_out_dir(out_dir, cfg, resume)
    spec = RewardSpec()
    theta = spec.validate(cfg.theta if cfg.theta is not None else spec.theta0)
    init, segment = ppo.make_train(cfg.ppo, num_seeds=cfg.num_seeds)
    key_init, key_eval, key_random = jax.random.split(jax.random.PRNGKey(cfg.seed), 3)
    hooks = FixedReward(np.tile(theta, (cfg.num_seeds, 1)), cfg.num_segments,
                        cfg.ppo.steps_per_segment, cfg.ppo.batch_size)
    runner = run_segments(out_dir, init(key_init), segment, hooks, resume=resume,
                          tensorboard=cfg.tensorboard, progress=progress, hparams=config,
                          devices=devices)
    t0 = time.perf_counter()
    results = {"config": config, "theta": theta.tolist(), "feature_names": list(spec.names),
               "env_steps_per_seed": cfg.num_segments * cfg.ppo.steps_per_segment,
               "evaluation": evaluate_rows(runner.params, cfg.ppo.network, cfg.eval, key_eval,
                                           cfg.num_seeds)}
    if cfg.evaluate_random:
        stats = evaluation.random_policy_stats(key_random, cfg.eval.episodes * cfg.num_seeds,
                                               cfg.eval.max_len)
        results["random_policy_evaluation"] = evaluation.summarize(stats)
    hooks.timings["eval"] = time.perf_counter() - t0
    train_s = hooks.timings["train"]
    results["timings"] = {f"{k}_s": v for k, v in hooks.timings.items()}
    results["sps"] = cfg.num_seeds * results["env_steps_per_seed"] / train_s if train_s else None
    if sharding.is_main_process():
        with open(os.path.join(out_dir, "results.json"), "w", encoding="utf-8") as f:
            json.dump(to_jsonable(results), f, indent=2)
    return results
