"""Fixed-reward PPO runs: the `SegmentHooks` of a run without a judge, and `train_fixed`.

Host-only. `FixedReward` trains every vmapped row on a fixed theta and logs each PPO update
(or each DQN segment);
`train_fixed` is the whole job of `experiments/train_ppo.py` (folder, segments, checkpoints,
final greedy evaluation next to a random policy's, `results.json`). Both build on `runner`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sailor_jax.agents import evaluation, ppo
from sailor_jax.config import TrainConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.logging import to_jsonable
from sailor_jax.run import run_dir, run_guard
from sailor_jax.run.runner import evaluate_rows, log_updates, nanmean, run_segments
from sailor_jax.scale import memory, sharding


@dataclasses.dataclass
class FixedReward:
    """`SegmentHooks` of a fixed-reward run: every row trains on `theta`, no judge.

    Logs every PPO update (`log_updates`), or what `segment_record` makes of another
    learner's segment metrics, and the segment's env steps per second over all rows
    (`charts/SPS`).
    """

    theta_rows: np.ndarray
    """`float32[R, F]` reward weights of the rows."""
    num_segments: int
    steps_per_segment: int
    batch_size: int
    timings: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"compile": 0.0, "train": 0.0, "checkpoint": 0.0})
    segment_record: Callable[[Any], tuple[dict[str, float], np.ndarray]] | None = None
    """For a learner other than PPO: its segment metrics -> (scalars to log, each row's last
    mean game score), e.g. the harness's `dqn.segment_record`. None = PPO's per-update
    metrics (`[R, U]`)."""

    def thetas(self) -> np.ndarray:
        return self.theta_rows

    def after_segment(self, segment, runner, metrics, seconds, logger) -> str:
        sps = len(self.theta_rows) * self.steps_per_segment / seconds
        record = {"charts/SPS": sps}
        if self.segment_record is not None:
            scalars, last = self.segment_record(metrics)
            record.update(scalars)
        else:  # PPO: `[R, U]` per update
            log_updates(logger, metrics, segment * self.steps_per_segment, self.batch_size)
            last = np.asarray(metrics.episode_score, np.float64)[..., -1]
        logger.log((segment + 1) * self.steps_per_segment, record)
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
      resume: continue from the latest checkpoint in `out_dir` (config must match); a
        finished run is read back from its `results.json` at once.
      progress: optional `rich.progress.Progress`.
      devices: devices the seeds are sharded over (`sharding.SeedLayout`; None: all).

    Returns:
      The results dict written to `results.json` by process 0 (config, theta, feature_names,
      env_steps_per_seed, evaluation, random_policy_evaluation, timings, sps).

    Raises:
      UserError: `out_dir` holds a run and `resume` is False, or its config differs, or
        another process runs in it (`run_guard.claim_out_dir`), or the seeds will not fit
        in memory (`memory.check_fits`), or `out_dir` cannot be created or written
        (`run_dir.check_writable`, first); while running, the disk is
        full or the folder became unwritable.
      Interrupted: Ctrl-C or SIGTERM while running (continue with `resume=True`).
    """
    if resume and run_dir.finished(out_dir):  # nothing to do: read it back at once
        run_dir.check_out_dir(out_dir, cfg, resume)
        with open(os.path.join(out_dir, "results.json"), encoding="utf-8") as f:
            return json.load(f)
    run_dir.check_writable(out_dir)  # before any work: --out can be created and written
    memory.check_fits(ppo.make_train(cfg.run_ppo)[0], jax.random.PRNGKey(cfg.seed),
                      cfg.num_seeds, ppo.make_train(cfg.run_ppo, num_seeds=cfg.num_seeds)[1],
                      np.zeros((cfg.num_seeds, len(RewardSpec().names)), np.float32),
                      len(sharding.resolve_devices(devices)),
                      "lower --train.ppo.num-envs (or --train.ppo.num-steps) or "
                      "--train.num-seeds")
    with run_guard.claim_out_dir(out_dir, cfg, resume) as config:
        return _train_claimed(cfg, out_dir, config, resume, progress, devices)


def _train_claimed(cfg: TrainConfig, out_dir: str, config: dict, resume: bool, progress,
                   devices: int | None) -> dict:
    """`train_fixed` in the folder it holds (`config.json` written)."""
    spec = RewardSpec()
    theta = spec.validate(cfg.theta if cfg.theta is not None else spec.start)
    init, segment = ppo.make_train(cfg.run_ppo, num_seeds=cfg.num_seeds)
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
