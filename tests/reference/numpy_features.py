"""Plain-Python transition features phi, written from the issue's definition with explicit loops.

Host-only test oracle, independent of `sailor_jax.game.features`. Computed in float64, returned as
float32.
"""

from __future__ import annotations

import math

import numpy as np

FEATURE_NAMES_REFERENCE = (
    "score_gain",
    "empty_cells",
    "max_tile_in_corner",
    "monotonicity",
    "merges_available",
    "smoothness",
    "max_tile_increase",
    "game_over",
)


def _grid(board16) -> list[list[int]]:
    flat = [int(x) for x in np.asarray(board16).reshape(16)]
    return [[flat[4 * r + c] for c in range(4)] for r in range(4)]


def _lines(grid) -> list[list[int]]:
    """4 rows left-to-right, then 4 columns top-to-bottom."""
    rows = [[grid[r][c] for c in range(4)] for r in range(4)]
    cols = [[grid[r][c] for r in range(4)] for c in range(4)]
    return rows + cols


def _adjacent_pairs(grid) -> list[tuple[int, int]]:
    """The 24 horizontally or vertically adjacent pairs of cell values."""
    pairs = []
    for r in range(4):
        for c in range(3):
            pairs.append((grid[r][c], grid[r][c + 1]))
    for r in range(3):
        for c in range(4):
            pairs.append((grid[r][c], grid[r + 1][c]))
    assert len(pairs) == 24
    return pairs


def _line_monotonicity(line) -> float:
    inc = 0
    dec = 0
    for k in range(3):
        d = line[k + 1] - line[k]
        if d > 0:
            inc += d
        elif d < 0:
            dec += -d
    if inc + dec == 0:
        return 1.0
    return abs(inc - dec) / (inc + dec)


def phi_reference(board, next_board, score_gain, terminated) -> np.ndarray:
    """Return the 8 features of one transition as `float32[8]` (order of FEATURE_NAMES)."""
    before = _grid(board)
    grid = _grid(next_board)
    cells = [v for row in grid for v in row]

    f_score = math.log2(1.0 + float(score_gain)) / 17.0

    f_empty = sum(1 for v in cells if v == 0) / 16.0

    largest = max(cells)
    corners = [grid[0][0], grid[0][3], grid[3][0], grid[3][3]]
    f_corner = 1.0 if largest in corners else 0.0

    lines = _lines(grid)
    f_mono = sum(_line_monotonicity(line) for line in lines) / len(lines)

    pairs = _adjacent_pairs(grid)
    merges = 0
    rough = 0
    for a, b in pairs:
        if a != 0 and b != 0:
            rough += abs(a - b)
            if a == b:
                merges += 1
    f_merges = merges / 24.0
    f_smooth = 1.0 - rough / (17.0 * 24.0)

    largest_before = max(v for row in before for v in row)
    f_increase = float(min(max(largest - largest_before, 0), 1))

    f_over = 1.0 if bool(terminated) else 0.0

    return np.array(
        [f_score, f_empty, f_corner, f_mono, f_merges, f_smooth, f_increase, f_over],
        dtype=np.float32,
    )
