"""Tests for `sailor_jax.run.runner`: out-dir guard, the segment loop, resume, logs, train_fixed."""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import TINY

from sailor_jax.agents import ppo
from sailor_jax.config import TrainConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.logging import MetricLogger
from sailor_jax.run import fixed_reward, runner
from sailor_jax.types import SegmentMetrics


@dataclasses.dataclass(frozen=True)
class _Cfg:
    a: int = 1
    b: tuple[float, ...] = (0.5, float("nan"))


@jax.jit
def _toy_segment(state, thetas):
    """A stand-in for a compiled segment: state {"x": [R]} accumulates a function of theta
    (a pytree like the real runner states: orbax's StandardSave refuses a bare jax.Array)."""
    new = state["x"] * 1.5 + thetas.sum(-1)
    return {"x": new}, {"value": new}


class _Hooks:
    """Theta depends on everything seen so far, like SAILOR's; can die after a segment."""

    def __init__(self, num_segments: int, die_after: int | None = None):
        self.num_segments, self.die_after = num_segments, die_after
        self.timings: dict[str, float] = {}
        self.history: list[list[float]] = []
        self.segments_seen: list[int] = []

    def thetas(self):
        last = self.history[-1] if self.history else [0.0, 0.0]
        return np.asarray([[v / 10.0, 1.0] for v in last], np.float32)

    def after_segment(self, segment, runner_state, metrics, seconds, logger):
        assert isinstance(metrics["value"], np.ndarray)  # device_get before the hooks
        assert seconds > 0
        self.segments_seen.append(segment)
        self.history.append(metrics["value"].tolist())
        logger.log(segment, {"value": float(metrics["value"][0])})
        if self.die_after is not None and segment + 1 == self.die_after:
            raise KeyboardInterrupt("simulated kill")
        return f"segment {segment}"

    def to_json(self):
        return {"history": self.history, "timings": self.timings}

    def load_json(self, state):
        self.history, self.timings = state["history"], state["timings"]


def _run(out, hooks, resume=False):
    return runner.run_segments(out, {"x": jnp.zeros(2, jnp.float32)}, _toy_segment, hooks,
                               resume=resume, tensorboard=False)["x"]


def test_run_segments_resume_matches_uninterrupted(tmp_path):
    full_hooks = _Hooks(4)
    full = _run(str(tmp_path / "full"), full_hooks)
    assert full_hooks.segments_seen == [0, 1, 2, 3]
    assert set(full_hooks.timings) == {"compile", "train", "checkpoint"}
    # The same recurrence, computed by hand.
    state, thetas_sum = np.zeros(2, np.float32), np.ones(2, np.float32)
    for _ in range(4):
        state = state * np.float32(1.5) + thetas_sum
        thetas_sum = (state / np.float32(10.0) + np.float32(1.0)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(full), state, rtol=1e-6)

    out = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt):
        _run(out, _Hooks(4, die_after=3))
    steps = sorted(int(d) for d in os.listdir(os.path.join(out, "checkpoints")) if d.isdigit())
    assert steps == [1, 2]  # segment 3 died before its checkpoint; max_to_keep=2
    resumed_hooks = _Hooks(4)
    resumed = _run(out, resumed_hooks, resume=True)
    assert resumed_hooks.segments_seen == [2, 3]  # only the segments left
    np.testing.assert_array_equal(np.asarray(resumed), np.asarray(full))
    assert resumed_hooks.history == full_hooks.history
    records = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    logged = [r["step"] for r in records if "time/checkpoint" not in r]
    assert logged == [0, 1, 2, 3]  # the killed segment's record was dropped, then redone
    # one checkpoint time per segment, at the segment's step (benchmarks/phases.py reads it)
    assert [(r["segment"], r["step"]) for r in records if "time/checkpoint" in r] == [
        (0, 0), (1, 1), (2, 2), (3, 3)]


def test_resume_falls_back_past_a_damaged_checkpoint_and_says_so(tmp_path, caplog):
    from support import damage

    full_hooks = _Hooks(3)
    full = _run(str(tmp_path / "full"), full_hooks)
    out = str(tmp_path / "damaged")
    _run(out, _Hooks(3))
    damage(os.path.join(out, "checkpoints", "3"), "truncated_meta")
    resumed_hooks = _Hooks(3)
    with caplog.at_level("WARNING", logger="sailor_jax.run.runner"):
        resumed = _run(out, resumed_hooks, resume=True)
    (message,) = [r.getMessage() for r in caplog.records if r.name == "sailor_jax.run.runner"]
    assert "step 3: JSONDecodeError" in message and "from checkpoint step 2" in message
    assert resumed_hooks.segments_seen == [2]
    np.testing.assert_array_equal(np.asarray(resumed), np.asarray(full))
    records = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    assert [(r["step"], r["segment"]) for r in records if "time/checkpoint" not in r] == [
        (0, 0), (1, 1), (2, 2)]
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["2", "3", "3.unusable"]


def _metrics(score, lr):
    u = np.shape(score)[-1]
    zeros = np.zeros(np.shape(score), np.float32)
    return SegmentMetrics(
        episode_score=np.asarray(score, np.float32), episode_length=zeros + 3,
        episode_max_tile=zeros + 64, episodes=np.ones(np.shape(score), np.int32),
        max_tile=np.full(np.shape(score), 128, np.int32) + np.arange(u, dtype=np.int32),
        reward_mean=zeros, policy_loss=zeros, value_loss=zeros, entropy=zeros,
        approx_kl=zeros, clip_fraction=zeros, explained_variance=zeros,
        lr=np.asarray(lr, np.float32))


def test_log_updates_averages_seeds_nan_aware(tmp_path):
    metrics = _metrics([[10.0, np.nan, np.nan], [30.0, 5.0, np.nan]],
                       [[1e-3, 2e-3, 3e-3]] * 2)
    with MetricLogger(str(tmp_path), tensorboard=False) as logger:
        runner.log_updates(logger, metrics, env_steps_start=1000, batch_size=64)
    records = [json.loads(line) for line in open(tmp_path / "metrics.jsonl")]
    assert [r["step"] for r in records] == [1064, 1128, 1192]
    assert [r["charts/episodic_return"] for r in records] == [20.0, 5.0, None]  # NaN -> null
    assert [r["charts/max_tile"] for r in records] == [128, 129, 130]
    assert [r["charts/episodes"] for r in records] == [2, 2, 2]
    assert records[1]["charts/learning_rate"] == pytest.approx(2e-3)


TINY_PPO, TINY_EVAL = TINY.ppo, TINY.eval
"""`support.TINY`'s PPO and evaluation: 2 seeds of it compile the segment the 2-seed loop
tests (`test_fault_injection`) run, so the suite compiles it once."""


def test_train_fixed_equals_the_bare_compiled_program(tmp_path):
    theta = (1.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)
    cfg = TrainConfig(total_timesteps=256, num_seeds=2, seed=3, theta=theta, ppo=TINY_PPO,
                      eval=TINY_EVAL, evaluate_random=False, tensorboard=False)
    results = fixed_reward.train_fixed(cfg, str(tmp_path / "run"))
    assert cfg.num_segments == 2 and results["env_steps_per_seed"] == 256
    assert set(results["timings"]) == {"compile_s", "train_s", "checkpoint_s", "eval_s"}
    # Independently: the compiled program and the evaluation, without the runner.
    init, segment = ppo.make_train(TINY_PPO, num_seeds=2)
    key_init, key_eval, _ = jax.random.split(jax.random.PRNGKey(3), 3)
    state = init(key_init)
    thetas = jnp.tile(jnp.asarray(RewardSpec().validate(theta)), (2, 1))
    for _ in range(2):
        state, _ = segment(state, thetas)
    expected = runner.evaluate_rows(state.params, TINY_PPO.network, TINY_EVAL, key_eval, 2)
    assert results["evaluation"]["score_mean"] == expected["score_mean"]
    assert [s["score_mean"] for s in results["evaluation"]["per_seed"]] == \
        [s["score_mean"] for s in expected["per_seed"]]
    assert expected["episodes"] == 2 * TINY_EVAL.episodes and len(expected["per_seed"]) == 2


def test_rows_slices_the_leading_axis():
    tree = {"a": np.arange(6).reshape(6, 1), "b": np.arange(6)}
    got = runner.rows(tree, 2, 3)
    np.testing.assert_array_equal(got["b"], [2, 3, 4])
    assert got["a"].shape == (3, 1)
