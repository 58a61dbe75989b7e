"""An expert 2048 player: depth-limited expectimax with a line-table board heuristic.

Device code (jit/vmap-safe). The positive control of the judge benchmarks: a judge that
really knows long-horizon 2048 strategy, cheap enough to run on a CPU.

Moves and the heuristic are tables over every 4-cell line: a line of exponents `e0..e3`
(each 0..17, `e0` the cell the line slides towards) has index `e0 + 18 e1 + 18^2 e2 +
18^3 e3` into tables of `18^4 = 104,976` entries (built once with NumPy): the line after a
slide, and the line's heuristic score. The search holds a board as its 4 row indices and 4
column indices: a move is 4 table lookups of the moved lines plus a re-encoding of the
crossing lines, the heuristic 8 lookups, a spawn two integer adds (2.5x faster than searching
on 16-cell boards). Two 2^17 tiles, which no game can hold, would merge into a clamped 2^17.

The heuristic is nneonneo/2048-ai's (`2048.cpp`, `init_tables`), re-derived here: per line,
`200000 + 270 * empty + 700 * merges - 47 * min(mono_left, mono_right) - 11 * sum(e^3.5)`,
with monotonicity measured on `e^4`; a board scores the sum over its 4 rows and 4 columns.
As there, the leaf is the *afterstate* (the board after a move, before the random spawn), and
a board with no legal move scores 0.

Search (`depth` = player moves searched): `V_d(s) = max_a legal C_d(after(s, a))`;
`C_1(b) = heuristic(b)`; `C_d(b) = sum over empty cells c (uniform) and spawns 2 (p 0.9) / 4
(p 0.1) of V_{d-1}(b + spawn)`, 0 where the spawned board has no legal move. Depth 1 is the
greedy heuristic (4 leaves per board), depth 2 has 4 x 32 x 4 = 512 leaves, depth 3 65,536.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.game.env import NUM_TILE_CLASSES

_BASE = NUM_TILE_CLASSES
_NUM_LINES = _BASE**4
_POWERS = np.array([1, _BASE, _BASE**2, _BASE**3], np.int32)
SPAWN_PROBS = ((1, 0.9), (2, 0.1))
"""(exponent, probability) of the tile spawned after a move: a 2 w.p. 0.9, a 4 w.p. 0.1."""
HEURISTIC_WEIGHTS = {"lost_penalty": 200000.0, "monotonicity_power": 4.0,
                     "monotonicity": 47.0, "sum_power": 3.5, "sum": 11.0,
                     "merges": 700.0, "empty": 270.0}
"""nneonneo/2048-ai's line-heuristic constants (SCORE_* in 2048.cpp)."""


def slide_lines(lines: np.ndarray) -> np.ndarray:
    """Slide lines of exponents towards index 0 with 2048's merge rule. Host (NumPy).

    Args:
      lines: `[L, 4]` integer exponents.

    Returns:
      `[L, 4] int32`: each pair merges once, the leading pair first.
    """
    tiles = np.take_along_axis(lines, np.argsort(lines == 0, axis=1, kind="stable"), 1)
    tiles = np.concatenate([tiles, np.zeros_like(tiles[:, :2])], axis=1)  # reads past the end
    out, k, rows = np.zeros((len(lines), 4), np.int32), np.zeros(len(lines), np.int64), \
        np.arange(len(lines))
    for j in range(4):  # out[:, j] from the tiles at read position k (non-zeros come first)
        a, b = tiles[rows, k], tiles[rows, k + 1]
        merge = (a != 0) & (a == b)
        out[:, j] = np.where(merge, np.minimum(a + 1, _BASE - 1), a)
        k = np.minimum(k + 1 + merge, 4)
    return out


def line_heuristics(lines: np.ndarray) -> np.ndarray:
    """nneonneo/2048-ai's heuristic score of lines of exponents (higher is better). Host (NumPy).

    Args:
      lines: `[L, 4]` integer exponents.

    Returns:
      `[L] float64`, in the float64 operations and order of 2048.cpp's per-line loop.
    """
    w = HEURISTIC_WEIGHTS
    mono_pow = np.array([float(e) ** w["monotonicity_power"] for e in range(_BASE)])
    sum_pow = np.array([float(e) ** w["sum_power"] for e in range(_BASE)])
    empty = np.sum(lines == 0, axis=1)
    merges = prev = counter = np.zeros(len(lines), np.int64)
    for i in range(4):  # runs of equal non-zero tiles (zeros skipped): a run of n adds n
        e = lines[:, i]
        nz, same = e != 0, (e != 0) & (e == prev)
        merges = merges + np.where(nz & ~same & (counter > 0), 1 + counter, 0)
        counter = np.where(same, counter + 1, np.where(nz, 0, counter))
        prev = np.where(nz, e, prev)
    merges = merges + np.where(counter > 0, 1 + counter, 0)
    m = mono_pow[lines]
    mono_left = mono_right = tile_sum = 0.0
    for i in range(1, 4):
        down = lines[:, i - 1] > lines[:, i]
        mono_left = mono_left + np.where(down, m[:, i - 1] - m[:, i], 0.0)
        mono_right = mono_right + np.where(down, 0.0, m[:, i] - m[:, i - 1])
    for i in range(4):
        tile_sum = tile_sum + sum_pow[lines[:, i]]
    return (w["lost_penalty"] + w["empty"] * empty + w["merges"] * merges
            - w["monotonicity"] * np.minimum(mono_left, mono_right) - w["sum"] * tile_sum)


@functools.cache
def _tables() -> dict[str, np.ndarray]:
    """Line tables over all `18^4` line indices, built once per process: the line slid
    towards cell 0 (`to0_*`) and towards cell 3 (`to3_*`) as an index and as 4 cells, and the
    heuristic of each line."""
    cells = (np.arange(_NUM_LINES)[:, None] // _POWERS[None, :]) % _BASE
    to0 = slide_lines(cells)
    heuristic = line_heuristics(cells).astype(np.float32)
    reverse = cells[:, ::-1] @ _POWERS  # index of the mirrored line
    to3 = to0[reverse][:, ::-1]
    return {"to0_index": (to0 @ _POWERS).astype(np.int32), "to0_cells": to0.astype(np.int8),
            "to3_index": (to3 @ _POWERS).astype(np.int32), "to3_cells": to3.astype(np.int8),
            "heuristic": heuristic}


def _table(name: str) -> jax.Array:
    return jnp.asarray(_tables()[name])


def _encode(board: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`[..., 16]` exponents -> row indices `R [..., 4]` (line from column 0) and column
    indices `C [..., 4]` (line from row 0), int32: the search's board representation."""
    grid = board.astype(jnp.int32).reshape(*board.shape[:-1], 4, 4)
    powers = jnp.asarray(_POWERS)
    return grid @ powers, jnp.swapaxes(grid, -1, -2) @ powers


def _moves(rows: jax.Array, cols: jax.Array):
    """All 4 moves of `(R, C)` boards: `(R', C' [..., 4 moves, 4], grid' [..., 4, 4, 4] exponents
    (row, column), legal [..., 4])`. Moves follow pgx: 0 left, 1 up, 2 right, 3 down."""
    powers = jnp.asarray(_POWERS)
    left, right = _table("to0_cells")[rows], _table("to3_cells")[rows]  # [..., row, col]
    up, down = _table("to0_cells")[cols], _table("to3_cells")[cols]  # [..., col, row]
    new_rows = jnp.stack([_table("to0_index")[rows], jnp.swapaxes(up, -1, -2).astype(
        jnp.int32) @ powers, _table("to3_index")[rows], jnp.swapaxes(down, -1, -2).astype(
        jnp.int32) @ powers], axis=-2)
    new_cols = jnp.stack([jnp.swapaxes(left, -1, -2).astype(jnp.int32) @ powers,
                          _table("to0_index")[cols],
                          jnp.swapaxes(right, -1, -2).astype(jnp.int32) @ powers,
                          _table("to3_index")[cols]], axis=-2)
    grid = jnp.stack([left, jnp.swapaxes(up, -1, -2), right, jnp.swapaxes(down, -1, -2)],
                     axis=-3)
    legal = jnp.any(new_rows != rows[..., None, :], axis=-1)
    return new_rows, new_cols, grid, legal


@jax.jit
def afterstates(board: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The board after each move, before the spawn. Jitted: traced once per process.

    Args:
      board: `[..., 16]` integer exponents (row-major, row 0 on top).

    Returns:
      `(after [..., 4, 16] int32, legal [..., 4] bool)`: a move is legal iff it changes the
      board (pgx's rule).
    """
    _, _, grid, legal = _moves(*_encode(board))
    return grid.astype(jnp.int32).reshape(*board.shape[:-1], 4, 16), legal


def _line_heuristic_sum(rows: jax.Array, cols: jax.Array) -> jax.Array:
    table = _table("heuristic")
    return table[rows].sum(-1) + table[cols].sum(-1)


def heuristic(board: jax.Array) -> jax.Array:
    """`[..., 16]` exponents -> `[...]` float32 nneonneo heuristic: the sum over 4 rows and 4
    columns of the line table. Compiled-safe."""
    return _line_heuristic_sum(*_encode(board))


_CELL = np.arange(16)
_ROW_ADD = (np.eye(4, dtype=np.int32)[_CELL // 4] * _POWERS[_CELL % 4, None])  # [16 cells, 4]
_COL_ADD = (np.eye(4, dtype=np.int32)[_CELL % 4] * _POWERS[_CELL // 4, None])


def _spawns(rows: jax.Array, cols: jax.Array, grid: jax.Array):
    """Every spawn on afterstates `(R, C, grid)` -> children `(R, C [..., 32, 4])` and their
    probabilities `[..., 32]` (0 for occupied cells, whose child is the afterstate itself)."""
    empty = (grid.reshape(*grid.shape[:-2], 16) == 0).astype(jnp.int32)  # [..., 16]
    num_empty = jnp.maximum(empty.sum(-1, keepdims=True), 1)
    child_rows, child_cols, probs = [], [], []
    for exponent, prob in SPAWN_PROBS:
        add = exponent * empty[..., :, None]  # [..., 16, 1]
        child_rows.append(rows[..., None, :] + add * jnp.asarray(_ROW_ADD))
        child_cols.append(cols[..., None, :] + add * jnp.asarray(_COL_ADD))
        probs.append(empty * (prob / num_empty))
    shape = (*rows.shape[:-1], 32)
    return (jnp.stack(child_rows, -3).reshape(*shape, 4),
            jnp.stack(child_cols, -3).reshape(*shape, 4), jnp.stack(probs, -2).reshape(shape))


def _move_values(rows: jax.Array, cols: jax.Array, depth: int) -> jax.Array:
    """`V` of the module docstring per move: `(R, C [..., 4])` -> `[..., 4]`, -inf illegal."""
    new_rows, new_cols, grid, legal = _moves(rows, cols)
    if depth == 1:
        value = _line_heuristic_sum(new_rows, new_cols)
    else:
        child_rows, child_cols, probs = _spawns(new_rows, new_cols, grid)
        best = jnp.max(_move_values(child_rows, child_cols, depth - 1), axis=-1)
        best = jnp.where(jnp.isfinite(best), best, 0.0)  # no legal move: the game is lost
        value = jnp.sum(probs * best, axis=-1)
    return jnp.where(legal, value, -jnp.inf)


def expert_action_values(board: jax.Array, depth: int = 2) -> jax.Array:
    """Expectimax value of each move: the expert's verdict on every action of every board.

    Compiled-safe; any leading batch shape (vectorised, no Python loop over boards). Memory
    grows as `32^(depth-1) * 4^depth` boards per input board: chunk large batches at depth 3+.
    Source: expectimax over moves and spawns with nneonneo/2048-ai's line heuristic (see the
    module docstring for the recursion).

    Args:
      board: `[..., 16]` integer tile exponents (row-major, row 0 on top).
      depth: player moves searched (static int >= 1).

    Returns:
      `[..., 4] float32` values in pgx's action order (0 left, 1 up, 2 right, 3 down);
      `-inf` for illegal moves; higher is better.

    Raises:
      ValueError: `depth` is not an int >= 1, or `board` does not end in 16 cells.
    """
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    if board.shape[-1:] != (16,):
        raise ValueError(f"board must have shape [..., 16], got {board.shape}")
    return _move_values(*_encode(jnp.asarray(board)), int(depth))


def expert_policy(board: jax.Array, depth: int = 2) -> jax.Array:
    """`[..., 16]` boards -> `[...]` int32 the expert's move (lowest action index on ties; 0
    where no move is legal). Compiled-safe."""
    return jnp.argmax(expert_action_values(board, depth), axis=-1).astype(jnp.int32)


@functools.lru_cache(maxsize=64)
def expert_act(depth: int = 2, epsilon: float = 0.0):
    """The epsilon-greedy expert as a policy for `policy.policy_step` (and the collectors).

    With probability `epsilon` a uniformly random legal move, else the expert's move
    (`expert_policy`): `epsilon = 0` is the expert, `epsilon = 1` the uniform random player,
    and values in between give players of graded skill. Cached: the same arguments return the
    same `act`, so the collectors built on it (`rollout.make_act_collect`) are shared.

    Returns:
      `act(key, board [N, 16], legal_action_mask [N, 4] bool) -> (action [N] int32, None)`.

    Raises:
      ValueError: `epsilon` outside [0, 1], or a bad `depth`.
    """
    if not 0.0 <= float(epsilon) <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    return functools.partial(_epsilon_expert, int(depth), float(epsilon))


def _epsilon_expert(depth: int, epsilon: float, key: jax.Array, board: jax.Array,
                    mask: jax.Array) -> tuple[jax.Array, None]:
    key_explore, key_random = jax.random.split(key)
    random_move = jax.random.categorical(key_random, jnp.where(mask, 0.0, -jnp.inf))
    if epsilon == 1.0:
        return random_move.astype(jnp.int32), None
    best = expert_policy(board, depth)
    explore = jax.random.uniform(key_explore, best.shape) < epsilon
    return jnp.where(explore, random_move, best).astype(jnp.int32), None
