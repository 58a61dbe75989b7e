"""Tests for `sailor_jax.game.features.phi` against `tests/reference/numpy_features.py`."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference.numpy_features import FEATURE_NAMES_REFERENCE, phi_reference

from sailor_jax.game import features

NUM_RANDOM = 4096
ATOL = 1e-6
# Features that depend on next_board alone and must not change under the 8 board symmetries.
SYMMETRIC = ("empty_cells", "max_tile_in_corner", "monotonicity", "merges_available", "smoothness")
MAX_REACHABLE_GAIN = 2**17 - 1  # log2(1 + gain) / 17 <= 1 up to here (see test below)

PHI = jax.jit(features.phi)  # one trace per input shape; tests use a few fixed shapes
PHI_VMAP = jax.jit(jax.vmap(features.phi))


def _inputs(board, next_board, score_gain, terminated):
    """Cast to the fixed dtypes the jitted functions are traced with (no weak types)."""
    return (
        np.asarray(board, np.int32),
        np.asarray(next_board, np.int32),
        np.asarray(score_gain, np.float32),
        np.asarray(terminated, np.bool_),
    )


def _random_board(rng: np.random.Generator) -> np.ndarray:
    kind = rng.integers(6)
    if kind == 0:
        return np.zeros(16, np.int32)  # empty
    if kind == 1:
        return rng.integers(1, 18, size=16).astype(np.int32)  # full, exponents up to 17
    if kind == 2:
        return rng.integers(1, 4, size=16).astype(np.int32)  # full, small: many equal pairs
    top = int(rng.choice([2, 4, 11, 17]))
    p_empty = float(rng.choice([0.1, 0.4, 0.7, 0.95]))
    tiles = rng.integers(1, top + 1, size=16)
    return np.where(rng.random(16) < p_empty, 0, tiles).astype(np.int32)


def _random_gain(rng: np.random.Generator) -> float:
    kind = rng.integers(4)
    if kind == 0:
        return 0.0
    if kind == 1:
        return float(4 * rng.integers(1, 64))  # typical merge points
    if kind == 2:
        return float(rng.integers(0, MAX_REACHABLE_GAIN + 1))
    return float(2 ** rng.integers(2, 21))  # large, up to 2**20


@pytest.fixture(scope="module")
def random_tuples():
    rng = np.random.default_rng(123)
    boards = np.stack([_random_board(rng) for _ in range(NUM_RANDOM)])
    next_boards = np.stack([_random_board(rng) for _ in range(NUM_RANDOM)])
    gains = np.array([_random_gain(rng) for _ in range(NUM_RANDOM)], np.float32)
    terminated = rng.random(NUM_RANDOM) < 0.3
    # Some transitions where next_board is a small edit of board (the usual case).
    for i in range(0, NUM_RANDOM, 4):
        next_boards[i] = boards[i]
        cell = rng.integers(16)
        next_boards[i, cell] = min(int(boards[i, cell]) + int(rng.integers(0, 2)), 17)
    return boards, next_boards, gains, terminated


def test_feature_names():
    assert features.FEATURE_NAMES == (
        "score_gain",
        "empty_cells",
        "max_tile_in_corner",
        "monotonicity",
        "merges_available",
        "smoothness",
        "max_tile_increase",
        "game_over",
    )
    assert features.FEATURE_NAMES == FEATURE_NAMES_REFERENCE
    assert features.NUM_FEATURES == 8


def test_phi_matches_reference_on_random_tuples(random_tuples):
    boards, next_boards, gains, terminated = random_tuples
    got = np.asarray(PHI(*_inputs(boards, next_boards, gains, terminated)))
    chex.assert_shape(got, (NUM_RANDOM, 8))
    for i in range(NUM_RANDOM):
        want = phi_reference(boards[i], next_boards[i], gains[i], terminated[i])
        np.testing.assert_allclose(
            got[i],
            want,
            rtol=0,
            atol=ATOL,
            err_msg=f"board={boards[i]} next={next_boards[i]} gain={gains[i]} t={terminated[i]}",
        )


# ---------------------------------------------------------------------------------------------
# Hand-computed cases (exponents in code; every number worked out in the comments).

# next_board       board = same but 5 in the last cell (max 5)
#   1 3 2 0
#   0 3 0 4
#   5 0 0 4
#   2 2 0 6
# score_gain 12        -> log2(13) / 17 = 0.21767...
# empty: 1+2+2+1 = 6   -> 6/16 = 0.375
# max 6 at cell 15 (a corner) -> 1
# monotonicity (inc, dec) per line:
#   rows  [1 3 2 0]: +2 -1 -2 -> (2,3) 1/5;  [0 3 0 4]: +3 -3 +4 -> (7,3) 4/10
#         [5 0 0 4]: -5 0 +4 -> (4,5) 1/9;   [2 2 0 6]: 0 -2 +6 -> (6,2) 4/8
#   cols  [1 0 5 2]: -1 +5 -3 -> (5,4) 1/9;  [3 3 0 2]: 0 -3 +2 -> (2,3) 1/5
#         [2 0 0 0]: (0,2) 1;                [0 4 4 6]: (6,0) 1
#   mean = (0.2 + 0.4 + 1/9 + 0.5 + 1/9 + 0.2 + 1 + 1) / 8 = 317/720 = 0.44027...
# equal non-zero neighbours: (2,2) in row 3, (3,3) in col 1, (4,4) in col 3 -> 3/24 = 0.125
# |diff| over both-non-zero neighbours: rows 2+1 (row 0), 0 (row 3 pair 2,2);
#   cols 3 (5,2 in col 0), 0 (3,3), 0 + 2 (4,4 and 4,6 in col 3) -> 8 -> 1 - 8/408 = 0.98039...
# max 6 - max 5 = 1 -> 1; not terminated -> 0
CASE_MIXED = (
    [1, 3, 2, 0, 0, 3, 0, 4, 5, 0, 0, 4, 2, 2, 0, 5],
    [1, 3, 2, 0, 0, 3, 0, 4, 5, 0, 0, 4, 2, 2, 0, 6],
    12.0,
    False,
    [np.log2(13) / 17, 0.375, 1.0, 317 / 720, 0.125, 1 - 8 / 408, 1.0, 0.0],
)

# next_board (full, no equal neighbours), board has max 8, score 0, terminated
#   1 2 1 2
#   2 7 2 1
#   1 2 1 2
#   2 1 2 1
# empty 0; max 7 at cell 5, not a corner -> 0
# monotonicity: [1 2 1 2] (2,1) 1/3 (x2 rows, x2 cols), [2 1 2 1] (1,2) 1/3 (x1 row, x1 col),
#   [2 7 2 1] (5,6) 1/11 (row 1 and col 1) -> (6/3 + 2/11) / 8 = 3/11 = 0.27272...
# merges 0; roughness: rows 3 + 11 + 3 + 3 = 20, cols the same 20 -> 1 - 40/408 = 0.90196...
# max 7 - max 8 = -1 -> clipped to 0; terminated -> 1
CASE_FULL = (
    [8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [1, 2, 1, 2, 2, 7, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1],
    0.0,
    True,
    [0.0, 0.0, 0.0, 3 / 11, 0.0, 1 - 40 / 408, 0.0, 1.0],
)

# Empty next_board: score 0; 16/16 empty; max 0 sits in every corner -> 1; every line flat -> 1;
# no non-zero pairs -> merges 0, smoothness 1; max 0 - 0 = 0; not terminated.
CASE_EMPTY = ([0] * 16, [0] * 16, 0.0, False, [0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0])

# next_board                board: one tile 2**1 (max 1)
#   0 0 0 0
#   0 4 0 0
#   0 0 0 0
#   4 0 0 0
# score_gain 2**17 - 1 -> log2(2**17) / 17 = 1; empty 14/16 = 0.875;
# max 4 at cell 5 and at corner cell 12 (a tie counts) -> 1;
# monotonicity: row 1 [0 4 0 0] (4,4) -> 0, col 1 the same -> 0, the other 6 lines are flat or
#   one-way -> 1: 6/8 = 0.75; no adjacent non-zero pairs -> merges 0, smoothness 1;
# max 4 - max 1 = 3 -> clipped to 1; not terminated.
CASE_CORNER_TIE = (
    [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0],
    float(2**17 - 1),
    False,
    [1.0, 0.875, 1.0, 0.75, 0.0, 1.0, 1.0, 0.0],
)

# next_board all 3s: 24 equal pairs -> merges 1, roughness 0 -> smoothness 1, lines flat -> 1,
# corner 1, empty 0; score 4 -> log2(5)/17 = 0.13655...; max 3 - max 3 = 0.
CASE_ALL_EQUAL = (
    [3] * 16,
    [3] * 16,
    4.0,
    False,
    [np.log2(5) / 17, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
)


@pytest.mark.parametrize(
    "case",
    [CASE_MIXED, CASE_FULL, CASE_EMPTY, CASE_CORNER_TIE, CASE_ALL_EQUAL],
    ids=["mixed", "full", "empty", "corner_tie", "all_equal"],
)
def test_phi_hand_computed(case):
    board, next_board, gain, terminated, expected = case
    got = np.asarray(PHI(*_inputs(board, next_board, gain, terminated)))
    np.testing.assert_allclose(got, np.asarray(expected, np.float32), rtol=0, atol=ATOL)
    np.testing.assert_allclose(
        phi_reference(board, next_board, gain, terminated), expected, rtol=0, atol=ATOL
    )


def test_score_gain_above_largest_tile_exceeds_one():
    # The spec's formula log2(1 + g) / 17 passes 1 once g >= 2**17 (e.g. two 2**16 merges and
    # more in one move); phi follows the formula rather than clipping.
    got = np.asarray(PHI(*_inputs([0] * 16, [0] * 16, float(2**18 - 1), False)))
    np.testing.assert_allclose(got[0], 18 / 17, rtol=0, atol=ATOL)


def test_negative_score_gain_is_clipped():
    # Not in the spec: the code documents clipping pgx's -1 (illegal move) to 0.
    got = np.asarray(PHI(*_inputs([0] * 16, [0] * 16, -1.0, False)))
    assert got[0] == 0.0


def test_int8_boards_give_the_same_features():
    board, next_board, gain, terminated, expected = CASE_MIXED
    got = features.phi(
        np.asarray(board, np.int8), np.asarray(next_board, np.int8), np.float32(gain), False
    )
    chex.assert_type(got, jnp.float32)
    np.testing.assert_allclose(got, np.asarray(expected, np.float32), rtol=0, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Properties.

_cell = st.one_of(st.just(0), st.integers(0, 17), st.integers(1, 3))
_board = st.lists(_cell, min_size=16, max_size=16)
_gain = st.integers(0, MAX_REACHABLE_GAIN)


def _symmetries(board16) -> np.ndarray:
    """The 8 rotations/reflections of a board, `[8, 16]`."""
    grid = np.asarray(board16, np.int32).reshape(4, 4)
    out = []
    for flipped in (grid, grid[:, ::-1]):
        for k in range(4):
            out.append(np.rot90(flipped, k).reshape(16))
    return np.stack(out)


def test_symmetries_helper_gives_eight_distinct_boards():
    syms = _symmetries(np.arange(16))
    assert len({tuple(s) for s in syms}) == 8


@settings(deadline=None, max_examples=150)
@given(_board, _board, _gain, st.booleans())
def test_each_feature_in_unit_interval(board, next_board, gain, terminated):
    got = np.asarray(PHI(*_inputs(board, next_board, gain, terminated)))
    assert np.all(got >= 0.0) and np.all(got <= 1.0), got


@settings(deadline=None, max_examples=150)
@given(_board, _board, _gain, st.booleans())
def test_next_board_features_invariant_under_symmetries(board, next_board, gain, terminated):
    syms = _symmetries(next_board)
    boards = np.tile(np.asarray(board, np.int32), (8, 1))
    got = np.asarray(PHI(*_inputs(boards, syms, np.full(8, gain), np.full(8, terminated))))
    idx = [features.FEATURE_NAMES.index(name) for name in SYMMETRIC]
    np.testing.assert_allclose(
        got[:, idx], np.broadcast_to(got[0, idx], (8, len(idx))), rtol=0, atol=ATOL
    )
    # The other features do not look at the arrangement either.
    np.testing.assert_allclose(got, np.broadcast_to(got[0], (8, 8)), rtol=0, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Shapes, broadcasting, transforms.

B = 8
S = 3


@pytest.fixture(scope="module")
def small_batch(random_tuples):
    boards, next_boards, gains, terminated = random_tuples
    return _inputs(boards[:B], next_boards[:B], gains[:B], terminated[:B])


def test_batch_equals_loop_and_dtype(small_batch):
    batched = PHI(*small_batch)
    chex.assert_shape(batched, (B, 8))
    chex.assert_type(batched, jnp.float32)
    for i in range(B):
        single = PHI(*(x[i] for x in small_batch))
        chex.assert_shape(single, (8,))
        chex.assert_type(single, jnp.float32)
        np.testing.assert_array_equal(batched[i], single)


def test_seed_batch_axes(random_tuples):
    boards, next_boards, gains, terminated = random_tuples
    flat = _inputs(boards[: S * B], next_boards[: S * B], gains[: S * B], terminated[: S * B])
    nested = tuple(x.reshape((S, B) + x.shape[1:]) for x in flat)
    got = PHI(*nested)
    chex.assert_shape(got, (S, B, 8))
    chex.assert_type(got, jnp.float32)
    np.testing.assert_array_equal(np.asarray(got).reshape(S * B, 8), PHI(*flat))


def test_jit_equals_eager(small_batch):
    eager = features.phi(*small_batch)
    chex.assert_shape(eager, (B, 8))
    chex.assert_type(eager, jnp.float32)
    np.testing.assert_allclose(eager, PHI(*small_batch), rtol=0, atol=ATOL)


def test_vmap_equals_loop(small_batch):
    vmapped = PHI_VMAP(*small_batch)
    chex.assert_shape(vmapped, (B, 8))
    chex.assert_type(vmapped, jnp.float32)
    for i in range(B):
        np.testing.assert_allclose(vmapped[i], PHI(*(x[i] for x in small_batch)), rtol=0, atol=ATOL)


def test_no_retrace_for_new_values():
    counted = jax.jit(chex.assert_max_traces(features.phi, n=1))
    board, next_board, gain, terminated, _ = CASE_MIXED
    counted(*_inputs(board, next_board, gain, terminated))
    board, next_board, gain, terminated, _ = CASE_FULL
    counted(*_inputs(board, next_board, gain, terminated))
