"""Reading the refinement advisor's free-text answer: "raise <feature>" / "lower <feature>".

Host-only, pure. `parse_suggestion` turns an LLM's answer into a `Suggestion` (which tunable
weight to move, and which way) or says why it found none; it never raises for any text.
Used by `refinement` (LLM-guided reward refinement).
"""

from __future__ import annotations

import bisect
import dataclasses
import re

from sailor_jax.game.reward import RewardSpec

# No "up"/"down"/"more"/"less": in 2048 answers those are usually moves or tile counts.
RAISE_WORDS = ("raise", "raising", "increase", "increasing", "higher")
LOWER_WORDS = ("lower", "lowering", "decrease", "decreasing", "reduce", "reducing")
NEGATIONS = frozenset(("not", "never", "no", "don't", "dont", "shouldn't", "shouldnt", "won't",
                       "wouldn't", "cannot", "can't", "mustn't", "avoid", "avoiding", "instead",
                       "rather", "without", "nor"))
"""A direction word with one of these among the 3 words before it in its clause is skipped."""
PRONOUNS = frozenset(("it", "its", "that", "this", "them"))
"""A direction word followed by one of these refers to the last feature named before it."""
SUGGESTION_MAX_CHARS = 20_000
"""Characters of an advisor answer read, from its start (the first suggestion wins)."""
_DIRECTION = re.compile(r"\b(" + "|".join(RAISE_WORDS + LOWER_WORDS) + r")\b")
_CLAUSE_ENDS = ".,;:!?()\n"
_WORD = re.compile(r"[a-z']+")


@dataclasses.dataclass(frozen=True)
class Suggestion:
    """A parsed advisor answer: change weight `feature` (index `index`) by `direction` (+1/-1)."""

    feature: str
    index: int
    direction: int


def _feature_pattern(name: str) -> re.Pattern:
    words = name.split("_")
    return re.compile(r"\b" + r"[\s_-]*".join(map(re.escape, words)) + r"s?\b")


def _negated(low: str, start: int) -> bool:
    """Whether a `NEGATIONS` word is among the 3 words before `start`, in the same clause."""
    before = low[max(0, start - 48):start]
    cut = max(before.rfind(c) for c in _CLAUSE_ENDS)
    return any(w in NEGATIONS for w in _WORD.findall(before[cut + 1:])[-3:])


def _directions(low: str, mentions: list[tuple[int, str, int]]) -> list[tuple[int, int, int]]:
    """`(start, end, sign)` of direction words that are neither negated nor inside a name."""
    starts = [start for start, _, _ in mentions]
    out = []
    for match in _DIRECTION.finditer(low):
        k = bisect.bisect_right(starts, match.start()) - 1
        inside = k >= 0 and mentions[k][2] > match.start()  # "max tile increase"
        if not inside and not _negated(low, match.start()):
            out.append((match.start(), match.end(), 1 if match.group(1) in RAISE_WORDS else -1))
    return out


def _direction_first(low: str, mentions: list, directions: list) -> tuple[str, int] | None:
    """The first direction word with a feature within 60 characters after it, or "it".

    `mentions`: feature names found, `(start, name, end)` sorted; `directions`: `_directions`.
    """
    starts = [start for start, _, _ in mentions]
    for start, end, sign in directions:
        words = low[end:end + 12].split(None, 1)
        if words and words[0].strip(".,;:!?*`'\"") in PRONOUNS:
            k = bisect.bisect_left(starts, start) - 1
        else:
            k = bisect.bisect_left(starts, end)
            k = k if k < len(mentions) and mentions[k][2] <= end + 60 else -1
        if k >= 0:
            return mentions[k][1], sign
    return None


def _feature_first(mentions: list, directions: list) -> tuple[str, int] | None:
    """The first feature with a direction word within 40 characters after it."""
    starts = [start for start, _, _ in directions]
    for _, name, end in mentions:
        j = bisect.bisect_left(starts, end)
        if j < len(directions) and directions[j][1] <= end + 40:
            return name, directions[j][2]
    return None


def parse_suggestion(text: str, spec: RewardSpec) -> tuple[Suggestion | None, str]:
    """Read "raise <feature>" / "lower <feature>" from free text. Host-only.

    Reads the first `SUGGESTION_MAX_CHARS` characters, lower-cased; time linear in them.
    Direction words (`RAISE_WORDS`, `LOWER_WORDS`) are skipped when negated (a `NEGATIONS` word
    among the 3 words before, same clause: "don't raise x", "never lower x", "rather than
    lowering x"); a negated instruction alone is no suggestion. Takes the first direction word
    followed within 60 characters by a feature name (underscores, spaces or hyphens between
    its words; case-insensitive), or by a pronoun (`PRONOUNS`), which names the last feature
    mentioned before it ("don't raise empty_cells, lower it" lowers empty_cells); otherwise the
    first feature name followed within 40 characters by a direction word ("empty_cells should
    be higher"). The named feature must be tunable.

    Returns:
      `(Suggestion, "")`, or `(None, reason)` when nothing valid was found or `text` is not a
      str (never raises for any `text`).
    """
    if not isinstance(text, str):
        return None, f"answer is not a str ({type(text).__name__})"
    low = text[:SUGGESTION_MAX_CHARS].lower().replace("\u2019", "'")
    mentions = sorted((hit.start(), name, hit.end()) for name in spec.names
                      for hit in _feature_pattern(name).finditer(low))
    directions = _directions(low, mentions)
    found = _direction_first(low, mentions, directions) or _feature_first(mentions, directions)
    if found is None:
        return None, "no 'raise/lower <feature>' found"
    name, sign = found
    index = list(spec.names).index(name)
    if not spec.tunable[index]:
        return None, f"feature {name!r} is not tunable"
    return Suggestion(name, index, sign), ""
