"""Transition features `phi(s, a, s')` of 2048 boards, the basis of the parametric reward.

All functions are pure `jax.numpy`, broadcast over any leading batch axes, and are safe
under `jit` and `vmap`. Boards are 16 tile exponents in row-major order (row 0 on top;
0 = empty, k = tile 2**k).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

FEATURE_NAMES: tuple[str, ...] = (
    "score_gain",
    "empty_cells",
    "max_tile_in_corner",
    "monotonicity",
    "merges_available",
    "smoothness",
    "max_tile_increase",
    "game_over",
)
"""The 8 feature names, in the order of `phi`'s last axis."""

NUM_FEATURES: int = len(FEATURE_NAMES)

TERMINAL_FEATURES: tuple[str, ...] = ("game_over",)
"""Features that fire once, on the move that ends the game (not part of the per-move level)."""

# log2 of the largest possible tile (2**17 on a 4x4 board) normalises score_gain and smoothness.
_MAX_EXPONENT = 17.0
_NUM_ADJACENT_PAIRS = 24.0  # 12 horizontal + 12 vertical neighbour pairs on a 4x4 board
_CORNERS = (0, 3, 12, 15)


def _lines(grid: jax.Array) -> jax.Array:
    """`[..., 4, 4]` -> `[..., 8, 4]`: 4 rows left-to-right, then 4 columns top-to-bottom."""
    return jnp.concatenate([grid, jnp.swapaxes(grid, -1, -2)], axis=-2)


def phi(
    board: jax.Array, next_board: jax.Array, score_gain: jax.Array, terminated: jax.Array
) -> jax.Array:
    """Compute the 8 transition features of `FEATURE_NAMES` for one move.

    Compiled-safe; broadcasts over leading axes `[...]`.

    Args:
      board: `[..., 16]` integer tile exponents before the move.
      next_board: `[..., 16]` integer exponents after the move and the random spawn (the state
        the agent sees next).
      score_gain: `[...]` merge points of the move (pgx's reward), tile points >= 0; negative
        values (pgx's -1 for an illegal move) are clipped to 0.
      terminated: `[...]` bool, the game ended with this move.

    Returns:
      `[..., 8] float32`, each entry in [0, 1]:
        score_gain = log2(1 + score_gain) / 17; empty_cells = #zeros / 16;
        max_tile_in_corner = 1 if a corner holds the largest exponent; monotonicity = mean
        over the 8 lines of |inc - dec| / (inc + dec) (1 for a flat line); merges_available =
        #adjacent equal non-zero pairs / 24; smoothness = 1 - sum |e_a - e_b| over adjacent
        non-zero pairs / (17 * 24); max_tile_increase = clip(max(next) - max(board), 0, 1);
        game_over = terminated.
    """
    board = jnp.asarray(board, jnp.int32)
    nxt = jnp.asarray(next_board, jnp.int32)
    gain = jnp.maximum(jnp.asarray(score_gain, jnp.float32), 0.0)

    f_score = jnp.log2(1.0 + gain) / _MAX_EXPONENT
    f_empty = jnp.sum(nxt == 0, axis=-1).astype(jnp.float32) / 16.0

    max_next = jnp.max(nxt, axis=-1)
    corners = nxt[..., jnp.array(_CORNERS)]
    f_corner = jnp.any(corners == max_next[..., None], axis=-1).astype(jnp.float32)

    grid = nxt.reshape(nxt.shape[:-1] + (4, 4))
    diffs = jnp.diff(_lines(grid), axis=-1).astype(jnp.float32)  # [..., 8, 3]
    inc = jnp.sum(jnp.maximum(diffs, 0.0), axis=-1)
    dec = jnp.sum(jnp.maximum(-diffs, 0.0), axis=-1)
    total = inc + dec
    mono = jnp.where(total > 0, jnp.abs(inc - dec) / jnp.where(total > 0, total, 1.0), 1.0)
    f_mono = jnp.mean(mono, axis=-1)

    # Adjacent pairs: along rows (left/right neighbours) and along columns (up/down).
    a = jnp.concatenate([grid[..., :, :-1].reshape(grid.shape[:-2] + (12,)),
                         grid[..., :-1, :].reshape(grid.shape[:-2] + (12,))], axis=-1)
    b = jnp.concatenate([grid[..., :, 1:].reshape(grid.shape[:-2] + (12,)),
                         grid[..., 1:, :].reshape(grid.shape[:-2] + (12,))], axis=-1)
    both = (a != 0) & (b != 0)
    f_merges = jnp.sum(both & (a == b), axis=-1).astype(jnp.float32) / _NUM_ADJACENT_PAIRS
    rough = jnp.sum(jnp.where(both, jnp.abs(a - b), 0), axis=-1).astype(jnp.float32)
    f_smooth = 1.0 - rough / (_MAX_EXPONENT * _NUM_ADJACENT_PAIRS)

    f_increase = jnp.clip(max_next - jnp.max(board, axis=-1), 0, 1).astype(jnp.float32)
    f_over = jnp.asarray(terminated, jnp.bool_).astype(jnp.float32)

    feats = [f_score, f_empty, f_corner, f_mono, f_merges, f_smooth, f_increase, f_over]
    batch = jnp.broadcast_shapes(*(f.shape for f in feats))
    return jnp.stack([jnp.broadcast_to(f, batch) for f in feats], axis=-1)
