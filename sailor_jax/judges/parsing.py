"""Strict, linear-time parsing of an LLM's listwise answer into a ranking.

Host-only, pure. `parse_ranking(text, m)` returns a permutation of `0..m-1` (best first) only
when the text states a complete, valid ranking of the `m` trajectories; otherwise None. It never
invents, completes or repairs an order, and never raises for any `text`.

Input. Only the last `MAX_CHARS` characters are read (answers end the text). The text is cut
into tokens by one regex whose alternatives are plain character runs, so time is linear in
the input (no nested or adjacent quantifiers that can backtrack).

A ranking segment is a list of labels and separators and nothing else:

* label: an integer written "3", "T3", "T 3", "#3", "Trajectory 3" or "traj. 3";
* separators: whitespace, `, ; > | / → -` (">" and "->" chains included), the words "and" and
  "then", and markdown decoration `*` and backticks; a "." may end the segment;
* two labels need a separator between them ("T3T1" is not a list).

Any other word or symbol ("I cannot decide, 2 and 3 are similar"), a decimal ("1.5"), a signed
number ("-1"), quotes (JSON strings) or a label of more than 6 digits make the segment no
ranking. Its labels must be exactly `1..m` (1-based, as the prompts number them) or exactly
`0..m-1` (0-based) in some order: a repeated, missing or out-of-range label rejects it.

Where a segment is looked for ("Final Ranking: I cannot decide" gives None): when the text
contains "Final Ranking", only the text after its last occurrence is searched. Candidates, in
order (the first valid one wins; `parse_ranking_verbose` names it):

1. "final_ranking": the rest of that phrase's line (a leading "(...)" without digits, ":" and
   "is" dropped), or if blank the next non-empty line; its first `[...]` if it has one.
2. "brackets": the contents of each `[...]`, the last one first ("[3, 1, 2]").
3. "numbered": runs of lines "1. T2", "2. T3", ..., each line only a position and one label,
   numbered exactly 1..m, the last run first; a run counting past m is an enumeration.
4. "line": each line after its last ":", the last line first ("Best: T3 > T1 > T2").
5. "whole_text": the whole (searched) text after its last ":" ("Ranking:\\n3\\n1\\n2").
"""

from __future__ import annotations

import re
from numbers import Integral

import numpy as np

MAX_CHARS = 20_000
"""Characters read from the end of the answer; earlier text is ignored."""

MAX_LABEL_CHARS = 200
"""Characters of a short label answer `parse_label` reads."""

MAX_DIGITS = 6
"""A longer run of digits is never a label (and is never converted with `int`)."""

_TOKEN = re.compile(r"([0-9]+(?:\.[0-9]+)?)|([^\W\d_]+)|(\s+)|(.)", re.DOTALL)
_FINAL = re.compile(r"final[\s_*-]{1,8}ranking", re.IGNORECASE)
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_PREFIXES = frozenset({"trajectory", "traj", "t"})
_SEPARATOR_WORDS = frozenset({"and", "then"})
_SEPARATORS = frozenset(",;>|/→-–—")
_DECORATION = frozenset("*`")
_SIGNS = frozenset("-+−")
_NUM, _WORD, _SPACE = 1, 2, 3  # token kinds: the group of `_TOKEN` that matched


def _tokens(segment: str) -> list[tuple[int, str]]:
    """`(kind, text)` tokens: `_NUM` (digits; "1.5" too), `_WORD` (letters), `_SPACE`, 4 (other)."""
    return [(match.lastindex, match.group()) for match in _TOKEN.finditer(segment)]


def _label_at(tokens: list[tuple[int, str]], i: int) -> tuple[int | None, int]:
    """Read the label starting at token `i`: `(value or None if not a label, next index)`."""
    kind, text = tokens[i]
    if kind == _WORD and text.lower() in _PREFIXES or text == "#":
        i += 1
        if text.lower() == "traj" and i < len(tokens) and tokens[i][1] == ".":
            i += 1
        if i < len(tokens) and tokens[i][0] == _SPACE and text != "#":
            i += 1
        if i >= len(tokens):
            return None, i
        kind, text = tokens[i]
    if kind != _NUM or not text.isdigit() or len(text) > MAX_DIGITS:
        return None, i + 1
    return int(text), i + 1


def _labels(segment: str) -> list[int] | None:
    """The labels of `segment` in order if it is a pure list (see module docstring), else None."""
    tokens = _tokens(segment)
    labels: list[int] = []
    separated, i = True, 0
    while i < len(tokens):
        kind, text = tokens[i]
        if kind == _SPACE or text in _DECORATION:
            separated, i = True, i + 1
        elif (
            text in _SIGNS
            and i + 1 < len(tokens)
            and tokens[i + 1][0] == _NUM
            and (i == 0 or tokens[i - 1][0] != _NUM)
        ):
            return None  # "-1": a signed number
        elif text in _SEPARATORS or kind == _WORD and text.lower() in _SEPARATOR_WORDS:
            separated, i = True, i + 1
        elif text == ".":
            rest = tokens[i + 1 :]
            ok = all(k == _SPACE or t in _DECORATION for k, t in rest)
            return labels if ok and labels else None
        else:
            label, i = _label_at(tokens, i)
            if label is None or not separated:
                return None
            labels.append(label)
            separated = False
    return labels or None


def _order(labels: list[int] | None, m: int) -> np.ndarray | None:
    """`int32[m]` 0-based order if `labels` is a permutation of `1..m` or of `0..m-1`."""
    if labels is None or len(labels) != m:
        return None
    distinct = set(labels)
    for base in (1, 0):
        if distinct == set(range(base, base + m)):
            return np.asarray(labels, dtype=np.int32) - base
    return None


def _after_colon(line: str) -> str:
    """The part of `line` after its last ":" ("Best: T3 > T1" -> " T3 > T1"); all if none."""
    return line.rpartition(":")[2]


def _final_segment(rest: str) -> str | None:
    """The answer segment after a "Final Ranking" phrase (`rest`: the text after it)."""
    lines = rest.split("\n")
    first = lines[0].lstrip()
    if first.startswith("(") and ")" in first:
        inner, _, after = first[1:].partition(")")
        first = first if any(c.isdigit() for c in inner) else after
    first = first.lstrip(" \t*:=")
    if first[:3].lower() == "is ":
        first = first[3:].lstrip(" \t*:=")
    if not first.strip(" \t*.:"):
        first = next((line for line in lines[1:] if line.strip()), None)
        if first is None:
            return None
    bracket = _BRACKETS.search(first)
    return bracket.group(1) if bracket is not None else _after_colon(first)


def _numbered_runs(lines: list[str]) -> list[list[int]]:
    """Label lists of runs of "k. <label>" lines numbered 1, 2, ... (blank lines skipped)."""
    runs: list[list[int]] = []
    current: list[int] | None = None
    for line in lines:
        if not line.strip():
            continue
        head, sep, tail = line.strip().partition(" ")
        position = head[:-1] if head[-1:] in ".)" else ""
        label = _labels(tail) if sep and position.isdigit() and len(position) <= 3 else None
        if label is None or len(label) != 1:
            current = None
            continue
        if int(position) == 1:
            current = []
            runs.append(current)
        elif current is None or int(position) != len(current) + 1:
            current = None
            continue
        current.append(label[0])
    return runs


def _candidates(text: str):
    """Yield `(strategy, labels or None)` in priority order (lazily; see module docstring)."""
    end = max((match.end() for match in _FINAL.finditer(text)), default=None)
    if end is not None:
        text = text[end:]
        segment = _final_segment(text)
        if segment is not None:
            yield "final_ranking", _labels(segment)
    for inner in reversed(_BRACKETS.findall(text)):
        yield "brackets", _labels(inner)
    lines = text.split("\n")
    for run in reversed(_numbered_runs(lines)):
        yield "numbered", run
    for line in reversed(lines):
        if any(c.isdigit() for c in line):
            yield "line", _labels(_after_colon(line))
    yield "whole_text", _labels(_after_colon(text))


def _check_m(m: object) -> int:
    """`m` as an int; raises TypeError (not an int, or a bool) or ValueError (`m < 1`)."""
    if isinstance(m, bool) or not isinstance(m, Integral):
        raise TypeError(f"m must be a positive int (number of trajectories), got {m!r}")
    if m < 1:
        raise ValueError(f"m must be a positive int (number of trajectories), got {m!r}")
    return int(m)


def parse_ranking_verbose(text: str, m: int) -> tuple[np.ndarray | None, str]:
    """Like `parse_ranking`, also naming the strategy that succeeded.

    Returns:
      `(order or None, strategy)` with strategy one of "final_ranking", "brackets",
      "numbered", "line", "whole_text", or "none" when no candidate is a ranking.

    Raises:
      TypeError, ValueError: as `parse_ranking`, for a bad `m`.
    """
    m = _check_m(m)
    if not isinstance(text, str):
        return None, "none"
    for strategy, labels in _candidates(text[-MAX_CHARS:]):
        order = _order(labels, m)
        if order is not None:
            return order, strategy
    return None, "none"


def parse_ranking(text: str, m: int) -> np.ndarray | None:
    """Parse an LLM's ranking answer over `m` trajectories.

    Host-only, pure; time linear in `len(text)` (only the last `MAX_CHARS` characters are
    read). Never raises for any `text`: a non-str `text` (bytes, None, ...) gives None.

    Args:
      text: the model's raw answer.
      m: number of trajectories ranked (labelled 1..m in the prompt), a positive int.

    Returns:
      `int32[m]` 0-based trajectory indices, best first (a permutation of `0..m-1`), or None
      when the text states no complete, valid ranking (module docstring).

    Raises:
      TypeError: `m` is not an int (None, float, bool, str, ...).
      ValueError: `m < 1`.

    Example:
      >>> parse_ranking("Final Ranking (most strategic first): [3, 1, 2]", 3).tolist()
      [2, 0, 1]
    """
    return parse_ranking_verbose(text, m)[0]


def parse_label(text: str, labels: list[str]) -> int | None:
    """Index of the first of `labels` that stands alone in a short answer, else None.

    Host-only, pure; reads the first `MAX_LABEL_CHARS` characters. A label counts where no
    letter or digit touches it ("A", "Trajectory B.", "**7**"; not "Answer" or "17").
    Used for judges whose server returns no log-probabilities (`judges.endpoint`).

    Example:
      >>> parse_label(" Trajectory B is better", ["A", "B"])
      1
    """
    if not isinstance(text, str) or not labels:
        return None
    found = [(m.start(), k) for k, label in enumerate(labels)
             if (m := re.search(rf"(?<![^\W_]){re.escape(label)}(?![^\W_])",
                                text[:MAX_LABEL_CHARS]))]
    return min(found)[1] if found else None
