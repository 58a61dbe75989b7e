"""Trajectories as compact, bounded text for an LLM judge.

Host-only. A trajectory is shown as a summary line, the move sequence as letters (L left,
U up, R right, D down), board snapshots every `k` moves plus the final board, and a note that
says how much was shown. A board snapshot reads `t<moves made> s<score so far>` followed by
the 4 rows top to bottom, separated by `|`; each cell is its tile exponent as one base-36
character (`1` = tile 2, `a` = tile 1024, `b` = 2048) and `.` is an empty cell. Example (a
finished random game of 169 moves, `snapshot_every=40`, `max_chars=380`, so the moves are cut)::

    length 169 moves, final score 1652, max tile 128, game over
    moves: RLDRLRULUUDURLULDLULDUUULDRRRUDLDUUUDLDLDLLDLUUUDDRDURLLLRUULDDULUDRL...(+100 more)
    t40 s260 21..|52.1|51..|1212
    t80 s704 1..2|...6|2141|3263
    t120 s1216 34..|261.|41.1|2472
    t160 s1608 2121|4642|256.|7311
    t169 s1652 1232|3643|4256|1732 (final)
    (snapshots every 40 moves; moves 1-69 of 169 shown)

The text never exceeds `max_chars`: when the trajectory is too long, the snapshot interval is
doubled until the snapshots fit in about 60% of the budget, and the move string is cut with an
explicit `...(+N more)` marker; the last line always states the interval and the moves shown.
`FORMAT_LEGEND` explains the notation once per prompt.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sailor_jax.types import TrajectoryBatch

MOVE_LETTERS = "LURD"
"""Letter of each action: 0 left, 1 up, 2 right, 3 down."""

MIN_CHARS = 240
"""Smallest allowed `max_chars`: the summary, final board and note always fit in it."""

FORMAT_LEGEND = (
    "Notation: moves are letters (L left, U up, R right, D down). A board line "
    "'t40 s280 515.|331.|2...|..1.' is the board after 40 moves with score 280, rows top to "
    "bottom separated by '|'; each cell is the tile exponent in base 36 (1 = tile 2, 2 = 4, "
    "9 = 512, a = 1024, b = 2048) and '.' is an empty cell."
)
"""One-paragraph explanation of the trajectory text, for prompts."""

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_SNAPSHOT_SHARE = 0.6


def board_text(board: np.ndarray) -> str:
    """Render one board as `'515.|331.|2...|..1.'`.

    Host-only.

    Args:
      board: `[16]` integer tile exponents, row-major, row 0 on top (0 = empty).

    Returns:
      19 characters: 4 rows of 4 base-36 exponents ('.' for empty) joined by '|'.

    Raises:
      ValueError: wrong size, or an exponent outside 0..35.
    """
    cells = np.asarray(board).reshape(-1).astype(np.int64)
    if cells.shape != (16,) or cells.min() < 0 or cells.max() >= len(_DIGITS):
        raise ValueError(f"board must be 16 exponents in 0..35, got {np.asarray(board)}")
    chars = ["." if e == 0 else _DIGITS[e] for e in cells.tolist()]
    return "|".join("".join(chars[r * 4 : (r + 1) * 4]) for r in range(4))


def moves_text(actions: np.ndarray) -> str:
    """Render actions `[T]` int (0..3; negative = padding, skipped) as letters. Host-only."""
    return "".join(MOVE_LETTERS[a] for a in np.asarray(actions).tolist() if 0 <= a < 4)


def trajectory_text(
    batch: TrajectoryBatch, index: int, *, snapshot_every: int = 20, max_chars: int = 1500
) -> str:
    """Render trajectory `index` of a host batch as bounded text (format in the module doc).

    Host-only.

    Args:
      batch: host `TrajectoryBatch` (boards `[M, L, 16]`, actions `[M, L-1]`, ...).
      index: which trajectory, `0 <= index < M`.
      snapshot_every: preferred interval between board snapshots, in moves (>= 1).
      max_chars: hard upper bound on the length of the returned text (>= `MIN_CHARS`).

    Returns:
      Text of at most `max_chars` characters.

    Raises:
      ValueError: `snapshot_every < 1` or `max_chars < MIN_CHARS`.
    """
    if snapshot_every < 1:
        raise ValueError(f"snapshot_every must be >= 1, got {snapshot_every}")
    if max_chars < MIN_CHARS:
        raise ValueError(f"max_chars must be >= {MIN_CHARS}, got {max_chars}")
    length = int(batch.lengths[index])
    boards = np.asarray(batch.boards[index])
    moves = moves_text(np.asarray(batch.actions[index])[:length])
    gains = np.asarray(batch.score_gains[index], dtype=np.float64)[:length]
    score_so_far = np.concatenate([[0.0], np.cumsum(gains)])
    final_score = float(batch.score[index])
    state = "truncated (game not over)" if bool(batch.truncated[index]) else "game over"
    header = (
        f"length {length} moves, final score {final_score:.0f}, "
        f"max tile {int(batch.max_tile[index])}, {state}"
    )
    final = f"t{length} s{final_score:.0f} {board_text(boards[length])} (final)"

    def snapshot(t: int) -> str:
        return f"t{t} s{score_so_far[t]:.0f} {board_text(boards[t])}"

    budget = max_chars - len(header) - len(final) - 80  # 80: the move prefix and the note
    for _ in range(16):
        every, n_shown = _plan(length, len(moves), snapshot_every, budget, snapshot)
        text = _render(header, final, moves, n_shown, every, length, snapshot)
        if len(text) <= max_chars:
            return text
        budget -= len(text) - max_chars
    return text[:max_chars]  # unreachable for max_chars >= MIN_CHARS; a hard stop


def _plan(
    length: int, n_moves: int, every: int, budget: int, snapshot: Callable[[int], str]
) -> tuple[int, int]:
    """Pick the snapshot interval and how many move letters fit in `budget` characters."""
    budget = max(budget, 0)

    def snapshots_chars(k: int) -> int:
        return sum(len(snapshot(t)) + 1 for t in range(k, length, k))

    while every < length and snapshots_chars(every) > max(
        budget - n_moves, budget * _SNAPSHOT_SHARE
    ):
        every *= 2
    room = budget - (snapshots_chars(every) if every < length else 0)
    if n_moves <= room:
        return every, n_moves
    marker = len(f"...(+{n_moves} more)")
    return every, max(0, room - marker)


def _render(
    header: str,
    final: str,
    moves: str,
    n_shown: int,
    every: int,
    length: int,
    snapshot: Callable[[int], str],
) -> str:
    """Assemble the lines of `trajectory_text`."""
    if not moves:
        move_line = "moves: (none)"
    elif n_shown < len(moves):
        move_line = f"moves: {moves[:n_shown]}...(+{len(moves) - n_shown} more)"
    else:
        move_line = f"moves: {moves}"
    lines = [header, move_line]
    lines += [snapshot(t) for t in range(every, length, every)]
    lines.append(final)
    shown = f"moves 1-{n_shown} of {length} shown" if n_shown else f"no moves of {length} shown"
    lines.append(f"(snapshots every {every} moves; {shown})")
    return "\n".join(lines)


def fit_trajectory_text(
    batch: TrajectoryBatch,
    index: int,
    token_budget: int,
    count_tokens: Callable[[str], int],
    snapshot_every: int = 20,
) -> str:
    """Render trajectory `index` in at most `token_budget` tokens, shrinking as needed.

    Host-only. Starts from `4 * token_budget` characters and shrinks the character budget in
    proportion to the overshoot (fewer snapshots, fewer moves) until the text fits.

    Args:
      batch: host `TrajectoryBatch`.
      index: which trajectory.
      token_budget: most tokens the text may take (>= 1).
      count_tokens: the tokenizer's counter, `text -> number of tokens`.
      snapshot_every: preferred interval between snapshots, in moves.

    Raises:
      ValueError: even the `MIN_CHARS` rendering takes more than `token_budget` tokens.
    """
    chars = max(MIN_CHARS, 4 * token_budget)
    while True:
        text = trajectory_text(batch, index, snapshot_every=snapshot_every, max_chars=chars)
        n = count_tokens(text)
        if n <= token_budget:
            return text
        if chars == MIN_CHARS:
            raise ValueError(f"the shortest trajectory text takes {n} > {token_budget} tokens")
        chars = max(MIN_CHARS, min(len(text) - 1, int(len(text) * token_budget / n)))


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
