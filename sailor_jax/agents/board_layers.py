"""How a network's first layer reads the board: a gather on the CPU, a one-hot matmul elsewhere.

`embed` is the one-hot first dense layer as a gather-and-sum; compiled-safe. XLA:CPU runs
per-cell gathers summed as they go much faster than one big gather.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from sailor_jax.game.env import NUM_TILE_CLASSES


def reads_one_hot(first_layer: str, backend: str | None = None) -> bool:
    """Whether a first layer of kind `first_layer` ("one_hot" or "embedding") is computed as
    the one-hot matmul on `backend` (default `jax.default_backend()`, read at trace time).

    `one_hot` always is; `embedding`, the same function, is `embed` on the CPU and the matmul
    elsewhere: the gather's gradient is 16 scatter-adds per layer, each reading the `[N, H]`
    gradient again (serialised by atomics on a GPU), the matmul's one matmul, which XLA's cost
    model counts as fewer bytes accessed; on the CPU the gather is faster (docs/performance.md).
    """
    return first_layer == "one_hot" or (backend or jax.default_backend()) != "cpu"


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
