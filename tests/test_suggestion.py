"""Tests for `sailor_jax.alignment.suggestion`: the refinement advisor's answer parser reads
"raise/lower <feature>", skips negated directions, never raises for any text, and runs in
linear time (bounded here: < 1 s on 1 MB of adversarial text)."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sailor_jax.alignment.suggestion import Suggestion, parse_suggestion
from sailor_jax.game.reward import RewardSpec

SPEC = RewardSpec()
NAMES = list(SPEC.names)
SECONDS = 1.0  # generous bound against hangs
N = 1_000_000


def _random_text(n: int, seed: int, encoding: str) -> str:
    return random.Random(seed).randbytes(n).decode(encoding, errors="replace")


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


@pytest.mark.parametrize("text, feature, direction", [
    ("raise empty_cells", "empty_cells", 1),
    ("RAISE EmptyCells", "empty_cells", 1),
    ("I would LOWER the weight of monotonicity.", "monotonicity", -1),
    ("Answer: increase `max tile in corner` so the agent keeps its tile there",
     "max_tile_in_corner", 1),
    ("The smoothness weight should be higher.", "smoothness", 1),
    ("reduce merges-available, then raise score_gain", "merges_available", -1),
    ("Decreasing the Game Over weight helps", "game_over", -1),
])
def test_parse_suggestion_reads_direction_and_feature(text, feature, direction):
    suggestion, reason = parse_suggestion(text, SPEC)
    assert reason == ""
    assert suggestion == Suggestion(feature, NAMES.index(feature), direction)


@pytest.mark.parametrize("text", [
    "", "I like turtles", "Move down, then left, keep the max tile in the lower left corner",
    "raise the stakes", "empty_cells", "raise the empty",
])
def test_parse_suggestion_rejects_invalid_answers(text):
    suggestion, reason = parse_suggestion(text, SPEC)
    assert suggestion is None and "found" in reason


def test_parse_suggestion_rejects_fixed_features():
    spec = SPEC.with_tunable(("empty_cells",))
    suggestion, reason = parse_suggestion("raise score_gain", spec)
    assert suggestion is None and "not tunable" in reason
    assert parse_suggestion("raise empty cells", spec)[0].feature == "empty_cells"



@pytest.mark.parametrize(
    "text, feature, direction",
    [
        ("don't raise empty_cells, lower it", "empty_cells", -1),
        ("do not lower smoothness; raise it", "smoothness", 1),
        ("Rather than lowering smoothness, raise empty cells", "empty_cells", 1),
        ("I would never decrease monotonicity. Increase score gain.", "score_gain", 1),
        ("No, raise empty_cells", "empty_cells", 1),  # "No," ends its clause
        ("I don’t think so: lower game_over", "game_over", -1),  # curly apostrophe
        ("raise max tile increase", "max_tile_increase", 1),  # "increase" in a name is no verb
    ],
)
def test_parse_suggestion_skips_negated_directions(text, feature, direction):
    assert parse_suggestion(text, SPEC) == (
        Suggestion(feature, NAMES.index(feature), direction),
        "",
    )


@pytest.mark.parametrize(
    "text",
    [
        "never lower monotonicity",  # a negated instruction alone is no suggestion
        "I would not raise score_gain",
        "There is no need to raise smoothness",
        "empty_cells should not be higher",
        "monotonicity: never lower it",
        "lower it",  # nothing named before "it"
    ],
)
def test_parse_suggestion_negated_or_unnamed_gives_none(text):
    suggestion, reason = parse_suggestion(text, SPEC)
    assert suggestion is None and "found" in reason


@pytest.mark.parametrize("text", [b"raise empty_cells", None, 3])
def test_parse_suggestion_non_str_gives_reason(text):
    suggestion, reason = parse_suggestion(text, SPEC)
    assert suggestion is None and "not a str" in reason


@pytest.mark.parametrize(
    "name", ["raise", "dont_raise_it", "empty_spaces", "max_tile", "spaces", "random_utf8"]
)
def test_parse_suggestion_adversarial_megabyte_returns_fast(name):
    text = {
        "raise": lambda: "raise " * (N // 6),
        "dont_raise_it": lambda: "don't raise it " * (N // 15),
        "empty_spaces": lambda: "empty" + " " * N + "cells",
        "max_tile": lambda: "max tile in " * (N // 12),
        "spaces": lambda: " " * N,
        "random_utf8": lambda: _random_text(N, 2, "utf-8"),
    }[name]()
    (suggestion, _), seconds = _timed(parse_suggestion, text, SPEC)
    assert seconds < SECONDS, f"{name}: {seconds:.2f} s"


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=200),
        st.lists(
            st.sampled_from(
                [
                    "raise",
                    "lower",
                    "don't",
                    "not",
                    "it",
                    "empty_cells",
                    "smoothness",
                    ",",
                    ";",
                    " ",
                    "\n",
                ]
            ),
            max_size=30,
        ).map(" ".join),
    )
)
def test_parse_suggestion_never_raises(text):
    suggestion, reason = parse_suggestion(text, SPEC)
    assert (suggestion is None) != (reason == "")
    assert suggestion is None or suggestion.feature in NAMES
