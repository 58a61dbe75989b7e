"""How a network's first layer reads the board: gathers instead of one-hot matmuls.

`embed` is the one-hot first dense layer as a gather-and-sum; `LineFeatures` reads rows and
columns through factorised 1x4 / 4x1 kernels; `TupleFeatures` reads 4-cell tuples (rows,
columns, 2x2 squares) through one learned table row per joint tile configuration, the
n-tuple network's lookup (Szubert & Jaskowski 2014, "Temporal difference learning of
N-tuple networks for the game 2048"). All are compiled-safe; XLA:CPU runs per-slot gathers
summed as they go much faster than one big gather (see `embed`).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx

from sailor_jax.game.env import NUM_TILE_CLASSES


def embed(layer: nnx.Linear, board: jax.Array) -> jax.Array:
    """The first layer on the one-hot board as a gather-and-sum. Compiled-safe.

    `one_hot(board) @ W + b` picks one row of `W [16 * 18, H]` per cell, row
    `18 * cell + exponent`; gathering those 16 rows and summing them is the same function
    (equal up to float summation order) at 16 H adds instead of 288 H multiply-adds per
    board, and its gradient is a scatter-add into the same rows. Same parameters as the
    one-hot layer, so the two are interchangeable on one checkpoint.

    Args:
      layer: the first `nnx.Linear(16 * 18, H)` of a tower.
      board: `[..., 16]` integer exponents in `0..17`.

    Returns:
      `[..., H] float32`, before the activation.
    """
    table = layer.kernel[...].reshape(16, NUM_TILE_CLASSES, -1)  # [cell, exponent, H]
    board = board.astype(jnp.int32)
    # One [..., H] gather per cell, summed as we go: XLA:CPU fuses this; a single gather of
    # [..., 16, H] followed by .sum(-2) materialises it and ran 4x slower than the matmul.
    h = layer.bias[...]
    for cell in range(16):
        h = h + jnp.take(table[cell], board[..., cell], axis=0)
    return h


class LineFeatures(nnx.Module):
    """Row and column features of the board: a 1x4 and a 4x1 kernel over the one-hot lines.

    Row `r`'s features are `act(sum_j rows[j, board[r, j]] + row_bias)`, one kernel shared by
    the 4 rows (and `cols` by the 4 columns): a convolution with a 1x4 (4x1) kernel, valid
    padding, over the `4 x 4 x 18` one-hot board, written as 4 gathers per line direction
    (flax Conv is slow on XLA:CPU). The structure of tsangwpx/ml2048's 1x4/4x1 kernels.

    Parameters: `rows`, `cols` `[4 positions, 18 exponents, F]` (normal, std 0.5, so a sum of
    4 has unit variance), `row_bias`, `col_bias` `[F]` (zeros).
    """

    def __init__(self, features: int, rngs: nnx.Rngs):
        init = nnx.initializers.normal(0.5)
        self.rows = nnx.Param(init(rngs.params(), (4, NUM_TILE_CLASSES, features)))
        self.cols = nnx.Param(init(rngs.params(), (4, NUM_TILE_CLASSES, features)))
        self.row_bias = nnx.Param(jnp.zeros((features,)))
        self.col_bias = nnx.Param(jnp.zeros((features,)))

    def __call__(self, board: jax.Array, act: Callable) -> jax.Array:
        """`[..., 16]` integer exponents (row-major) -> `[..., 8 F]` float32 line features."""
        grid = board.astype(jnp.int32).reshape(*board.shape[:-1], 4, 4)  # [..., row, col]
        rows, cols = self.rows[...], self.cols[...]
        h_rows, h_cols = self.row_bias[...], self.col_bias[...]
        for j in range(4):  # position along the line
            h_rows = h_rows + jnp.take(rows[j], grid[..., :, j], axis=0)  # [..., row, F]
            h_cols = h_cols + jnp.take(cols[j], grid[..., j, :], axis=0)  # [..., col, F]
        lines = jnp.concatenate([act(h_rows), act(h_cols)], axis=-2)  # [..., 8, F]
        return lines.reshape(*board.shape[:-1], -1)


TUPLE_CLASSES = 16
"""Tile classes a tuple table tells apart: exponents 0..15 (empty .. 32768); larger tiles
share class 15."""

SQUARES = tuple((r, c) for r in range(3) for c in range(3))
"""Top-left cells of the nine 2x2 squares, row-major."""


def tuple_indices(board: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Joint configuration index of every 4-cell tuple of `[..., 16]` exponent boards.

    A tuple's cells `c0..c3` (rows and squares read left to right, then top to bottom;
    columns top to bottom) with exponents clipped to `TUPLE_CLASSES - 1` give index
    `e0 + 16 e1 + 256 e2 + 4096 e3`.

    Returns:
      `(rows [..., 4], cols [..., 4], squares [..., 9])` int32 in `0..65535`.
    """
    g = jnp.minimum(board.astype(jnp.int32), TUPLE_CLASSES - 1)
    g = g.reshape(*board.shape[:-1], 4, 4)  # [..., row, col]
    weights = TUPLE_CLASSES ** jnp.arange(4, dtype=jnp.int32)
    rows = jnp.sum(g * weights, axis=-1)
    cols = jnp.sum(g * weights[:, None], axis=-2)
    squares = jnp.stack([g[..., r, c] + weights[1] * g[..., r, c + 1] + weights[2]
                         * g[..., r + 1, c] + weights[3] * g[..., r + 1, c + 1]
                         for r, c in SQUARES], axis=-1)
    return rows, cols, squares


class TupleFeatures(nnx.Module):
    """n-tuple features: a learned `F`-vector per joint configuration of each 4-cell tuple.

    The 17 tuples are the 4 rows, 4 columns and 9 2x2 squares. Tuple `t` of shape `s` gives
    `act(table_s[index_t] + bias_s)` (`tuple_indices`); one table per shape, shared by that
    shape's positions (a convolution whose kernel is a lookup table, so it sees every
    interaction of its 4 cells). The 17 feature vectors are concatenated in the order rows,
    columns, squares, so the next dense layer knows each tuple's position.

    Parameters: `rows`, `cols`, `squares` `[16**4, F]` (normal, std 1), `row_bias`,
    `col_bias`, `square_bias` `[F]` (zeros): 3 x 65,536 x F table weights.
    """

    NUM_TUPLES = 17

    def __init__(self, features: int, rngs: nnx.Rngs):
        init, size = nnx.initializers.normal(1.0), TUPLE_CLASSES ** 4
        for shape in ("rows", "cols", "squares"):
            setattr(self, shape, nnx.Param(init(rngs.params(), (size, features))))
        for bias in ("row_bias", "col_bias", "square_bias"):
            setattr(self, bias, nnx.Param(jnp.zeros((features,))))

    def __call__(self, board: jax.Array, act: Callable) -> jax.Array:
        """`[..., 16]` integer exponents (row-major) -> `[..., 17 F]` float32 features."""
        rows, cols, squares = tuple_indices(board)
        parts = []
        for index, table, bias in ((rows, self.rows, self.row_bias),
                                   (cols, self.cols, self.col_bias),
                                   (squares, self.squares, self.square_bias)):
            for k in range(index.shape[-1]):  # one [..., F] gather per tuple (XLA:CPU)
                parts.append(jnp.take(table[...], index[..., k], axis=0) + bias[...])
        return act(jnp.concatenate(parts, axis=-1))
