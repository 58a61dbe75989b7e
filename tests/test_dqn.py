"""Tests for `sailor_lab.dqn` and `experiments/transfer_dqn.py`: config validation, the replay
buffer against a plain-Python ring, masked epsilon-greedy on random 2048 boards (legal moves from
`tests/reference`), hand-computed TD targets, learning on the probe environments, theta tracing,
seed vmap, and the transfer CLI end to end.

Compiled functions are built once at module level with tiny networks and few envs.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os

import chex
import jax
import jax.numpy as jnp
import numpy as np
import probe_envs
import pytest
from reference import numpy_2048 as ref
from support import load_script

from sailor_jax.agents.networks import make_network
from sailor_jax.config import NetworkConfig
from sailor_jax.game.features import FEATURE_NAMES, NUM_FEATURES
from sailor_jax.game.reward import THETA0
from sailor_lab import dqn, report
from sailor_lab.dqn import DQNConfig

NET = NetworkConfig(hidden_sizes=(16,), activation="relu")
CFG = DQNConfig(num_envs=8, num_steps=16, buffer_size=256, batch_size=16, learning_starts=32,
                    target_update_interval=4, epsilon_decay_steps=200, network=NET)
NUM_SEEDS = 2
KEY = jax.random.PRNGKey(0)
THETA_BASELINE = jnp.asarray(THETA0, jnp.float32)
THETA_EMPTY = jnp.zeros((NUM_FEATURES,), jnp.float32).at[1].set(1.0)  # empty_cells only

PURE_INIT, PURE_SEGMENT = dqn._make_pure(CFG, dqn.GAME_2048)
INIT = jax.jit(PURE_INIT)
# What `make_train(CFG)` returns for the segment, plus a trace counter: a retrace fails loudly.
SEGMENT = jax.jit(chex.assert_max_traces(PURE_SEGMENT, n=1), donate_argnums=0)
INIT_SEEDS, SEGMENT_SEEDS = dqn.make_train(CFG, num_seeds=NUM_SEEDS)
EPSILON_GREEDY = jax.jit(jax.vmap(dqn.epsilon_greedy, in_axes=(0, None, None, None)))
TD_TARGET = jax.jit(dqn.td_target, static_argnums=(5, 6))


def _copy(tree):
    """Fresh buffers: the compiled segments donate their input state."""
    return jax.tree.map(jnp.copy, tree)


# ---------------------------------------------------------------------------------------------
# DQNConfig


@pytest.mark.parametrize("field", ["num_envs", "num_steps", "buffer_size", "batch_size",
                                   "train_frequency", "gradient_steps", "target_update_interval",
                                   "epsilon_decay_steps"])
def test_config_non_positive_counts(field):
    with pytest.raises(ValueError) as err:
        DQNConfig(**{field: -3})
    assert field in str(err.value) and "-3" in str(err.value)


@pytest.mark.parametrize("field, value", [("gamma", 0.0), ("gamma", 1.5), ("tau", 0.0),
                                          ("tau", 1.25), ("lr", -1e-3), ("max_grad_norm", 0.0),
                                          ("epsilon_start", 1.5), ("epsilon_end", 0.75),
                                          ("learning_starts", -1), ("buffer_size", 100)])
def test_config_out_of_range(field, value):
    # epsilon_end 0.75 > epsilon_start 0.5; buffer_size 100 < batch_size 128.
    kwargs = {"batch_size": 128, "epsilon_start": 0.5, field: value}
    with pytest.raises(ValueError) as err:
        DQNConfig(**kwargs)
    assert field in str(err.value) and str(value) in str(err.value)


def test_config_frozen_hashable_and_segment_size():
    a = DQNConfig(num_envs=8, num_steps=5, network=NET)
    assert a == DQNConfig(num_envs=8, num_steps=5, network=NET) and {a: 1}[a] == 1
    assert a.steps_per_segment == 40
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.num_envs = 4  # type: ignore[misc]


def test_epsilon_schedule_by_hand():
    cfg = DQNConfig(epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=100)
    for steps, expected in [(0, 1.0), (50, 0.55), (100, 0.1), (10_000, 0.1)]:
        assert float(dqn.epsilon_at(cfg, jnp.int32(steps))) == pytest.approx(expected, abs=1e-6)


# ---------------------------------------------------------------------------------------------
# Replay buffer against a plain-Python ring


class RingReference:
    """Obviously-correct circular buffer: a list of slots and a write pointer."""

    def __init__(self, capacity: int):
        self.slots: list = [None] * capacity
        self.position = 0
        self.size = 0

    def add(self, items: list) -> None:
        for item in items:
            self.slots[self.position] = item
            self.position = (self.position + 1) % len(self.slots)
            self.size = min(self.size + 1, len(self.slots))


def test_buffer_add_wraparound_and_sample_match_reference():
    capacity = 7
    item = {"id": jnp.int32(0), "vec": jnp.zeros((3,), jnp.float32)}
    buffer = dqn.init_buffer(item, capacity)
    chex.assert_shape([buffer.data["id"], buffer.data["vec"]], [(capacity,), (capacity, 3)])
    reference, next_id = RingReference(capacity), 1
    add, sample = jax.jit(dqn.buffer_add), jax.jit(dqn.buffer_sample, static_argnums=2)
    for n in (3, 5, 1, 7, 2, 6, 4, 4):  # 32 items: the ring wraps around several times
        ids = np.arange(next_id, next_id + n, dtype=np.int32)
        next_id += n
        buffer = add(buffer, {"id": jnp.asarray(ids),
                              "vec": jnp.asarray(ids[:, None] * np.array([1.0, 10.0, -1.0]),
                                                 jnp.float32)})
        reference.add(ids.tolist())
        assert (int(buffer.position), int(buffer.size)) == (reference.position, reference.size)
        stored = [0 if x is None else x for x in reference.slots]
        np.testing.assert_array_equal(buffer.data["id"], stored)
        np.testing.assert_array_equal(buffer.data["vec"][:, 1], 10.0 * np.asarray(stored))
        drawn = sample(buffer, jax.random.PRNGKey(next_id), 2_000)
        held = {x for x in reference.slots if x is not None}
        assert set(np.asarray(drawn["id"]).tolist()) == held  # only (and all) current items
        np.testing.assert_array_equal(drawn["vec"][:, 2], -drawn["id"].astype(np.float32))
    with pytest.raises(ValueError, match="capacity 7"):
        dqn.buffer_add(buffer, {"id": jnp.zeros((8,), jnp.int32),
                                "vec": jnp.zeros((8, 3), jnp.float32)})


# ---------------------------------------------------------------------------------------------
# Masked epsilon-greedy on random 2048 boards


def _random_boards(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random boards (exponents up to 3..11, 0-60% empties); half of them get one empty edge
    row or column, which leaves a single legal move on boards without merges."""
    top = rng.choice([3, 5, 11], size=(n, 1))
    tiles = rng.integers(1, top + 1, size=(n, 16))
    p_empty = rng.choice([0.0, 0.1, 0.3, 0.6], size=(n, 1))
    boards = np.where(rng.random((n, 16)) < p_empty, 0, tiles).astype(np.int32)
    edges = np.array([[0, 1, 2, 3], [12, 13, 14, 15], [0, 4, 8, 12], [3, 7, 11, 15]])
    cut = np.flatnonzero(rng.random(n) < 0.5)
    boards[cut[:, None], edges[rng.integers(0, 4, cut.size)]] = 0
    return boards


@pytest.fixture(scope="module")
def boards_and_masks():
    """Non-terminal random boards, their reference legal masks, and Q-values that rate every
    illegal move far above every legal one (a leaky mask would pick them)."""
    rng = np.random.default_rng(0)
    boards = _random_boards(rng, 600)
    masks = np.stack([ref.legal_mask(b) for b in boards])
    keep = masks.any(axis=1)
    boards, masks = boards[keep], masks[keep]
    q = np.where(masks, rng.normal(size=masks.shape), 100.0 + rng.random(masks.shape))
    assert set(masks.sum(1)) == {1, 2, 3, 4}  # every mask size occurs
    return boards, masks, q.astype(np.float32)


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_epsilon_greedy_never_picks_an_illegal_action(boards_and_masks, epsilon):
    _, masks, q = boards_and_masks
    keys = jax.random.split(jax.random.PRNGKey(3), 64)
    actions = np.asarray(EPSILON_GREEDY(keys, jnp.asarray(q), jnp.asarray(masks),
                                        jnp.float32(epsilon)))  # [64 draws, boards]
    assert actions.dtype == np.int32
    assert np.take_along_axis(np.broadcast_to(masks, actions.shape + (4,)),
                              actions[..., None], -1).all()
    greedy = np.argmax(np.where(masks, q, -np.inf), axis=1)
    explored = actions != greedy[None]
    if epsilon == 0.0:
        assert not explored.any()
    else:  # every legal action of every board shows up among the random picks
        assert 0.0 < explored.mean() <= epsilon
        if epsilon == 1.0:
            seen = np.zeros_like(masks)
            for a in range(4):
                seen[:, a] = (actions == a).any(axis=0)
            np.testing.assert_array_equal(seen, masks)


def test_epsilon_greedy_random_pick_is_uniform_over_legal():
    # Legal {1, 3}: each about half of 4000 draws; actions 0 and 2 never.
    keys = jax.random.split(jax.random.PRNGKey(9), 4000)
    mask = jnp.array([[False, True, False, True]])
    q = jnp.array([[9.0, 0.0, 9.0, 1.0]], jnp.float32)
    counts = np.bincount(np.asarray(EPSILON_GREEDY(keys, q, mask, jnp.float32(1.0)))[:, 0],
                         minlength=4)
    assert counts[0] == counts[2] == 0 and abs(counts[1] - 2000) < 150


# ---------------------------------------------------------------------------------------------
# TD target by hand


def test_td_target_hand_computed():
    # gamma = 0.5. Rows: (0) all legal; (1) the best next actions 0 and 2 are illegal;
    # (2) terminal: no bootstrap whatever the Q-values; (3) online and target disagree.
    reward = jnp.array([1.0, 2.0, 3.0, 0.0])
    terminated = jnp.array([False, False, True, False])
    online = jnp.array([[0.0, 5.0, 1.0, 2.0],
                        [9.0, 1.0, 8.0, 3.0],
                        [50., 50., 50., 50.],
                        [0.0, 0.0, 7.0, 1.0]])
    target = jnp.array([[4.0, 2.0, 6.0, 1.0],
                        [7.0, 10., 9.0, 3.0],
                        [50., 50., 50., 50.],
                        [1.0, 2.0, 3.0, 9.0]])
    mask = jnp.array([[True, True, True, True],
                      [False, True, False, True],
                      [True, True, True, True],
                      [True, False, True, True]])
    # Double: a* = argmax_legal online = (1, 3, -, 2); y = r + 0.5 * target[a*].
    double = TD_TARGET(reward, terminated, online, target, mask, 0.5, True)
    np.testing.assert_allclose(double, [1.0 + 0.5 * 2.0, 2.0 + 0.5 * 3.0, 3.0, 0.5 * 3.0])
    # Vanilla: max over legal target values = (6, 10, -, 9).
    vanilla = TD_TARGET(reward, terminated, online, target, mask, 0.5, False)
    np.testing.assert_allclose(vanilla, [1.0 + 3.0, 2.0 + 5.0, 3.0, 4.5])
    chex.assert_shape((double, vanilla), (4,))
    chex.assert_type((double, vanilla), jnp.float32)


# ---------------------------------------------------------------------------------------------
# The compiled 2048 segment: theta is traced, seeds vmap, play is legal


@pytest.fixture(scope="module")
def state0():
    return INIT(KEY)


def test_new_theta_does_not_retrace_and_changes_the_reward(state0):
    state_a, metrics_a = SEGMENT(_copy(state0), THETA_BASELINE)
    state_b, metrics_b = SEGMENT(_copy(state0), THETA_EMPTY)  # a retrace would raise here
    state_c, metrics_c = SEGMENT(state_a, THETA_BASELINE)  # continues; still one trace
    assert float(metrics_a.reward_mean) != float(metrics_b.reward_mean)
    assert int(state_c.env_steps) == 2 * CFG.steps_per_segment
    # 2 segments, first update at 32 env steps (the 4th vectorised step), one update per step.
    assert int(metrics_a.updates) + int(metrics_c.updates) == 2 * CFG.num_steps - 3
    assert int(state_c.update_step) == 2 * CFG.num_steps - 3
    assert int(state_c.buffer.size) == CFG.buffer_size  # 256 transitions: full, wrapped to 0
    assert int(state_c.buffer.position) == 0
    for m in (metrics_a, metrics_c):
        assert np.isfinite(float(m.loss)) and np.isfinite(float(m.q_mean))
    assert float(metrics_c.epsilon) == pytest.approx(CFG.epsilon_end)  # 256 > 200 env steps
    assert float(metrics_a.epsilon) == pytest.approx(1.0 - 0.95 * 128 / 200)
    with pytest.raises(ValueError, match=r"theta must have shape \(8,\)"):
        PURE_SEGMENT(state0, jnp.zeros((7,)))


def test_vmapped_seeds_match_single_seed_runs():
    states, metrics = SEGMENT_SEEDS(INIT_SEEDS(KEY), jnp.stack([THETA_BASELINE, THETA_EMPTY]))
    for s, theta in enumerate((THETA_BASELINE, THETA_EMPTY)):
        single_state, single_metrics = SEGMENT(INIT(jax.random.split(KEY, NUM_SEEDS)[s]), theta)
        pick = lambda tree, s=s: jax.tree.map(lambda x: x[s], tree)  # noqa: E731
        chex.assert_trees_all_close(pick(states), single_state, rtol=1e-5, atol=1e-5)
        chex.assert_trees_all_close(pick(metrics), single_metrics, rtol=1e-5, atol=1e-5)


def test_play_is_legal_and_metrics_plausible(state0):
    state, metrics = SEGMENT(_copy(state0), THETA_BASELINE)
    for _ in range(3):  # 512 more moves per env: several games end
        state, m = SEGMENT(state, THETA_BASELINE)
        assert float(m.epsilon) == pytest.approx(CFG.epsilon_end)
        if int(m.episodes) > 0:
            # An illegal move ends the game with -1 points; legal play only adds points.
            assert float(m.episode_score) >= 0 and float(m.episode_max_tile) >= 4
            assert float(m.episode_length) >= 1
    assert np.all(np.asarray(state.episode_score) >= 0)
    chex.assert_tree_all_finite(state.params)
    evaluate = dqn.make_evaluate(NET, 8, max_len=2_000)
    stats = jax.device_get(evaluate(state.params, jax.random.PRNGKey(1)))
    assert stats.score.shape == (8,) and np.all(stats.score >= 0) and np.all(stats.length > 0)


# ---------------------------------------------------------------------------------------------
# Learning sanity on the probe environments (one program, seed k on probe k)

PROBE_GAMMA = 0.9
PROBE_CFG = DQNConfig(num_envs=16, num_steps=150, buffer_size=2_000, batch_size=64,
                          lr=3e-3, gamma=PROBE_GAMMA, learning_starts=64,
                          target_update_interval=10, epsilon_decay_steps=1_000,
                          epsilon_end=0.1, network=NetworkConfig(hidden_sizes=(32,)))
ONE_STEP, TWO_STEP, OBS_ACTION, MASKED = range(4)
_, Q_APPLY = make_network(PROBE_CFG.network, head="q")


@pytest.fixture(scope="module")
def probe_runs():
    """`(states [4, ...], metrics [segments, 4])` after two segments, seed k on probe k."""
    num = len(probe_envs.PROBES)
    init, segment = dqn.make_train(PROBE_CFG, num_seeds=num, env_fns=probe_envs.ALL_PROBES)
    states = init(jax.random.PRNGKey(1))
    kinds = jnp.arange(num, dtype=jnp.int32)[:, None]
    states = states.replace(env_state=probe_envs.with_kind(states.env_state, kinds))
    thetas = jnp.tile(probe_envs.REWARD_THETA, (num, 1))
    metrics = []
    for _ in range(2):
        states, m = segment(states, thetas)
        metrics.append(jax.device_get(m))
    return states, metrics


def _q(states, kind, cells):
    params = jax.tree.map(lambda x: x[kind], states.params)
    return np.asarray(Q_APPLY(params, jnp.stack([probe_envs.encode(c) for c in cells])))


def test_probe_values_learned(probe_runs):
    states, _ = probe_runs
    np.testing.assert_allclose(_q(states, ONE_STEP, [1]), 1.0, atol=0.1)
    two = _q(states, TWO_STEP, [1, 2])  # V(t=0) = gamma, V(t=1) = 1, for every action
    np.testing.assert_allclose(two[0], PROBE_GAMMA, atol=0.1)
    np.testing.assert_allclose(two[1], 1.0, atol=0.1)


def test_probe_observation_dependent_action(probe_runs):
    states, metrics = probe_runs
    q = _q(states, OBS_ACTION, [1, 2])[:, :2]  # cell 0 = 1 + bit; action `bit` pays 1
    np.testing.assert_allclose(q, [[1.0, 0.0], [0.0, 1.0]], atol=0.15)
    assert metrics[-1].reward_mean[OBS_ACTION] > 0.9  # epsilon 0.1 over two legal actions
    assert metrics[0].reward_mean[OBS_ACTION] < metrics[-1].reward_mean[OBS_ACTION]


def test_probe_masked_action_never_taken(probe_runs):
    states, metrics = probe_runs
    # An illegal action would pay 2: every reward being exactly 1 means none was taken, even
    # while exploring (epsilon decays from 1 during the first segment).
    assert PROBE_CFG.epsilon_start == 1.0
    for m in metrics:
        assert m.reward_mean[MASKED] == 1.0 and m.episode_score[MASKED] == 1.0
    assert abs(_q(states, MASKED, [1])[0, probe_envs.MASKED_LEGAL_ACTION] - 1.0) < 0.1


# ---------------------------------------------------------------------------------------------
# experiments/transfer_dqn.py


transfer = load_script("experiments/transfer_dqn.py")
SAILOR_THETA = [0.8, 0.3, 0.2, 0.1, 0.0, 0.0, 0.1, -1.0]


def _write_results(folder, **fields) -> str:
    os.makedirs(folder, exist_ok=True)
    results = {"ranker": {"kind": "outcome"}, "feature_names": list(FEATURE_NAMES),
               "theta_history": [[list(THETA0)], [SAILOR_THETA]], **fields}
    path = os.path.join(folder, "results.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f)
    return path


def test_transfer_cli_end_to_end(tmp_path, capsys):
    _write_results(tmp_path / "sailor")
    out = str(tmp_path / "transfer")
    results = transfer.main([
        "--sailor-results", str(tmp_path / "sailor"), "--out", out, "--num-seeds", "2",
        "--total-timesteps", "200", "--dqn.num-envs", "8", "--dqn.num-steps", "16",
        "--dqn.buffer-size", "256", "--dqn.batch-size", "16", "--dqn.learning-starts", "32",
        "--dqn.network.hidden-sizes", "16", "--eval.episodes", "4", "--eval.max-len", "300"])
    assert results["env_steps_per_seed"] == 256  # 200 rounded up to whole segments of 128
    # One SAILOR seed, two DQN seeds: both train on its final theta.
    np.testing.assert_allclose(results["thetas"]["dqn_sailor_theta"], [SAILOR_THETA] * 2,
                               rtol=1e-6)
    np.testing.assert_allclose(results["thetas"]["dqn_baseline_theta"],
                               [THETA0] * 2, rtol=1e-6)
    with open(os.path.join(out, "transfer.csv"), newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == report.COLUMNS
        rows = list(reader)
    assert [r["variant"] for r in rows] == ["dqn_sailor_theta", "dqn_baseline_theta"]
    table = report.read_csv(os.path.join(out, "transfer.csv"))
    assert [r["judge"] for r in table] == ["outcome", "-"]
    for row in table:
        assert row["seeds"] == 2
        assert row["env_steps_per_seed"] == 256
        for k in report.COLUMNS[4:]:
            assert math.isfinite(row[k]), k
    for v in transfer.VARIANTS:
        assert len(results["evaluation"][v]["per_seed"]) == 2
    assert results["sps"] > 0 and results["timings"]["compile_s"] > 0
    saved = json.load(open(os.path.join(out, "results.json"), encoding="utf-8"))
    assert saved["config"]["dqn"]["num_envs"] == 8 and len(saved["train_curves"]) == 2
    printed = capsys.readouterr().out
    assert "| dqn_sailor_theta | outcome | 2 |" in printed and "dqn_baseline_theta" in printed


def test_load_sailor_thetas_reorders_by_feature_name(tmp_path):
    names = list(reversed(FEATURE_NAMES))
    path = _write_results(tmp_path, feature_names=names,
                          theta_history=[[list(reversed(SAILOR_THETA))] * 3])
    thetas, judge = transfer.load_sailor_thetas(path)
    assert thetas.shape == (3, NUM_FEATURES) and judge == "outcome"
    np.testing.assert_allclose(thetas, [SAILOR_THETA] * 3, rtol=1e-6)
    _write_results(tmp_path / "nojudge", ranker=None)
    assert transfer.load_sailor_thetas(str(tmp_path / "nojudge"))[1] == "-"


def test_load_sailor_thetas_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no SAILOR results.json"):
        transfer.load_sailor_thetas(str(tmp_path / "missing"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        transfer.load_sailor_thetas(str(bad))
    with pytest.raises(ValueError, match="theta_history"):
        transfer.load_sailor_thetas(_write_results(tmp_path / "a", theta_history=[]))
    with pytest.raises(ValueError, match="seed 1 must be a list of 8"):
        transfer.load_sailor_thetas(_write_results(
            tmp_path / "b", theta_history=[[SAILOR_THETA, SAILOR_THETA[:7]]]))
    with pytest.raises(ValueError, match="game_over"):
        transfer.load_sailor_thetas(_write_results(
            tmp_path / "c", theta_history=[[SAILOR_THETA[:7] + [-3.0]]]))
    with pytest.raises(ValueError, match="feature_names"):
        transfer.load_sailor_thetas(_write_results(
            tmp_path / "d", feature_names=[*FEATURE_NAMES[:7], "bogus"]))
    with pytest.raises(ValueError, match="theta_history"):  # the CLI fails the same way
        transfer.main(["--sailor-results", _write_results(tmp_path / "e", theta_history=None),
                       "--out", str(tmp_path / "never")])
    assert not os.path.exists(tmp_path / "never")
