"""Tests for `agents.evaluation`: the compiled evaluator, `summarize`, the random baseline.

The evaluator is replayed move by move with `env.play` in a Python loop (same keys), and the
final boards are checked against 2048's bookkeeping: every move spawns one tile (2 or 4), and a
tile 2**k scores between (k - 2) * 2**k (built from 4s) and (k - 1) * 2**k (built from 2s).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sailor_jax.agents import evaluation
from sailor_jax.agents.evaluation import EpisodeStats
from sailor_jax.agents.networks import make_network
from sailor_jax.config import NetworkConfig
from sailor_jax.game import env
from sailor_jax.game.env import EnvFns, StepResult

NET = NetworkConfig(hidden_sizes=(32,))
NUM_EPISODES = 32
MAX_LEN = 5_000  # far more than any game of a random-ish policy lasts (~100-300 moves)
SHORT_LEN = 5  # no 2048 game can end in 5 moves (the board holds at most 7 tiles)
NUM_SEEDS = 2
RANDOM_EPISODES = 200

INIT_PARAMS, APPLY = make_network(NET)
# Each evaluator compiles in seconds on CPU, so the greedy one doubles as the truncation test.
EVAL_SAMPLED = evaluation.make_evaluate(NET, NUM_EPISODES, MAX_LEN, greedy=False)
EVAL_GREEDY_SHORT = evaluation.make_evaluate(NET, NUM_EPISODES, SHORT_LEN, greedy=True)
EVAL_SEEDS = jax.jit(jax.vmap(EVAL_SAMPLED))
PARAMS = INIT_PARAMS(jax.random.PRNGKey(0))
KEY = jax.random.PRNGKey(42)


@jax.jit
def _replay_start(key):
    key_reset, key_play = jax.random.split(key)
    return jax.vmap(env.reset)(jax.random.split(key_reset, NUM_EPISODES)), key_play


@jax.jit
def _replay_move(params, state, key):
    """One move of the sampled evaluator, written out again: the same key splits and `env.play`."""
    key, key_action, key_step = jax.random.split(key, 3)
    logits, _ = APPLY(params, env.board_exponents(state), env.legal_action_mask(state))
    action = jax.random.categorical(key_action, logits)
    running = ~state.terminated
    state, res = jax.vmap(env.play)(state, action, jax.random.split(key_step, NUM_EPISODES))
    return state, key, res.score_gain, running


def replay_sampled(params, key, max_len: int):
    """Host loop replay of `make_evaluate(..., greedy=False)`; returns NumPy results."""
    state, key_play = _replay_start(key)
    score = np.zeros(NUM_EPISODES, np.float32)
    length = np.zeros(NUM_EPISODES, np.int32)
    gains = []
    for _ in range(max_len):
        if bool(jnp.all(state.terminated)):
            break
        state, key_play, gain, running = _replay_move(params, state, key_play)
        gain = np.asarray(gain)
        gains.append(gain)
        score = score + gain
        length = length + np.asarray(running, np.int32)
    return dict(score=score, length=length, board=np.asarray(env.board_exponents(state)),
                terminated=np.asarray(state.terminated), gains=np.stack(gains))


@pytest.fixture(scope="module")
def sampled():
    return jax.device_get(EVAL_SAMPLED(PARAMS, KEY))


@pytest.fixture(scope="module")
def replay():
    return replay_sampled(PARAMS, KEY, MAX_LEN)


@pytest.fixture(scope="module")
def greedy_short():
    return jax.device_get(EVAL_GREEDY_SHORT(PARAMS, KEY))


def _assert_stats_layout(stats: EpisodeStats, shape: tuple[int, ...]):
    assert isinstance(stats, EpisodeStats)
    chex.assert_shape([stats.score, stats.length, stats.max_tile, stats.truncated], shape)
    assert stats.score.dtype == np.float32
    assert stats.length.dtype == np.int32
    assert stats.max_tile.dtype == np.int32
    assert stats.truncated.dtype == np.bool_


def test_stats_shapes_and_dtypes(sampled, greedy_short):
    _assert_stats_layout(sampled, (NUM_EPISODES,))
    _assert_stats_layout(greedy_short, (NUM_EPISODES,))


def test_every_game_ends_and_results_are_plausible(sampled):
    stats = sampled
    assert not stats.truncated.any()
    assert np.all(stats.score >= 0.0)
    assert np.all(stats.length > 0) and np.all(stats.length < MAX_LEN)
    assert np.all(stats.max_tile >= 4)
    assert np.all((stats.max_tile & (stats.max_tile - 1)) == 0)  # powers of two


def test_tiny_max_len_truncates_every_game(greedy_short):
    stats = greedy_short
    assert stats.truncated.all()
    np.testing.assert_array_equal(stats.length, SHORT_LEN)
    assert evaluation.summarize(stats)["truncated"] == NUM_EPISODES
    assert np.all(stats.score >= 0.0)
    # 2 initial tiles + 5 spawns (each 2 or 4) sum to at most 28: no tile above 16.
    assert np.all(stats.max_tile <= 16) and np.all(stats.max_tile >= 2)


def test_sampled_run_matches_move_by_move_replay(sampled, replay):
    assert replay["terminated"].all()
    assert np.all(replay["gains"] >= 0.0)  # never an illegal move (pgx would score -1)
    np.testing.assert_array_equal(sampled.score, replay["score"])
    np.testing.assert_array_equal(sampled.length, replay["length"])
    np.testing.assert_array_equal(sampled.max_tile, 2 ** replay["board"].max(axis=-1))


def test_scores_consistent_with_final_boards(sampled, replay):
    board = replay["board"].astype(np.int64)
    tiles = np.where(board > 0, 2**board, 0)
    # Each move spawns one tile (2 or 4) on top of the 2 initial tiles; merges keep the sum.
    spawns = sampled.length.astype(np.int64) + 2
    assert np.all(tiles.sum(-1) >= 2 * spawns) and np.all(tiles.sum(-1) <= 4 * spawns)
    # Merge points: between (k-2)*2**k (tile built from 4s) and (k-1)*2**k (from 2s).
    lower = np.where(board >= 2, (board - 2) * tiles, 0).sum(-1)
    upper = np.where(board >= 1, (board - 1) * tiles, 0).sum(-1)
    assert np.all(sampled.score >= lower) and np.all(sampled.score <= upper)


def test_vmap_over_seed_axis_of_params():
    keys = jax.random.split(jax.random.PRNGKey(3), NUM_SEEDS)
    params = jax.tree.map(lambda *xs: jnp.stack(xs),
                          *[INIT_PARAMS(k) for k in jax.random.split(KEY, NUM_SEEDS)])
    stats = jax.device_get(EVAL_SEEDS(params, keys))
    _assert_stats_layout(stats, (NUM_SEEDS, NUM_EPISODES))
    for s in range(NUM_SEEDS):
        params_s = jax.tree.map(lambda x, s=s: x[s], params)
        single = jax.device_get(EVAL_SAMPLED(params_s, keys[s]))
        chex.assert_trees_all_equal(jax.tree.map(lambda x, s=s: x[s], stats), single)
    summary = evaluation.summarize(stats)
    assert summary["episodes"] == NUM_SEEDS * NUM_EPISODES


def test_policy_evaluate_with_a_generic_scorer_is_the_same_protocol(sampled):
    # make_evaluate is make_policy_evaluate on the actor's logits: the same keys, same games.
    evaluate = evaluation.make_policy_evaluate(lambda p, b, m: APPLY(p, b, m)[0], NUM_EPISODES,
                                               MAX_LEN, greedy=False)
    chex.assert_trees_all_equal(jax.device_get(evaluate(PARAMS, KEY)), sampled)
    with pytest.raises(ValueError, match="-2"):
        evaluation.make_policy_evaluate(lambda p, b, m: m, -2)


def test_make_evaluate_rejects_non_positive_sizes():
    with pytest.raises(ValueError, match="0"):
        evaluation.make_evaluate(NET, 0)
    with pytest.raises(ValueError, match="-1"):
        evaluation.make_evaluate(NET, 4, max_len=-1)


# ---------------------------------------------------------------------------------------------
# summarize


HAND_STATS = EpisodeStats(
    score=np.array([100.0, 300.0, 500.0, 1100.0], np.float32),
    length=np.array([10, 20, 30, 40], np.int32),
    max_tile=np.array([128, 256, 2048, 4096], np.int32),
    truncated=np.array([False, False, True, False]),
)


def _check_hand_summary(summary: dict):
    assert summary["episodes"] == 4
    assert summary["score_mean"] == pytest.approx(500.0)
    # Population std: deviations -400, -200, 0, 600 -> sqrt(560000 / 4).
    assert summary["score_std"] == pytest.approx(math.sqrt(140_000.0), rel=1e-6)
    assert summary["score_max"] == pytest.approx(1100.0)
    assert summary["length_mean"] == pytest.approx(25.0)
    assert summary["max_tile_mean"] == pytest.approx((128 + 256 + 2048 + 4096) / 4)
    assert summary["max_tile_rates"] == {"256": 0.75, "512": 0.5, "1024": 0.5, "2048": 0.5,
                                         "4096": 0.25, "8192": 0.0}
    assert summary["win_rate"] == pytest.approx(0.5)
    assert summary["truncated"] == 1


def test_summarize_hand_computed():
    summary = evaluation.summarize(HAND_STATS)
    _check_hand_summary(summary)
    for key, value in summary.items():
        if key not in ("max_tile_rates", "max_tile_counts"):
            assert type(value) in (int, float), (key, type(value))
    assert all(type(v) is float for v in summary["max_tile_rates"].values())


def test_summarize_pools_a_seed_axis_and_device_arrays():
    pooled = jax.tree.map(lambda x: jnp.asarray(x).reshape(2, 2), HAND_STATS)
    _check_hand_summary(evaluation.summarize(pooled))


# ---------------------------------------------------------------------------------------------
# Random baseline


def test_random_policy_stats_plausible():
    stats = jax.device_get(evaluation.random_policy_stats(jax.random.PRNGKey(5),
                                                          RANDOM_EPISODES))
    _assert_stats_layout(stats, (RANDOM_EPISODES,))
    summary = evaluation.summarize(stats)
    # Uniform random legal play scores ~1.1k points in ~118 moves on average.
    assert 700.0 < summary["score_mean"] < 1600.0, summary
    assert 70.0 < summary["length_mean"] < 170.0, summary
    assert summary["truncated"] == 0
    assert summary["win_rate"] == 0.0
    assert 64 <= summary["max_tile_mean"] <= 256


def test_summarize_max_tile_counts_and_position_by_hand():
    boards = np.zeros((3, 16), np.uint8)
    boards[0, 0] = 11  # 2048 in the top-left corner
    boards[1, 15], boards[1, 3] = 7, 7  # 128 in two corners (a tie: both cells count)
    boards[2, 5], boards[2, 0] = 9, 1  # 512 in row 1, column 1
    stats = EpisodeStats(score=np.zeros(3, np.float32), length=np.ones(3, np.int32),
                         max_tile=np.array([2048, 128, 512], np.int32),
                         truncated=np.zeros(3, bool), final_board=boards)
    summary = evaluation.summarize(stats)
    assert summary["max_tile_counts"] == {"128": 1, "512": 1, "2048": 1}
    expected = np.zeros((4, 4))
    expected[0, 0] = expected[3, 3] = expected[0, 3] = expected[1, 1] = 1 / 3
    np.testing.assert_allclose(summary["max_tile_position"], expected)
    assert "max_tile_position" not in evaluation.summarize(HAND_STATS)
    assert evaluation.summarize(HAND_STATS)["max_tile_counts"] == {
        "128": 1, "256": 1, "2048": 1, "4096": 1}


def test_evaluate_final_board_matches_max_tile():
    evaluate = evaluation.make_evaluate(NET, 8, max_len=400, greedy=False)
    init, _ = make_network(NET)
    stats = jax.device_get(evaluate(init(jax.random.PRNGKey(1)), jax.random.PRNGKey(2)))
    assert stats.final_board.shape == (8, 16) and stats.final_board.dtype == np.uint8
    np.testing.assert_array_equal(2 ** stats.final_board.max(axis=1).astype(np.int64),
                                  stats.max_tile)


class Moves(NamedTuple):
    t: jax.Array  # [] int32 moves played
    terminated: jax.Array  # [] bool


def _two_move_play(state: Moves, action, key) -> tuple[Moves, StepResult]:
    """A probe game: each move scores 4 and the second move ends it (then nothing changes)."""
    del key
    t = jnp.minimum(state.t + 1 + 0 * action, 2)
    board = jnp.zeros(16, jnp.int32).at[0].set(state.t)
    result = StepResult(board=board, next_board=board.at[0].set(t),
                        score_gain=jnp.where(state.terminated, 0.0, 4.0),
                        terminated=~state.terminated & (t == 2))
    return Moves(t, t == 2), result


TWO_MOVES = EnvFns(reset=lambda key: Moves(jnp.int32(0), jnp.bool_(False)),
                   play=_two_move_play, step=_two_move_play,
                   board=lambda s: jnp.zeros(16, jnp.int32).at[0].set(s.t),
                   legal_action_mask=lambda s: jnp.ones(4, bool))


def test_make_evaluate_on_a_probe_env_gives_the_known_result():
    evaluate = evaluation.make_evaluate(NET, 3, 10, True, env_fns=TWO_MOVES)
    stats = jax.device_get(evaluate(PARAMS, KEY))
    np.testing.assert_array_equal(stats.score, [8.0] * 3)
    np.testing.assert_array_equal(stats.length, [2] * 3)
    np.testing.assert_array_equal(stats.max_tile, [4] * 3)
    assert not stats.truncated.any() and stats.final_board.dtype == np.uint8
    short = jax.device_get(evaluation.make_evaluate(NET, 3, 1, True, env_fns=TWO_MOVES)(
        PARAMS, KEY))
    np.testing.assert_array_equal(short.truncated, [True] * 3)
    np.testing.assert_array_equal(short.score, [4.0] * 3)
