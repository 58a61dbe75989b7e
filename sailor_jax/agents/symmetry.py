"""The 8 symmetries of the 2048 board (the dihedral group of the square) and a canonical
orientation, so that a network sees every board the same way up.

2048 is invariant under rotations and reflections of the board: turning the board and the
move together gives the same game. `canonicalize` picks, of a board's 8 views, the one that
is largest read as a base-18 number in row-major order (so the largest corner tile goes to
the top-left, and ties are broken by the cells next to it), and says which view that was; a
network evaluated on canonical boards, its action outputs mapped back with
`ACTION_PERMUTATIONS`, is exactly equivariant: what it learns in one orientation holds in
all 8 (the symmetric sampling of n-tuple networks, Szubert & Jaskowski 2014, without its 8x
cost). Host-free and compiled-safe.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _dihedral() -> tuple[np.ndarray, np.ndarray]:
    """`(cells [8, 16], actions [8, 4])` of the 8 signed permutation matrices M.

    View t of a board moves the tile at (r, c) to M (r, c) (about the centre), so
    `view[i] = board[cells[t, i]]`; move `a` (direction d_a, in pgx's order left, up, right,
    down) on the board is move `actions[t, a]` (direction M d_a) on the view.
    """
    mats = [np.array(m) for m in ([[1, 0], [0, 1]], [[0, -1], [1, 0]], [[-1, 0], [0, -1]],
                                  [[0, 1], [-1, 0]], [[1, 0], [0, -1]], [[-1, 0], [0, 1]],
                                  [[0, 1], [1, 0]], [[0, -1], [-1, 0]])]
    directions = np.array([[0, -1], [-1, 0], [0, 1], [1, 0]])  # (d_row, d_col)
    centred = np.array([(r - 1.5, c - 1.5) for r in range(4) for c in range(4)])
    cells, actions = [], []
    for m in mats:
        source = (centred @ m + 1.5).round().astype(int)  # M^-1 x = M^T x, row vectors
        cells.append(4 * source[:, 0] + source[:, 1])
        moved = directions @ m.T
        actions.append([int(np.flatnonzero((directions == d).all(1))[0]) for d in moved])
    return np.array(cells), np.array(actions)


CELL_PERMUTATIONS, ACTION_PERMUTATIONS = _dihedral()
"""`int [8, 16]`: view t of a board is `board[CELL_PERMUTATIONS[t]]` (view 0 the identity);
`int [8, 4]`: move a on a board is move `ACTION_PERMUTATIONS[t, a]` on its view t."""

_DIGITS = (slice(0, 6), slice(6, 12), slice(12, 16))
"""Row-major cell groups read as base-18 numbers (18**6 < 2**31: int32 keys)."""


def canonicalize(board: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The canonical view of `[..., 16]` integer exponent boards (0..17) and its index.

    Returns:
      `(view [..., 16], t [...] int32)`: `view = board[CELL_PERMUTATIONS[t]]`, the largest of
      the 8 views in row-major base-18 order (first of equals). Boards of one orbit get the
      same view.
    """
    views = jnp.take(board, jnp.asarray(CELL_PERMUTATIONS), axis=-1).astype(jnp.int32)
    tied = jnp.ones(views.shape[:-1], bool)  # [..., 8]
    for cells in _DIGITS:
        digits = views[..., cells]
        key = jnp.sum(digits * 18 ** jnp.arange(digits.shape[-1] - 1, -1, -1), axis=-1)
        key = jnp.where(tied, key, -1)
        tied = tied & (key == jnp.max(key, axis=-1, keepdims=True))
    t = jnp.argmax(tied, axis=-1).astype(jnp.int32)
    view = jnp.take_along_axis(views, t[..., None, None], axis=-2)[..., 0, :]
    return view.astype(board.dtype), t


def from_view(t: jax.Array, per_action: jax.Array) -> jax.Array:
    """Reorder `[..., 4]` per-action values of views t back into their boards' action order."""
    return jnp.take_along_axis(per_action, jnp.asarray(ACTION_PERMUTATIONS)[t], axis=-1)

