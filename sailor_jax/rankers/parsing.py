"""Robust parsing of an LLM's listwise answer into a ranking.

Host-only, pure. `parse_ranking(text, m)` never raises on any text and returns either a
permutation of `0..m-1` (best first) or None; it never invents an order.

Strategies, tried in order (the first that yields a ranking wins):

1. The last "Final Ranking" line: the numbers after the phrase on that line (or, if that line
   holds none, on the next non-empty line).
2. Bracketed lists `[...]`, the last one first.
3. Single lines that name every trajectory, the last line first (e.g. "T2 > T1 > T3").
4. The whole text.

Numbers may be written "3", "T3", "#3", "Trajectory 3" or "traj. 3". Each candidate list is
read as 1-based indices (the prompts number trajectories from 1) and as 0-based indices:
out-of-range numbers are ignored and repeated indices keep their first occurrence. A reading
that names all `m` indices wins (1-based first). In strategies 1 and 2 only (an explicit answer
list), a list that names all but one index is completed by appending the missing one, since
the last place is then implied; 3 and 4 require all `m` indices and reject a candidate that
also names trajectory `m + 1` (a model counting past the real trajectories, "1 ... 2 ... 3 ...
4 ...", is enumerating, not ranking). `parse_ranking_verbose` also says which strategy won.
"""

from __future__ import annotations

import re

import numpy as np

_NUMBER = re.compile(
    r"(?<![A-Za-z0-9.])(?:trajectory|traj\.?|t|#)?\s*(\d{1,6})(?![0-9])", re.IGNORECASE
)
_FINAL = re.compile(r"final\s+ranking", re.IGNORECASE)
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")


def _numbers(segment: str) -> list[int]:
    """All integers in `segment`, in order, with optional trajectory prefixes."""
    return [int(match) for match in _NUMBER.findall(segment)]


def _reading(numbers: list[int], m: int, base: int) -> list[int]:
    """Distinct in-range 0-based indices of `numbers` read with index base `base` (0 or 1)."""
    seen: list[int] = []
    for n in numbers:
        index = n - base
        if 0 <= index < m and index not in seen:
            seen.append(index)
    return seen


def interpret(numbers: list[int], m: int, allow_completion: bool) -> np.ndarray | None:
    """Turn a list of trajectory numbers into a permutation of `0..m-1`, or None.

    Host-only, pure. See the module docstring for the rules.

    Args:
      numbers: integers as written in the answer.
      m: number of trajectories (>= 1).
      allow_completion: accept a list missing exactly one index and append it.

    Returns:
      `int32[m]` order (best first), or None.
    """
    readings = [_reading(numbers, m, 1), _reading(numbers, m, 0)]
    for reading in readings:
        if len(reading) == m:
            return np.asarray(reading, dtype=np.int32)
    if allow_completion and m >= 2:
        for reading in readings:
            if len(reading) == m - 1:
                missing = sorted(set(range(m)) - set(reading))
                return np.asarray(reading + missing, dtype=np.int32)
    return None


def _final_ranking_segment(text: str) -> str | None:
    """Text after the last 'Final Ranking' on its line, or the next non-empty line."""
    matches = list(_FINAL.finditer(text))
    if not matches:
        return None
    rest = text[matches[-1].end() :]
    lines = rest.split("\n")
    for line in lines[:1] + [line for line in lines[1:] if line.strip()][:1]:
        line = re.sub(r"\([^)0-9]*\)", "", line)  # drop "(most strategic first)"
        bracket = _BRACKETS.search(line)
        if bracket is not None:
            return bracket.group(1)
        if _numbers(line):
            return line
    return None


def parse_ranking_verbose(text: str, m: int) -> tuple[np.ndarray | None, str]:
    """Like `parse_ranking`, also naming the strategy that succeeded.

    Returns:
      `(order or None, strategy)` with strategy one of "final_ranking", "brackets", "line",
      "whole_text" or "none".
    """
    if not isinstance(text, str) or m < 1:
        return None, "none"
    candidates: list[tuple[str, str, bool]] = []  # (strategy, segment, explicit answer list)
    segment = _final_ranking_segment(text)
    if segment is not None:
        candidates.append(("final_ranking", segment, True))
    candidates += [("brackets", inner, True) for inner in reversed(_BRACKETS.findall(text))]
    candidates += [("line", line, False) for line in reversed(text.splitlines())]
    candidates.append(("whole_text", text, False))
    for strategy, segment, explicit in candidates:
        numbers = _numbers(segment)
        if not explicit and m + 1 in numbers:
            continue
        order = interpret(numbers, m, allow_completion=explicit)
        if order is not None:
            return order, strategy
    return None, "none"


def parse_ranking(text: str, m: int) -> np.ndarray | None:
    """Parse an LLM's ranking answer over `m` trajectories.

    Host-only, pure; never raises for any `text`.

    Args:
      text: the model's raw answer.
      m: number of trajectories ranked (labelled 1..m in the prompt).

    Returns:
      `int32[m]` 0-based trajectory indices, best first (a permutation of `0..m-1`), or None
      when no strategy finds a ranking.

    Example:
      >>> parse_ranking("Final Ranking (most strategic first): [3, 1, 2]", 3).tolist()
      [2, 0, 1]
    """
    return parse_ranking_verbose(text, m)[0]
