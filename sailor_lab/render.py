"""Animated SVG of a 2048 game: one frame per board, with the move number and score. Host-only.

`animated_svg(boards, scores)` is a pure function of the boards (tile exponents, as
`env.board_exponents` gives them) and the native score after each. It draws pgx's 2048 board
(`pgx.save_svg`: 50-pixel cells, grey tiles darkening with the exponent, bold Courier
numbers) at a fraction of the size: pgx draws every cell of every frame, about 3.5 KB a
frame (7 MB for a game of 2,000 moves), while here each tile value is drawn once in `<defs>`
and a frame is one `<use>` per occupied cell plus its text line, `move K  score X` (about
0.5 KB). As in `pgx.save_svg_animation`, the frames take turns being visible through one CSS
animation that loops; the last frame stays up `hold_seconds` longer before it restarts.

Structure (what `tests/test_watch.py` reads back): the root `<svg>`; `<defs>` with the style
and one `<g id="tK">` per tile exponent K drawn at the cell's top-left corner; the empty grid;
then frame i as `<g id="f{i:x}" class="frame">` holding `<use href="#tK" x=".." y="..">` for
each tile (cell `(row, col)` at `x = MARGIN + CELL * col`, `y = MARGIN + CELL * row`) and the
`<text>` line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

import numpy as np

CELL = 50
"""Cell size in pixels (pgx's GRID_SIZE)."""
MARGIN = 25
"""Space around the board (pgx: half a cell)."""
WIDTH = 4 * CELL + 2 * MARGIN
TEXT_HEIGHT = 30
"""The strip below the board holding the `move K  score X` line."""
HEIGHT = WIDTH + TEXT_HEIGHT
MAX_EXPONENT = 17
"""2**17 = 131072, the largest tile a 4x4 board can hold."""


def frame_text(move: int, score: float) -> str:
    """The text line of a frame: `move K  score X` (X the native score, a whole number)."""
    return f"move {move}  score {round(score)}"


def _grey(exponent: int) -> str:
    """pgx's tile fill: lighter grey for small tiles, black from 2048 on."""
    level = 242 - min(exponent, 11) * 22
    return f"#{level:02x}{level:02x}{level:02x}"


def _tile(exponent: int) -> str:
    """`<g id="tK">`: the tile 2**K at the origin (pgx's rect and number, centred)."""
    rect = (f'<rect x="2" y="2" width="{CELL - 4}" height="{CELL - 4}" rx="3" '
            f'fill="{_grey(exponent)}" stroke="black" stroke-width="0.5"/>')
    if exponent == 0:
        return f'<g id="t0">{rect}</g>'
    label = str(2**exponent)
    size = {4: 16, 5: 13, 6: 11}.get(len(label), 18)
    level = 145 + min(exponent, 11) * 10  # pgx: light numbers on the dark tiles
    color = "black" if exponent < 7 else f"#{level:02x}{level:02x}{level:02x}"
    text = (f'<text x="{CELL // 2}" y="{CELL // 2 + 6}" font-size="{size}px" '
            f'fill="{color}" class="n">{label}</text>')
    return f'<g id="t{exponent}">{rect}{text}</g>'


def _cell(index: int) -> tuple[int, int]:
    """`(x, y)` of cell `index` (row-major, row 0 on top)."""
    return MARGIN + CELL * (index % 4), MARGIN + CELL * (index // 4)


def _frame(i: int, board: np.ndarray, score: float) -> str:
    """Frame `i` (after move i): a `<use>` per tile of `board` and the text line."""
    uses = "".join('<use href="#t{}" x="{}" y="{}"/>'.format(int(e), *_cell(c))
                   for c, e in enumerate(board) if e)
    text = (f'<text x="{WIDTH // 2}" y="{WIDTH + TEXT_HEIGHT // 2 - 2}" '
            f'class="s">{frame_text(i, score)}</text>')
    return f'<g id="f{i:x}" class="frame">{uses}{text}</g>'


def _number(x: float) -> str:
    return f"{x:.10g}"


def _style(n: int, frame_seconds: float, hold_seconds: float) -> str:
    """The CSS: frame i is visible from `i * frame_seconds` for `frame_seconds` (the last
    one `hold_seconds` longer), then the loop restarts."""
    total = n * frame_seconds + hold_seconds
    css = [".n{font-family:Courier,monospace;font-weight:bold;text-anchor:middle}",
           ".s{font:bold 16px Courier,monospace;text-anchor:middle}"]
    if n == 1:
        return "".join(css)

    def keyframes(name: str, visible: float) -> str:
        shown = 100 * visible / total
        return (f"@keyframes {name}{{0%,{_number(shown)}%{{visibility:visible}}"
                f"{_number(shown * 1.000001)}%,100%{{visibility:hidden}}}}")

    css += [f".frame{{visibility:hidden;animation:{_number(total)}s linear k infinite}}",
            keyframes("k", frame_seconds), keyframes("kl", frame_seconds + hold_seconds)]
    css += [f"#f{i:x}{{animation-delay:{_number(i * frame_seconds)}s}}" for i in range(1, n)]
    css.append(f"#f{n - 1:x}{{animation-name:kl}}")
    return "".join(css)


def animated_svg(boards, scores: Sequence[float], frame_seconds: float = 0.1,
                 hold_seconds: float = 2.0, title: str = "") -> str:
    """An animated SVG (text) showing `boards` in turn, each with `move K  score X`.

    Args:
      boards: `[N, 16]` integer tile exponents (0 empty, k the tile 2**k; row-major, row 0
        on top): the start board, then the board after each of the N - 1 moves.
      scores: `[N]` native game score after each board's move (0 for the start board).
      frame_seconds: how long each frame shows.
      hold_seconds: how much longer the last frame shows before the loop restarts.
      title: the SVG's `<title>` (shown as a tooltip), none if empty.

    Returns:
      The SVG document (`WIDTH x HEIGHT` pixels), frame i captioned `move i  score X`.

    Raises:
      ValueError: `boards` is not `[N, 16]` with N >= 1 or holds an exponent outside
        0..17, `scores` is not `[N]`, `frame_seconds` is not a positive finite number or
        `hold_seconds` a finite one >= 0.
    """
    boards, scores = np.asarray(boards), np.asarray(scores, np.float64)
    if boards.ndim != 2 or boards.shape[1] != 16 or len(boards) < 1:
        raise ValueError(f"boards must be [N, 16] with N >= 1, got shape {boards.shape}")
    if not np.issubdtype(boards.dtype, np.integer) or boards.min() < 0 \
            or boards.max() > MAX_EXPONENT:
        raise ValueError(f"boards must hold integer tile exponents 0..{MAX_EXPONENT}")
    if scores.shape != (len(boards),):
        raise ValueError(f"scores must be [{len(boards)}], one per board, got {scores.shape}")
    if not (math.isfinite(frame_seconds) and frame_seconds > 0):
        raise ValueError(f"frame_seconds must be positive, got {frame_seconds}")
    if not (math.isfinite(hold_seconds) and hold_seconds >= 0):
        raise ValueError(f"hold_seconds must be >= 0, got {hold_seconds}")
    used = sorted({int(e) for e in np.unique(boards)} | {0})
    grid = "".join('<use href="#t0" x="{}" y="{}"/>'.format(*_cell(c)) for c in range(16))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" xml:space="preserve">',
             f"<title>{escape(title)}</title>" if title else "",
             f"<defs><style>{_style(len(boards), frame_seconds, hold_seconds)}</style>",
             *(_tile(e) for e in used), "</defs>",
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>', grid]
    parts += [_frame(i, board, score) for i, (board, score)
              in enumerate(zip(boards, scores, strict=True))]
    return "\n".join([*filter(None, parts), "</svg>", ""])
