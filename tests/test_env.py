"""Tests for `game.env` against the plain-Python 2048 in `tests/reference/numpy_2048.py`."""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pgx.play2048
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import numpy_2048 as ref

from sailor_jax.game import env
from sailor_jax.game.features import phi

LEFT, UP, RIGHT, DOWN = 0, 1, 2, 3
NUM_RANDOM_BOARDS = 2048
NUM_PLAY_ENVS = 32
NUM_PLAY_STEPS = 256

# A full board whose only merge is the pair of 2s in the top row (legal: left and right).
# After `left` the top row is [4 8 16 _] and the spawn (2 or 4) fills the last cell; either
# way no move is legal any more, so the game ends on this move.
NEAR_TERMINAL = np.array(
    [1, 1, 3, 4,
     5, 6, 7, 8,
     6, 7, 8, 9,
     5, 6, 7, 8], dtype=np.int32)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Compiled functions under test, built once.


def state_from_board(board: jax.Array) -> env.State:
    """A running-game pgx `State` holding `board` (`[16]` exponents), with its legal mask and
    observation; `terminated` where no move is legal."""
    board = jnp.asarray(board, jnp.int32)
    mask = pgx.play2048._legal_action_mask(board.reshape(4, 4))
    terminated = ~mask.any()
    mask = jnp.where(terminated, True, mask)  # pgx marks every action legal at a terminal state
    state = env.State(_board=board, legal_action_mask=mask, terminated=terminated)
    return state.replace(observation=env._ENV.observe(state))


def _play_all_actions(board: jax.Array, key: jax.Array):
    """Play each of the 4 actions from `board` (no auto-reset); results stacked on axis 0."""
    state = state_from_board(board)
    keys = jax.random.split(key, env.NUM_ACTIONS)
    actions = jnp.arange(env.NUM_ACTIONS, dtype=jnp.int32)
    next_states, results = jax.vmap(env.play, in_axes=(None, 0, 0))(state, actions, keys)
    return state, next_states, results


PLAY_ALL_ONE = jax.jit(_play_all_actions)
PLAY_ALL_BATCH = jax.jit(jax.vmap(_play_all_actions))
STEP = jax.jit(env.step)
PLAY = jax.jit(env.play)
STEP_BATCH = jax.jit(jax.vmap(env.step))
RESET_BATCH = jax.jit(jax.vmap(env.reset))
STATE_FROM_BOARD = jax.jit(state_from_board)
STATE_FROM_BOARD_BATCH = jax.jit(jax.vmap(state_from_board))
BATCH = 8  # batch size of the vmap tests (one compile of STEP_BATCH)


def _observed_board(state) -> jax.Array:
    """Decode pgx's public one-hot observation `[..., 4, 4, 31]` to `[..., 16]` exponents."""
    obs = state.observation
    return jnp.argmax(obs, axis=-1).reshape(obs.shape[:-3] + (16,))


@functools.partial(jax.jit, static_argnums=(1, 2))
def _random_play(key: jax.Array, num_envs: int, num_steps: int):
    """Uniform random legal play with `env.step` (auto-reset); returns `[T, N]` records."""
    key_reset, key_run = jax.random.split(key)
    states = jax.vmap(env.reset)(jax.random.split(key_reset, num_envs))

    def body(states, key_t):
        key_action, key_step = jax.random.split(key_t)
        mask = env.legal_action_mask(states)
        logits = jnp.where(mask, 0.0, -jnp.inf)
        action = jax.random.categorical(key_action, logits, axis=-1).astype(jnp.int32)
        next_states, result = jax.vmap(env.step)(
            states, action, jax.random.split(key_step, num_envs)
        )
        record = {
            "board": env.board_exponents(states),
            "mask": mask,
            "action": action,
            "result": result,
            "next_state_board": env.board_exponents(next_states),
            "next_state_obs_board": _observed_board(next_states),
            "next_state_mask": env.legal_action_mask(next_states),
            "next_state_terminated": next_states.terminated,
        }
        return next_states, record

    _, records = jax.lax.scan(body, states, jax.random.split(key_run, num_steps))
    return records


def _random_boards(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random boards: exponents 0..k (k in {2, 3, 5, 11}) with 0-90% forced empties."""
    boards = np.empty((n, 16), dtype=np.int32)
    for i in range(n):
        top = rng.choice([2, 3, 5, 11])
        p_empty = rng.choice([0.0, 0.2, 0.5, 0.7, 0.9])
        tiles = rng.integers(1, top + 1, size=16)
        boards[i] = np.where(rng.random(16) < p_empty, 0, tiles)
    boards[0] = 0  # the empty board
    boards[1] = NEAR_TERMINAL
    return boards


def _assert_spawn(ref_after: np.ndarray, next_board: np.ndarray) -> int:
    """Check `next_board` = `ref_after` plus one spawn on an empty cell; return its exponent."""
    diff = np.flatnonzero(ref_after != next_board)
    assert diff.size == 1, f"expected one spawned cell, got {ref_after} -> {next_board}"
    cell = int(diff[0])
    assert ref_after[cell] == 0, f"spawn on non-empty cell {cell}: {ref_after} -> {next_board}"
    assert next_board[cell] in (1, 2), f"spawned exponent {next_board[cell]} not in (1, 2)"
    return int(next_board[cell])


@pytest.fixture(scope="module")
def random_play():
    """Host copy of `[T, N]` random-play records, flattened to `[T * N]`."""
    records = jax.device_get(_random_play(jax.random.key(7), NUM_PLAY_ENVS, NUM_PLAY_STEPS))
    return jax.tree.map(lambda x: np.asarray(x).reshape((-1,) + np.shape(x)[2:]), records)


@pytest.fixture(scope="module")
def random_boards():
    """`NUM_RANDOM_BOARDS` random boards and the 4-action `env.play` outputs for each."""
    boards = _random_boards(np.random.default_rng(0), NUM_RANDOM_BOARDS)
    keys = jax.random.split(jax.random.key(1), NUM_RANDOM_BOARDS)
    state, next_states, results = jax.device_get(PLAY_ALL_BATCH(jnp.asarray(boards), keys))
    obs_board = np.asarray(_observed_board(state))
    return boards, state, next_states, results, obs_board


# ---------------------------------------------------------------------------------------------
# The reference itself, on hand-written cases (values in comments, exponents in code).


@pytest.mark.parametrize(
    ("line", "expected", "points"),
    [
        ([1, 1, 1, 1], [2, 2, 0, 0], 8),  # [2 2 2 2] -> [4 4 0 0], 4 + 4
        ([1, 1, 1, 0], [2, 1, 0, 0], 4),  # [2 2 2 0] -> [4 2 0 0]: pairs from the left
        ([2, 2, 3, 0], [3, 3, 0, 0], 8),  # [4 4 8 0] -> [8 8 0 0]: no cascading merge
        ([1, 0, 0, 1], [2, 0, 0, 0], 4),  # [2 0 0 2] -> [4 0 0 0]: merge across gaps
        ([0, 0, 0, 3], [3, 0, 0, 0], 0),  # slide only
        ([1, 2, 1, 2], [1, 2, 1, 2], 0),  # nothing moves
        ([3, 3, 2, 2], [4, 3, 0, 0], 24),  # [8 8 4 4] -> [16 8 0 0], 16 + 8
        ([0, 0, 0, 0], [0, 0, 0, 0], 0),
    ],
)
def test_reference_slide_and_merge_line(line, expected, points):
    out, got_points = ref.slide_and_merge_line(line)
    assert list(out) == expected
    assert got_points == points


def test_reference_move_rows_left_right():
    board = np.zeros(16, np.int32)
    board[0:4] = [1, 1, 1, 1]  # [2 2 2 2]
    board[4:8] = [1, 1, 1, 0]  # [2 2 2 0]
    board[8:12] = [2, 2, 3, 0]  # [4 4 8 0]
    board[12:16] = [0, 5, 0, 5]  # [0 32 0 32]
    left, left_points = ref.move(board, LEFT)
    np.testing.assert_array_equal(left, [2, 2, 0, 0, 2, 1, 0, 0, 3, 3, 0, 0, 6, 0, 0, 0])
    assert left_points == 8 + 4 + 8 + 64
    right, right_points = ref.move(board, RIGHT)
    # [2 2 2 2] -> [0 0 4 4]; [2 2 2 0] -> [0 0 2 4] (pairs from the right);
    # [4 4 8 0] -> [0 0 8 8]; [0 32 0 32] -> [0 0 0 64]
    np.testing.assert_array_equal(right, [0, 0, 2, 2, 0, 0, 1, 2, 0, 0, 3, 3, 0, 0, 0, 6])
    assert right_points == 8 + 4 + 8 + 64


def test_reference_move_columns_up_down():
    grid = np.zeros((4, 4), np.int32)
    grid[:3, 0] = 1  # column 0 (top to bottom) is [2 2 2 0]
    grid[[1, 3], 3] = 3  # column 3 is [0 8 0 8]; the rest is empty
    board = grid.reshape(16)
    up = [2, 0, 0, 4,
          1, 0, 0, 0,
          0, 0, 0, 0,
          0, 0, 0, 0]  # fmt: skip
    down = [0, 0, 0, 0,
            0, 0, 0, 0,
            1, 0, 0, 0,
            2, 0, 0, 4]  # fmt: skip
    for action, expected in ((UP, up), (DOWN, down)):
        moved, points = ref.move(board, action)
        np.testing.assert_array_equal(moved, expected)
        assert points == 4 + 16


def test_reference_illegal_move_leaves_board():
    board = np.array(
        [1, 2, 3, 4,
         2, 3, 4, 5,
         0, 0, 0, 0,
         0, 0, 0, 0], dtype=np.int32)  # fmt: skip
    for action in (LEFT, UP, RIGHT):
        moved, points = ref.move(board, action)
        np.testing.assert_array_equal(moved, board)
        assert points == 0
    np.testing.assert_array_equal(ref.legal_mask(board), [False, False, False, True])
    assert not ref.is_terminal(board)


def test_reference_terminal_and_near_terminal():
    checker = np.array([1, 2] * 2 + [2, 1] * 2 + [1, 2] * 2 + [2, 1] * 2, dtype=np.int32)
    assert ref.is_terminal(checker)
    np.testing.assert_array_equal(ref.legal_mask(NEAR_TERMINAL), [True, False, True, False])
    after, points = ref.move(NEAR_TERMINAL, LEFT)
    assert points == 4
    for spawn in (1, 2):
        final = after.copy()
        final[3] = spawn
        assert ref.is_terminal(final)
    assert ref.is_terminal(np.zeros(16, np.int32))  # nothing moves on an empty board


_line = st.lists(st.integers(0, 6), min_size=4, max_size=4)


@settings(deadline=None, max_examples=200)
@given(_line)
def test_reference_line_keeps_value_sum_and_scores_merged_tiles(line):
    out, points = ref.slide_and_merge_line(line)
    value = lambda xs: sum(2**x for x in xs if x)
    assert value(out) == value(line)  # slides and merges keep the total tile value
    tiles_after = sum(1 for x in out if x)
    assert all(x == 0 for x in out[tiles_after:])  # packed towards the move direction
    merges = sum(1 for x in line if x) - tiles_after
    # Each merge creates one tile worth 2**(k+1) >= 4, and the points are those tiles' values.
    assert points % 4 == 0
    assert 4 * merges <= points <= value(line)
    assert (points == 0) == (merges == 0)


# ---------------------------------------------------------------------------------------------
# The JAX env against the reference.


def test_random_boards_observation_mask_and_terminal(random_boards):
    boards, state, _, _, obs_board = random_boards
    np.testing.assert_array_equal(np.asarray(state._board), boards)
    np.testing.assert_array_equal(obs_board, boards)
    for i, board in enumerate(boards):
        terminal = ref.is_terminal(board)
        assert bool(state.terminated[i]) == terminal, board
        expected_mask = np.ones(4, bool) if terminal else ref.legal_mask(board)
        np.testing.assert_array_equal(state.legal_action_mask[i], expected_mask, err_msg=f"{board}")
    assert np.asarray(state.terminated).sum() > 10, "too few terminal boards in the sample"


def test_random_boards_play_matches_reference(random_boards):
    boards, state, next_states, results, _ = random_boards
    checked = 0
    for i, board in enumerate(boards):
        if state.terminated[i]:
            continue
        mask = ref.legal_mask(board)
        for action in range(4):
            if not mask[action]:
                continue
            after, points = ref.move(board, action)
            np.testing.assert_array_equal(results.board[i, action], board)
            assert float(results.score_gain[i, action]) == points, (board, action)
            next_board = np.asarray(results.next_board[i, action])
            _assert_spawn(after, next_board)
            np.testing.assert_array_equal(next_states._board[i, action], next_board)
            terminal = ref.is_terminal(next_board)
            assert bool(results.terminated[i, action]) == terminal, (board, action, next_board)
            if not terminal:
                np.testing.assert_array_equal(
                    next_states.legal_action_mask[i, action], ref.legal_mask(next_board)
                )
            checked += 1
    assert checked > 2000


def test_random_play_matches_reference(random_play):
    rec = random_play
    res = rec["result"]
    n = rec["board"].shape[0]
    assert n == NUM_PLAY_ENVS * NUM_PLAY_STEPS
    for t in range(n):
        board = rec["board"][t]
        action = int(rec["action"][t])
        mask = ref.legal_mask(board)
        np.testing.assert_array_equal(rec["mask"][t], mask, err_msg=f"{board}")
        assert mask[action]
        after, points = ref.move(board, action)
        np.testing.assert_array_equal(res.board[t], board)
        assert float(res.score_gain[t]) == points, (board, action)
        _assert_spawn(after, res.next_board[t])
        terminal = ref.is_terminal(res.next_board[t])
        assert bool(res.terminated[t]) == terminal, (board, action, res.next_board[t])
        assert not rec["next_state_terminated"][t]
        np.testing.assert_array_equal(rec["next_state_obs_board"][t], rec["next_state_board"][t])
        if not terminal:
            np.testing.assert_array_equal(rec["next_state_board"][t], res.next_board[t])
            np.testing.assert_array_equal(
                rec["next_state_mask"][t], ref.legal_mask(res.next_board[t])
            )
        else:
            _assert_fresh_game(rec["next_state_board"][t], rec["next_state_mask"][t])
    assert res.terminated.sum() >= 20, "random play should finish some games"


def test_spawn_four_fraction(random_play):
    spawns = []
    res = random_play["result"]
    for t in range(res.board.shape[0]):
        after, _ = ref.move(res.board[t], int(random_play["action"][t]))
        spawns.append(_assert_spawn(after, res.next_board[t]))
    spawns = np.array(spawns)
    fours = float(np.mean(spawns == 2))
    # ~8192 spawns: the std of the fraction is ~0.0033; allow a wide band.
    assert 0.07 < fours < 0.13, fours


def _assert_fresh_game(board: np.ndarray, mask: np.ndarray) -> None:
    board = np.asarray(board)
    tiles = board[board != 0]
    assert tiles.size == 2, board
    assert set(tiles.tolist()) <= {1, 2}, board
    np.testing.assert_array_equal(mask, ref.legal_mask(board))
    assert np.asarray(mask).any()


def test_reset_gives_two_small_tiles():
    states = jax.device_get(RESET_BATCH(jax.random.split(jax.random.key(3), 512)))
    chex.assert_type(env.legal_action_mask(states), jnp.bool_)
    boards = np.asarray(env.board_exponents(states))
    np.testing.assert_array_equal(np.asarray(_observed_board(states)), boards)
    assert not np.asarray(states.terminated).any()
    for board, mask in zip(boards, np.asarray(states.legal_action_mask), strict=True):
        _assert_fresh_game(board, mask)
    tiles = boards[boards != 0]
    assert 0.05 < np.mean(tiles == 2) < 0.16


def test_board_exponents_matches_public_observation():
    states = RESET_BATCH(jax.random.split(jax.random.key(0), 512))
    chex.assert_shape(states.observation, (512, 4, 4, 31))
    boards = env.board_exponents(states)
    chex.assert_shape(boards, (512, 16))
    chex.assert_type(boards, jnp.int32)
    np.testing.assert_array_equal(boards, _observed_board(states))
    # A board with large exponents too.
    big = jnp.arange(16, dtype=jnp.int32) + 2
    state = STATE_FROM_BOARD(big)
    chex.assert_shape(state.observation, (4, 4, 31))
    np.testing.assert_array_equal(env.board_exponents(state), big)
    np.testing.assert_array_equal(_observed_board(state), big)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(0, 5), min_size=16, max_size=16), st.integers(0, 2**31 - 1))
def test_env_moves_conserve_value_and_mask_matches_slide(cells, seed):
    board = np.array(cells, dtype=np.int32)
    state, next_states, results = jax.device_get(
        PLAY_ALL_ONE(jnp.asarray(board), jax.random.key(seed))
    )
    value = lambda b: int(np.sum(np.where(b > 0, 2 ** b.astype(np.int64), 0)))
    mask = np.asarray(state.legal_action_mask)
    if bool(state.terminated):
        assert ref.is_terminal(board)
        return
    for action in range(4):
        after, points = ref.move(board, action)
        # The mask calls an action legal iff the slide changes the board.
        assert bool(mask[action]) == (not np.array_equal(after, board))
        if not mask[action]:
            continue
        next_board = np.asarray(results.next_board[action])
        spawn = _assert_spawn(after, next_board)
        assert value(next_board) == value(board) + 2**spawn  # merges and slides keep the sum
        assert float(results.score_gain[action]) == points


# ---------------------------------------------------------------------------------------------
# Auto-reset and finished games.


def test_step_auto_resets_after_terminal_move():
    keys = jax.random.split(jax.random.key(11), BATCH)
    states = STATE_FROM_BOARD_BATCH(jnp.tile(jnp.asarray(NEAR_TERMINAL), (BATCH, 1)))
    actions = jnp.full((BATCH,), LEFT, jnp.int32)
    next_states, results = jax.device_get(STEP_BATCH(states, actions, keys))
    obs_board = np.argmax(next_states.observation, axis=-1).reshape(BATCH, 16)
    after, points = ref.move(NEAR_TERMINAL, LEFT)
    spawns = set()
    for i in range(BATCH):
        assert bool(results.terminated[i])
        assert float(results.score_gain[i]) == points == 4
        np.testing.assert_array_equal(results.board[i], NEAR_TERMINAL)
        spawns.add(_assert_spawn(after, results.next_board[i]))  # the terminal board
        assert ref.is_terminal(results.next_board[i])
        # next state: a fresh running game
        assert not bool(next_states.terminated[i])
        _assert_fresh_game(next_states._board[i], next_states.legal_action_mask[i])
        np.testing.assert_array_equal(obs_board[i], next_states._board[i])
        assert int(next_states._step_count[i]) == 0
    assert spawns <= {1, 2}


def test_play_does_not_reset_and_finished_game_is_frozen():
    state = STATE_FROM_BOARD(jnp.asarray(NEAR_TERMINAL))
    finished, result = PLAY(state, jnp.int32(LEFT), jax.random.key(5))
    assert bool(result.terminated)
    assert bool(finished.terminated)
    assert float(result.score_gain) == 4.0
    np.testing.assert_array_equal(env.board_exponents(finished), result.next_board)
    assert bool(jnp.all(env.legal_action_mask(finished)))  # pgx: all True when finished
    for action in range(4):
        again, result2 = PLAY(finished, jnp.int32(action), jax.random.key(6 + action))
        assert float(result2.score_gain) == 0.0
        assert not bool(result2.terminated)
        np.testing.assert_array_equal(result2.board, result.next_board)
        np.testing.assert_array_equal(result2.next_board, result.next_board)
        assert bool(again.terminated)
        # Unchanged apart from the per-step reward, which is zeroed.
        chex.assert_trees_all_equal(again.replace(rewards=finished.rewards), finished)
        np.testing.assert_array_equal(again.rewards, [0.0])


def test_state_from_board_terminal_board():
    checker = jnp.array([1, 2] * 2 + [2, 1] * 2 + [1, 2] * 2 + [2, 1] * 2, jnp.int32)
    state = STATE_FROM_BOARD(checker)
    assert bool(state.terminated)
    assert bool(jnp.all(state.legal_action_mask))


# ---------------------------------------------------------------------------------------------
# Transforms, shapes and dtypes.


def _assert_result_shapes(result: env.StepResult, batch: tuple[int, ...]) -> None:
    chex.assert_shape(result.board, batch + (16,))
    chex.assert_shape(result.next_board, batch + (16,))
    chex.assert_shape(result.score_gain, batch)
    chex.assert_shape(result.terminated, batch)
    chex.assert_type(result.board, jnp.int32)
    chex.assert_type(result.next_board, jnp.int32)
    chex.assert_type(result.score_gain, jnp.float32)
    chex.assert_type(result.terminated, jnp.bool_)


def test_step_jit_equals_eager():
    # One eager call (slow op-by-op; `env.step` is jitted): the terminal move, so it covers
    # play, spawn and auto-reset.
    near = STATE_FROM_BOARD(jnp.asarray(NEAR_TERMINAL))
    key = jax.random.key(42)
    with jax.disable_jit():
        eager = env.step(near, jnp.int32(LEFT), key)
    jitted = STEP(near, jnp.int32(LEFT), key)
    chex.assert_trees_all_equal(eager, jitted)
    _assert_result_shapes(eager[1], ())
    _assert_result_shapes(jitted[1], ())
    assert bool(eager[1].terminated)


def test_step_vmap_equals_loop():
    boards = jnp.array(
        [[1, 1, 2, 0, 0, 3, 0, 3, 1, 0, 0, 0, 2, 2, 0, 0],
         NEAR_TERMINAL.tolist(),
         [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
         [1, 2, 3, 4, 4, 3, 2, 1, 1, 2, 3, 4, 4, 3, 2, 0],
         [1, 1, 2, 0, 0, 3, 0, 3, 1, 0, 0, 0, 2, 2, 0, 0],
         [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1],
         [5, 4, 3, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
         [1, 1, 2, 0, 0, 3, 0, 3, 1, 0, 0, 0, 2, 2, 0, 0]], jnp.int32)  # fmt: skip
    actions = jnp.array([LEFT, LEFT, DOWN, RIGHT, UP, RIGHT, DOWN, DOWN], jnp.int32)
    states = STATE_FROM_BOARD_BATCH(boards)
    keys = jax.random.split(jax.random.key(9), BATCH)
    batched = STEP_BATCH(states, actions, keys)
    _assert_result_shapes(batched[1], (BATCH,))
    chex.assert_shape(batched[0].legal_action_mask, (BATCH, 4))
    for i in range(BATCH):
        single = STEP(jax.tree.map(lambda x, i=i: x[i], states), actions[i], keys[i])
        chex.assert_trees_all_equal(jax.tree.map(lambda x, i=i: x[i], batched), single)
    assert bool(batched[1].terminated[1])


def test_obs_one_hot_shape_and_content():
    boards = jnp.array([[0] * 16, list(range(16)), [17] * 16], jnp.int32)
    obs = env.obs_one_hot(boards)
    chex.assert_shape(obs, (3, 16 * env.NUM_TILE_CLASSES))
    chex.assert_type(obs, jnp.float32)
    decoded = jnp.argmax(obs.reshape(3, 16, env.NUM_TILE_CLASSES), axis=-1)
    np.testing.assert_array_equal(decoded, boards)
    np.testing.assert_array_equal(obs.sum(axis=-1), [16.0] * 3)


def test_constants():
    assert env.NUM_ACTIONS == 4


def test_game_2048_env_fns_bundle_the_env_functions():
    fns = env.GAME_2048
    assert (fns.reset, fns.step, fns.play) == (env.reset, env.step, env.play)
    assert (fns.board, fns.legal_action_mask, fns.phi) == (
        env.board_exponents, env.legal_action_mask, phi)
    assert hash(fns) == hash(env.EnvFns())  # static: usable as a jit / lru_cache argument
    with pytest.raises(dataclasses.FrozenInstanceError):
        fns.step = env.play
