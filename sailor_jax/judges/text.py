"""A trajectory as one sentence of words and numbers: what the LLM judge is shown. Host-only."""

from __future__ import annotations

import numpy as np

from sailor_jax.types import TrajectoryBatch

CORNERS = (0, 3, 12, 15)
"""Cell indices of the board's corners (row-major, 4 x 4)."""


def summary_text(batch: TrajectoryBatch, index: int) -> str:
    """Describe trajectory `index` of a host batch in one sentence of words and numbers.

    Host-only. What a player would say of a game (or of a window of one, whose `score` is
    the window's points): its moves, points and points per move, the largest tile and the
    empty cells at its end, whether that tile sits in a corner, and whether the game ended.
    Example: ``200 moves, 2408 points (12.0 per move), largest tile 256 (in a corner),
    5 of 16 cells empty at the end, still going``. Never more than ~150 characters; the
    numbers come from the game alone (no reward, no theta).

    Args:
      batch: host `TrajectoryBatch` (boards `[M, L, 16]`, ...).
      index: which trajectory, `0 <= index < M`.
    """
    length = int(batch.lengths[index])
    final = np.asarray(batch.boards[index])[length].astype(np.int64)
    points = float(batch.score[index])
    per_move = points / length if length else 0.0
    top = int(final.max())
    tile = f"largest tile {1 << top}" if top else "no tile"
    corner = " (in a corner)" if top and any(final[c] == top for c in CORNERS) else ""
    empty = int(np.sum(final == 0))
    ending = "still going" if bool(batch.truncated[index]) else "game over"
    return (f"{length} moves, {points:.0f} points ({per_move:.1f} per move), {tile}{corner}, "
            f"{empty} of 16 cells empty at the end, {ending}")
