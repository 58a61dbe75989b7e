"""The judge shown a summary of each game (`text.summary_text`), repeated prompts run once, and
the accuracy interval: checked against plain NumPy on random games, and end to end on the tiny
offline model."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from llm_fixtures import random_games

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import LLMRanker, prompts
from sailor_jax.judges.text import summary_text
from sailor_jax.types import Ranking
from sailor_lab import judge_eval

SUMMARY = re.compile(r"^(\d+) moves, (\d+) points \((\d+\.\d) per move\), largest tile (\d+)"
                     r"( \(in a corner\))?, (\d+) of 16 cells empty at the end, "
                     r"(still going|game over)$")


def test_the_summary_states_the_game_as_numpy_reads_it():
    batch = random_games(6, 80, seed=3)
    for i in range(6):
        match = SUMMARY.match(summary_text(batch, i))
        assert match, summary_text(batch, i)
        n = int(batch.lengths[i])
        final = np.asarray(batch.boards[i, n], np.int64)
        points = float(np.sum(batch.score_gains[i, :n]))
        assert int(match[1]) == n and int(match[2]) == round(points)
        assert float(match[3]) == pytest.approx(points / n, abs=0.051)
        assert int(match[4]) == 2 ** final.max()
        assert bool(match[5]) == (final.reshape(4, 4)[[0, 0, 3, 3], [0, 3, 0, 3]].max()
                                  == final.max())
        assert int(match[6]) == int((final == 0).sum())
        assert (match[7] == "still going") == bool(batch.truncated[i])


@pytest.fixture(scope="module")
def summary_judges(tiny_llm_dir):
    base = LLMRankerConfig(model=tiny_llm_dir, mode="pairwise", batch_size=4,
                           max_prompt_tokens=1024)
    pair = LLMRanker(base)
    point = LLMRanker(dataclasses.replace(base, mode="pointwise"), backend=pair.backend)
    return pair, point


@pytest.mark.parametrize("mode", ["pairwise", "pointwise"])
def test_summary_prompts_show_the_summaries_and_no_boards(summary_judges, mode):
    judge = summary_judges[0] if mode == "pairwise" else summary_judges[1]
    batch = random_games(3, 40, seed=5)
    before = len(judge.records)
    assert judge.rank_groups([batch])[0] is not None
    shown = [r["prompt"] for r in judge.records[before:] if r["event"].endswith("_prompt")]
    assert len(shown) == (6 if mode == "pairwise" else 3)
    for prompt in shown:
        assert not re.search(r"[0-9a-z.]{4}\|[0-9a-z.]{4}", prompt)  # no board rows
        assert any(summary_text(batch, i) in prompt for i in range(3))
    if mode == "pairwise":
        assert all(p.endswith(prompts.PAIRWISE_ANSWER_PREFIX) for p in shown)


def test_a_repeated_prompt_runs_once_and_gives_the_same_verdict(summary_judges):
    judge = summary_judges[1]
    batch = random_games(4, 40, seed=6)
    calls = []
    real = judge.backend.next_token_logprobs

    def counting(texts, *args, **kwargs):
        calls.append(list(texts))
        return real(texts, *args, **kwargs)

    object.__setattr__(judge.backend, "next_token_logprobs", counting)
    try:
        before = len(judge.records)
        twice = judge.rank_groups([batch, batch])
    finally:
        object.__delattr__(judge.backend, "next_token_logprobs")
    assert len(calls) == 1 and len(calls[0]) == 4 == len(set(calls[0]))
    assert np.array_equal(twice[0].order, twice[1].order)
    np.testing.assert_array_equal(twice[0].scores, twice[1].scores)
    records = [r for r in judge.records[before:] if r["event"] == "pointwise_prompt"]
    seconds = [r["seconds"] for r in records]
    assert len(records) == 8 and all(s > 0 for s in seconds[:4]) and seconds[4:] == [0.0] * 4


def test_the_accuracy_interval_brackets_the_accuracy_and_narrows_with_groups():
    rng = np.random.default_rng(0)
    eps = [np.array([0.0, 0.1, 0.3, 0.6, 1.0, 0.0, 0.3, 1.0]) for _ in range(64)]
    truth = judge_eval.skill_truth(eps)
    noisy = [Ranking(order=np.argsort(e + rng.normal(0, 0.4, 8), kind="stable").astype(np.int32))
             for e in eps]
    acc = judge_eval.pair_accuracy(noisy, truth)
    lo, hi = judge_eval.accuracy_interval(noisy, truth)
    lo8, hi8 = judge_eval.accuracy_interval(noisy[:8], truth[:8])
    assert lo < acc < hi and hi - lo < hi8 - lo8
    perfect = [Ranking(order=np.argsort(e, kind="stable").astype(np.int32)) for e in eps]
    assert judge_eval.accuracy_interval(perfect, truth) == (1.0, 1.0)
    assert np.isnan(judge_eval.accuracy_interval([None], [np.zeros((2, 2))])[0])
    assert judge_eval.accuracy_interval(noisy, truth) == (lo, hi)  # seeded: reproducible
    assert judge_eval.accuracy_interval(noisy, truth, seed=1) != (lo, hi)


def test_the_ratio_interval_with_few_groups():
    """One group: its accuracy twice. Groups with no counted pair: a resample of only those has
    no ratio and is left out, so the interval stays finite and within the groups' range."""
    assert judge_eval.ratio_interval(np.array([3.0]), np.array([4.0])) == (0.75, 0.75)
    right, total = np.array([3.0, 0.0, 1.0]), np.array([4.0, 0.0, 4.0])
    lo, hi = judge_eval.ratio_interval(right, total)
    assert 0.25 <= lo < right.sum() / total.sum() < hi <= 0.75
