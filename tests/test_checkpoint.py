"""Tests for `sailor_jax.run.checkpoint`: orbax round trips of real runner states.

Every restore goes against `jax.eval_shape` of a fresh init (docs/contributing.md,
"Checkpoints"); the round trip must give back every leaf bit-for-bit and the same pytree node
types (`RunnerState`, pgx `State`, optax states), and a restored state must train on exactly
like the original.
"""

from __future__ import annotations

import json
import os
import signal

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest
from support import damage

from sailor_jax import errors
from sailor_jax.agents import ppo
from sailor_jax.config import NetworkConfig, PPOConfig
from sailor_jax.errors import UserError
from sailor_jax.game import env
from sailor_jax.game.features import NUM_FEATURES
from sailor_jax.game.reward import THETA0
from sailor_jax.run.checkpoint import DIGEST_KEY, Checkpointer, state_digest
from sailor_jax.types import RunnerState, RunningStats

# The same config as test_ppo.CFG: with the session's persistent compilation cache
# (tests/conftest.py) init and the segment compile once for both files.
CFG = PPOConfig(num_envs=32, num_steps=16, update_epochs=2, num_minibatches=4,
                    updates_per_segment=3, lr=3e-4, lr_schedule="constant",
                    network=NetworkConfig(hidden_sizes=(32,)))
NUM_SEEDS = 2
KEY = jax.random.PRNGKey(0)
THETA = jnp.asarray(THETA0, jnp.float32)
META = {"theta_history": [[1.0, 0.0, 0.1], [0.5, 0.25, -1.0]], "segment": 3,
        "optimizer": {"name": "bo", "scores": [0.25, 0.5]}, "done": False}

INIT, SEGMENT = ppo.make_train(CFG)
# Only traced (for the abstract target); the concrete S-seed state stacks single-seed inits on
# `jax.random.split(KEY, S)`, which is what `init_seeds` does (test_ppo checks the equality)
# without compiling init a second time.
INIT_SEEDS, _ = ppo.make_train(CFG, num_seeds=NUM_SEEDS)


def _copy(tree):
    """Fresh buffers: the compiled segment donates its input runner state."""
    return jax.tree.map(jnp.copy, tree)


@pytest.fixture(scope="module")
def trained() -> RunnerState:
    """A runner state one segment in (non-trivial optimiser moments, counters and key)."""
    state, _ = SEGMENT(INIT(KEY), THETA)
    return state


@pytest.fixture(scope="module")
def trained_seeds() -> RunnerState:
    """An S-seed runner state: fresh games for seed 0, one segment in for seed 1."""
    key_0, key_1 = jax.random.split(KEY, NUM_SEEDS)
    seed_1, _ = SEGMENT(INIT(key_1), THETA)
    return jax.tree.map(lambda *xs: jnp.stack(xs), INIT(key_0), seed_1)


def _abstract(init, theta_shape):
    return {"runner": jax.eval_shape(init, KEY),
            "theta": jax.ShapeDtypeStruct(theta_shape, jnp.float32)}


def _internal_nodes(tree) -> list:
    """Every internal pytree node (dataclasses, dicts, tuples, optax states), depth first."""
    nodes = []

    def walk(x):
        children = jax.tree_util.tree_flatten(x, is_leaf=lambda y: y is not x)[0]
        if len(children) == 1 and children[0] is x:
            return  # a leaf
        nodes.append(x)
        for child in children:
            walk(child)

    walk(tree)
    return nodes


def assert_round_trip(original, restored):
    assert jax.tree.structure(restored) == jax.tree.structure(original)
    assert [type(n) for n in _internal_nodes(restored)] == \
        [type(n) for n in _internal_nodes(original)]
    for (path, want), got in zip(jax.tree_util.tree_leaves_with_path(original),
                                 jax.tree.leaves(restored), strict=True):
        name = jax.tree_util.keystr(path)
        assert np.asarray(got).dtype == np.asarray(want).dtype, name
        assert np.array_equal(np.asarray(got), np.asarray(want)), name


def _optax_states(opt_state) -> list[type]:
    return [type(n) for n in _internal_nodes(opt_state)]


@pytest.mark.parametrize("seeds", [False, True], ids=["single", "seeds"])
def test_round_trip_runner_state_theta_and_meta(tmp_path, trained, trained_seeds, seeds):
    runner = trained_seeds if seeds else trained
    theta = jnp.stack([THETA, -THETA]) if seeds else THETA
    state = {"runner": runner, "theta": theta}
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(7, state, META)
    with Checkpointer(tmp_path) as ckpt:  # a fresh manager reads what is on disk
        abstract = _abstract(INIT_SEEDS if seeds else INIT, theta.shape)
        restored, meta = ckpt.restore(abstract)
    assert meta == META
    assert_round_trip(state, restored)
    runner_back = restored["runner"]
    assert isinstance(runner_back, RunnerState)
    assert isinstance(runner_back.env_state, env.State)
    assert isinstance(runner_back.return_stats, RunningStats)
    types = _optax_states(runner_back.opt_state)
    assert optax.ScaleByAdamState in types
    assert types == _optax_states(runner.opt_state)
    lead = (NUM_SEEDS,) if seeds else ()
    chex.assert_shape(runner_back.env_state._board, lead + (CFG.num_envs, 16))
    chex.assert_shape(restored["theta"], lead + (NUM_FEATURES,))
    assert runner_back.key.dtype == jnp.uint32


def test_restored_state_trains_on_identically(tmp_path, trained):
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, {"runner": trained, "theta": THETA}, META)
        restored, _ = ckpt.restore(_abstract(INIT, THETA.shape))
    a_state, a_metrics = SEGMENT(_copy(trained), THETA)
    b_state, b_metrics = SEGMENT(restored["runner"], restored["theta"])
    chex.assert_trees_all_equal(a_metrics, b_metrics)
    chex.assert_trees_all_equal(a_state, b_state)
    assert int(b_state.update_step) == 2 * CFG.updates_per_segment


def test_saving_an_existing_step_raises(tmp_path, trained):
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(4, {"theta": THETA}, {"n": 1})
        with pytest.raises(ValueError, match="4"):
            ckpt.save(4, {"theta": -THETA}, {"n": 2})
        restored, meta = ckpt.restore({"theta": jax.ShapeDtypeStruct((NUM_FEATURES,),
                                                                     jnp.float32)})
    np.testing.assert_array_equal(restored["theta"], THETA)  # the first save is untouched
    assert meta == {"n": 1}


def test_restore_from_empty_directory_raises(tmp_path):
    with Checkpointer(tmp_path / "empty") as ckpt:
        assert ckpt.latest_step() is None
        assert ckpt.all_steps() == []
        with pytest.raises(FileNotFoundError):
            ckpt.restore({"theta": jax.ShapeDtypeStruct((NUM_FEATURES,), jnp.float32)})


def test_steps_latest_and_explicit_restore(tmp_path):
    abstract = {"theta": jax.ShapeDtypeStruct((NUM_FEATURES,), jnp.float32)}
    with Checkpointer(tmp_path, max_to_keep=None) as ckpt:
        for step in (2, 5, 10):
            ckpt.save(step, {"theta": THETA * step}, {"step": step})
        assert ckpt.all_steps() == [2, 5, 10]
        assert ckpt.latest_step() == 10
        latest, meta = ckpt.restore(abstract)
        older, older_meta = ckpt.restore(abstract, step=5)
    np.testing.assert_array_equal(latest["theta"], THETA * 10)
    np.testing.assert_array_equal(older["theta"], THETA * 5)
    assert (meta, older_meta) == ({"step": 10}, {"step": 5})


def test_max_to_keep(tmp_path):
    with Checkpointer(tmp_path, max_to_keep=2) as ckpt:
        for step in range(1, 5):
            ckpt.save(step, {"theta": THETA * step}, {"step": step})
        assert ckpt.all_steps() == [3, 4]
        assert ckpt.latest_step() == 4
    with Checkpointer(tmp_path, max_to_keep=2) as ckpt:  # survives reopening
        assert ckpt.all_steps() == [3, 4]


def test_saving_a_step_older_than_the_latest_is_not_silently_dropped(tmp_path):
    # E.g. resuming from an older checkpoint (rolled back) and saving the next segment.
    # Orbax's CheckpointManager skips (returns False for) any step <= its latest step; the
    # Checkpointer must either write it or raise, never return as if it had saved.
    abstract = {"theta": jax.ShapeDtypeStruct((NUM_FEATURES,), jnp.float32)}
    with Checkpointer(tmp_path, max_to_keep=None) as ckpt:
        ckpt.save(10, {"theta": THETA}, {"step": 10})
        try:
            ckpt.save(5, {"theta": -THETA}, {"step": 5})
        except ValueError:
            return  # refusing loudly is acceptable
        assert ckpt.all_steps() == [5, 10], "save(5) returned but wrote nothing"
        restored, meta = ckpt.restore(abstract, step=5)
    np.testing.assert_array_equal(restored["theta"], -THETA)
    assert meta == {"step": 5}


# A damaged newest checkpoint must not end the run.
X = jnp.arange(1000, dtype=jnp.float32)
X_ABSTRACT = {"x": jax.ShapeDtypeStruct(X.shape, X.dtype)}


def _save_steps(directory, steps, max_to_keep=3):
    with Checkpointer(directory, max_to_keep=max_to_keep) as ckpt:
        for step in steps:
            ckpt.save(step, {"x": X * step}, {"step": step})


def test_max_to_keep_below_two_is_refused(tmp_path):
    with pytest.raises(ValueError, match="max_to_keep must be >= 2"):
        Checkpointer(tmp_path, max_to_keep=1)


@pytest.mark.parametrize("how", ["truncated_meta", "flipped_state_bytes"])
def test_restore_newest_skips_a_damaged_step_and_moves_it_aside(tmp_path, how):
    _save_steps(tmp_path, (1, 2, 3))
    damage(tmp_path / "3", how)
    with Checkpointer(tmp_path, max_to_keep=3) as ckpt:
        restored = ckpt.restore_newest(X_ABSTRACT)
        assert (restored.step, restored.meta) == (2, {"step": 2})
        np.testing.assert_array_equal(restored.state["x"], X * 2)
        assert [step for step, _ in restored.skipped] == [3]
        assert "\n" not in restored.skipped[0][1] and len(restored.skipped[0][1]) <= 160
        assert ckpt.all_steps() == [1, 2]
        ckpt.save(3, {"x": -X}, {"step": 3})  # the damaged step's number is free again
        assert ckpt.restore_newest(X_ABSTRACT).step == 3
    assert sorted(os.listdir(tmp_path)) == ["1", "2", "3", "3.unusable"]


def test_restore_checks_the_state_digest(tmp_path):
    _save_steps(tmp_path, (1,))
    path = tmp_path / "1" / "meta" / "metadata"
    meta = json.loads(path.read_text())
    assert meta[DIGEST_KEY] == state_digest({"x": X})
    path.write_text(json.dumps({**meta, DIGEST_KEY: state_digest({"x": X + 1})}))
    with Checkpointer(tmp_path) as ckpt, pytest.raises(ValueError, match="SHA-256 differs"):
        ckpt.restore(X_ABSTRACT)
    del meta[DIGEST_KEY]  # a checkpoint written before the digest existed: not checked
    path.write_text(json.dumps(meta))
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.restore(X_ABSTRACT)[1] == {"step": 1}


def test_no_step_restores_is_one_user_error_line_naming_the_folder(tmp_path):
    _save_steps(tmp_path, (1, 2))
    damage(tmp_path / "2", "truncated_meta")
    damage(tmp_path / "1", "flipped_state_bytes")
    with Checkpointer(tmp_path) as ckpt, pytest.raises(UserError) as error:
        ckpt.restore_newest(X_ABSTRACT)
    message = str(error.value)
    assert "\n" not in message and str(tmp_path) in message
    assert "step 2: JSONDecodeError" in message and "step 1: " in message
    assert sorted(os.listdir(tmp_path)) == ["1", "2"]  # nothing moved


def test_a_save_killed_midway_leaves_no_step(tmp_path, monkeypatch):
    _save_steps(tmp_path, (1,))

    async def killed(*args, **kwargs):
        raise KeyboardInterrupt("simulated kill")

    with monkeypatch.context() as mp:
        mp.setattr(ocp.handlers.JsonCheckpointHandler, "async_save", killed)
        with Checkpointer(tmp_path) as ckpt, pytest.raises(KeyboardInterrupt):
            ckpt.save(2, {"x": X * 2}, {"step": 2})
    assert sorted(os.listdir(tmp_path)) == ["1", "2.orbax-checkpoint-tmp"]
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.all_steps() == [1] and ckpt.restore_newest(X_ABSTRACT).step == 1
        ckpt.save(2, {"x": X * 2}, {"step": 2})
        assert ckpt.all_steps() == [1, 2]
    assert sorted(os.listdir(tmp_path)) == ["1", "2"]


def test_sigterm_during_a_save_waits_until_the_step_is_written(tmp_path, monkeypatch):
    """SIGTERM while orbax writes a step is held (`errors.stops_held`) until the step
    is on disk, then stops the run as always (`Terminated`); the step restores."""
    with Checkpointer(tmp_path) as ckpt:
        real_wait = ckpt._manager.wait_until_finished

        sent = []

        def signal_midway():  # the signal arrives while the save is in flight (once: orbax
            if not sent:      # waits in save too, and a second SIGTERM would end pytest)
                sent.append(os.kill(os.getpid(), signal.SIGTERM))
            real_wait()

        monkeypatch.setattr(ckpt._manager, "wait_until_finished", signal_midway)
        previous = signal.signal(signal.SIGTERM, errors._terminate)
        try:
            with pytest.raises(errors.Terminated):
                ckpt.save(1, {"x": X}, {"step": 1})
        finally:
            signal.signal(signal.SIGTERM, previous)
        monkeypatch.undo()
        assert ckpt.all_steps() == [1]
        state, meta = ckpt.restore(X_ABSTRACT)
    np.testing.assert_array_equal(state["x"], X)
    assert meta == {"step": 1}
