"""Hardening of the judge's listwise answer parser: `judges.parsing.
parse_ranking` gives an answer only when the text states one, never raises for any text, and
runs in linear time (bounded here: < 1 s on 1 MB of adversarial text)."""

from __future__ import annotations

import random
import re
import time

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges.parsing import MAX_CHARS, parse_ranking, parse_ranking_verbose

SPEC = RewardSpec()
NAMES = list(SPEC.names)
SECONDS = 10.0
"""A bound against hangs, not a speed target: the old parser took 12 s on 20k spaces (and
would take hours on a megabyte); linear parsing takes ~0.3 s quiet, 1.2 s was seen under load."""
N = 1_000_000


def _random_text(n: int, seed: int, encoding: str) -> str:
    data = random.Random(seed).randbytes(n)
    return data.decode(encoding, errors="replace")


ADVERSARIAL = {
    "spaces": lambda: " " * N,
    "newlines": lambda: "\n" * N,
    "tabs_newlines": lambda: "\t \n\r" * (N // 4),
    "T": lambda: "T" * N,
    "T_space": lambda: "T " * (N // 2),
    "open_brackets": lambda: "[" * N,
    "bracket_spaces": lambda: "[" + " " * N + "]",
    "digits": lambda: "1" * N,
    "one_space": lambda: "1 " * (N // 2),
    "decimals": lambda: "1." * (N // 2),
    "negatives": lambda: "-1," * (N // 3),
    "hashes": lambda: "#" * N,
    "final_ranking": lambda: "Final Ranking " * (N // 14),
    "final_colon_spaces": lambda: "Final Ranking:" + " " * N + "x",
    "trajectory_spaces": lambda: "Trajectory" + " " * N,
    "numbered": lambda: "1. T1\n" * (N // 6),
    "random_latin1": lambda: _random_text(N, 0, "latin-1"),
    "random_utf8": lambda: _random_text(N, 1, "utf-8"),
}


def _timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _is_subsequence(needle: list[int], haystack: list[int]) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needle)


# ------------------------------------------------------------------------ ranking: rules


@pytest.mark.parametrize(
    "text",
    [
        "Final Ranking: I cannot decide, 2 and 3 are similar",
        "[1.5, 2.5, 3.5]",
        "[-1,-2,-3]",
        "Final Ranking: [3, -1, 2]",
        '{"ranking": ["3", "1", "2"]}',
        '{"ranking": [true, false, null]}',
        '{"ranking": [3.0, 1.0, 2.0]}',
        '{"ranking": [{"id": 3}, {"id": 1}, {"id": 2}]}',
        "Final Ranking: [3, 1]",  # incomplete: the missing one is not appended
        "Final Ranking: [3, 1, 1, 2]",  # duplicate
        "Final Ranking: [4, 3, 1, 2]",  # out of range
        "T3T1T2",  # no separators
        "T3 > T1 = T2",  # a tie is not an order
        "1. T1\n2. T2\n3. T3\n4. T4",  # enumerating past m
        "[3, 1, 2] is my final ranking.",  # only text after the last phrase is searched
        "Final Ranking (most strategic first): [" + "9" * 5000 + ", 1, 2]",  # no int() overflow
    ],
)
def test_non_answers_give_none(text):
    assert parse_ranking(text, 3) is None


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("encoding", ["latin-1", "utf-8"])
def test_random_bytes_give_none(seed, encoding):
    for m in range(2, 9):
        assert parse_ranking(_random_text(5000, seed, encoding), m) is None


@pytest.mark.parametrize(
    "text, strategy",
    [
        ("Final Ranking (most strategic first): [3, 1, 2]", "final_ranking"),
        ("**Final Ranking:** [T3, T1, T2]", "final_ranking"),
        ("The final ranking is T3 -> T1 -> T2.", "final_ranking"),
        ("Final Ranking (most strategic first):\n\n3, 1, 2", "final_ranking"),
        ("My ranking is [Trajectory 3, Trajectory 1, Trajectory 2].", "brackets"),
        ('{"ranking": [3, 1, 2]}', "brackets"),
        ("Final Ranking (form: [<best>, ..., <worst>])\nThinking...\n[3, 1, 2]", "brackets"),
        ("1. T3\n2) Trajectory 1\n\n3. #2.", "numbered"),
        ("Best: T3 > T1 > T2", "line"),
        ("traj. 3; traj. 1 then traj. 2", "line"),
        ("T3 and T1 and T2", "line"),
        ("Ranking:\n3\n1\n2", "whole_text"),
    ],
)
def test_stated_rankings_are_read(text, strategy):
    order, used = parse_ranking_verbose(text, 3)
    assert order.tolist() == [2, 0, 1] and order.dtype == np.int32 and used == strategy


def test_zero_based_only_when_no_one_based_reading():
    assert parse_ranking("ranking: [2, 0, 1]", 3).tolist() == [2, 0, 1]
    assert parse_ranking("ranking: [3, 0, 1]", 3) is None  # neither 1..3 nor 0..2


def test_only_the_last_max_chars_are_read():
    answer = "Final Ranking: [3, 1, 2]"
    assert parse_ranking("x" * N + "\n" + answer, 3).tolist() == [2, 0, 1]
    assert parse_ranking(answer + " " * MAX_CHARS, 3) is None


@pytest.mark.parametrize("text", [b"Final Ranking: [3, 1, 2]", None, 312, ["3", "1", "2"]])
def test_non_str_text_gives_none(text):
    assert parse_ranking_verbose(text, 3) == (None, "none")


@pytest.mark.parametrize(
    "m, error",
    [
        (None, TypeError),
        (2.0, TypeError),
        (True, TypeError),
        ("3", TypeError),
        (0, ValueError),
        (-1, ValueError),
    ],
)
def test_bad_m_raises_naming_it(m, error):
    with pytest.raises(error, match="m must be a positive int"):
        parse_ranking("[1]", m)


def test_numpy_int_m_is_accepted():
    assert parse_ranking("[2, 1]", np.int64(2)).tolist() == [1, 0]


# ---------------------------------------------------------------------- ranking: timing


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial_megabyte_returns_fast(name):
    text = ADVERSARIAL[name]()
    for m in (1, 3, 8):
        order, seconds = _timed(parse_ranking, text, m)
        assert seconds < SECONDS, f"{name}: {seconds:.2f} s"
        assert order is None or sorted(order.tolist()) == list(range(m))


# -------------------------------------------------------------------- ranking: properties

FRAGMENTS = [
    "Final Ranking",
    "final ranking:",
    "(most strategic first)",
    ":",
    "[",
    "]",
    "T",
    "Trajectory ",
    "traj.",
    "#",
    ">",
    "->",
    ",",
    ";",
    ".",
    "-",
    " and ",
    " is ",
    "1.",
    "\n",
    " ",
    "\t",
    "*",
    '"',
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "9",
    "12",
    "1.5",
    "-1",
]
fragment_texts = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.integers(0, 9).map(str),
        st.integers(1, 300).map(lambda k: " " * k),
        st.integers(1, 300).map(lambda k: "\n" * k),
        st.text(max_size=6),
    ),
    max_size=60,
).map("".join)


@st.composite
def ranking_like_texts(draw) -> str:
    """Fragments around a near-answer: a permutation, sometimes with a label dropped or
    repeated, in some label style, separator and form."""
    k, base = draw(st.integers(1, 8)), draw(st.sampled_from([0, 1, 1, 1]))
    labels = draw(st.permutations(list(range(base, base + k))))
    edit = draw(st.sampled_from(["none", "none", "drop", "repeat"]))
    labels = labels[1:] if edit == "drop" else labels + labels[:1] if edit == "repeat" else labels
    label = draw(st.sampled_from(["{}", "T{}", "Trajectory {}", "#{}"]))
    separator = draw(st.sampled_from([", ", " > ", ",", " ", "\n", " and "]))
    form = draw(st.sampled_from(["[{}]", "Final Ranking: {}", "Final Ranking:\n[{}]", "{}"]))
    answer = form.format(separator.join(label.format(i) for i in labels))
    return draw(fragment_texts) + draw(st.sampled_from(["", "\n"])) + answer + draw(fragment_texts)


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(st.text(max_size=300), fragment_texts, ranking_like_texts()), m=st.integers(1, 8)
)
def test_any_text_gives_none_or_a_permutation_stated_in_the_text(text, m):
    order, seconds = _timed(parse_ranking, text, m)
    assert seconds < SECONDS
    if order is None:
        return
    assert order.dtype == np.int32 and sorted(order.tolist()) == list(range(m))
    numbers = [int(d) for d in re.findall(r"[0-9]+", text) if len(d) <= 6]
    assert any(_is_subsequence((order + base).tolist(), numbers) for base in (1, 0))


@settings(max_examples=100, deadline=None)
@given(
    perm=st.permutations(list(range(5))),
    noise=st.text(max_size=80),
    label=st.sampled_from(["{}", "T{}", "Trajectory {}", "#{}", "traj. {}"]),
    separator=st.sampled_from([", ", " > ", " -> ", "; ", " ", ",\n"]),
    form=st.sampled_from(
        [
            "Final Ranking (most strategic first): [{}]",
            "Final Ranking: {}",
            "Final Ranking:\n{}.",
            "{}",
        ]
    ),
)
def test_stated_rankings_in_any_style_are_read(perm, noise, label, separator, form):
    assume(form != "{}" or "\n" not in separator)  # a bare list over lines takes in the noise
    answer = form.format(separator.join(label.format(i + 1) for i in perm))
    assert parse_ranking(f"{noise}\n{answer}\n", 5).tolist() == perm
