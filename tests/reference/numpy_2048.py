"""Plain-Python 2048 rules, written from the game's rules (no pgx, no sailor_jax).

Host-only test oracle. Boards are 16 tile exponents in row-major order (row 0 on top;
0 = empty, k = tile 2**k). Actions: 0 left, 1 up, 2 right, 3 down. No random spawn here.
"""

from __future__ import annotations

import numpy as np

LEFT, UP, RIGHT, DOWN = 0, 1, 2, 3


def slide_and_merge_line(line) -> tuple[list[int], int]:
    """Move a line of 4 exponents towards index 0, merging equal neighbours once.

    Pairs form from the side the tiles move towards, and a tile made by a merge does not
    merge again in the same move: `[1 1 1 1] -> [2 2 0 0]` (8 points), `[2 2 3 0] -> [3 3 0 0]`.

    Returns:
      `(new_line, points)`: the new line as a list of 4 ints and the merge points (sum of the
      values 2**k of the tiles created by merges).
    """
    tiles = [int(t) for t in line if int(t) != 0]
    out: list[int] = []
    points = 0
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            merged = tiles[i] + 1
            out.append(merged)
            points += 2**merged
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    while len(out) < 4:
        out.append(0)
    return out, points


def _line_cells(action: int) -> list[list[int]]:
    """Cell indices of the 4 lines for `action`, each listed from the side tiles move towards."""
    lines = []
    for k in range(4):
        if action == LEFT:  # row k, left to right
            cells = [4 * k + c for c in range(4)]
        elif action == RIGHT:  # row k, right to left
            cells = [4 * k + c for c in (3, 2, 1, 0)]
        elif action == UP:  # column k, top to bottom
            cells = [4 * r + k for r in range(4)]
        elif action == DOWN:  # column k, bottom to top
            cells = [4 * r + k for r in (3, 2, 1, 0)]
        else:
            raise ValueError(f"action must be 0..3, got {action}")
        lines.append(cells)
    return lines


def move(board16, action: int) -> tuple[np.ndarray, int]:
    """Apply one move (no spawn). Returns `(int32[16] board, points)`."""
    board = [int(x) for x in np.asarray(board16).reshape(16)]
    new_board = list(board)
    points = 0
    for cells in _line_cells(int(action)):
        new_line, p = slide_and_merge_line([board[c] for c in cells])
        for c, v in zip(cells, new_line, strict=True):
            new_board[c] = v
        points += p
    return np.array(new_board, dtype=np.int32), points


def legal_mask(board16) -> np.ndarray:
    """`bool[4]`: a move is legal iff it changes the board."""
    board = np.asarray(board16, dtype=np.int32).reshape(16)
    return np.array([not np.array_equal(move(board, a)[0], board) for a in range(4)], dtype=bool)


def is_terminal(board16) -> bool:
    """The game is over when no move is legal."""
    return not bool(legal_mask(board16).any())
