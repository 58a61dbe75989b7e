"""Plain-Python expectimax of the expert (`sailor_jax.game.expert`), from its definition.

Host-only test oracle, slow: loops over moves, empty cells and spawns. The heuristic is
nneonneo/2048-ai's line score written out from its formula, on the rows and columns of the
board; the search recurses over player moves and spawns (2 w.p. 0.9, 4 w.p. 0.1, uniform
over empty cells), leaves at afterstates, 0 for a spawned board with no legal move.
"""

from __future__ import annotations

import numpy as np

from reference.numpy_2048 import legal_mask, move


def line_score(line) -> float:
    """nneonneo's per-line heuristic of 4 exponents."""
    e = [int(x) for x in line]
    empty = e.count(0)
    nonzero = [x for x in e if x]
    merges, k = 0, 0
    while k < len(nonzero):  # runs of equal neighbouring tiles (empties skipped)
        run = 1
        while k + run < len(nonzero) and nonzero[k + run] == nonzero[k]:
            run += 1
        if run > 1:
            merges += run
        k += run
    down = sum(max(e[i - 1] ** 4 - e[i] ** 4, 0) for i in range(1, 4))
    up = sum(max(e[i] ** 4 - e[i - 1] ** 4, 0) for i in range(1, 4))
    return (200000.0 + 270.0 * empty + 700.0 * merges - 47.0 * min(down, up)
            - 11.0 * sum(x**3.5 for x in e))


def board_score(board16) -> float:
    grid = np.asarray(board16).reshape(4, 4)
    return sum(line_score(grid[r]) for r in range(4)) + sum(line_score(grid[:, c])
                                                            for c in range(4))


def action_values(board16, depth: int) -> np.ndarray:
    """`float64[4]` expectimax values, -inf for illegal moves."""
    legal = legal_mask(board16)
    return np.array([_chance(move(board16, a)[0], depth) if legal[a] else -np.inf
                     for a in range(4)])


def _chance(after, depth: int) -> float:
    if depth == 1:
        return board_score(after)
    empty = [c for c in range(16) if after[c] == 0]
    total = 0.0
    for c in empty:
        for exponent, p in ((1, 0.9), (2, 0.1)):
            child = after.copy()
            child[c] = exponent
            best = np.max(action_values(child, depth - 1))
            total += p / len(empty) * (best if np.isfinite(best) else 0.0)
    return total
