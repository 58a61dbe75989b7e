"""Pointwise LLM judging: label tokens, expected ratings, ranking, logistic
link, config checks and a SAILOR run, on the tiny offline model (plus one `slow` test on the
embedded SmolLM2)."""

from __future__ import annotations

import dataclasses
import json
import os
import types
import warnings

import numpy as np
import pytest
import scipy.special
from llm_fixtures import random_games

from sailor_jax.alignment.preferences import PreferenceFallbackWarning, build_preferences
from sailor_jax.config import LLMRankerConfig, PreferenceConfig, RankerConfig
from sailor_jax.judges import LLMRanker, pointwise, prefix_cache

RATINGS = np.arange(1, 10, dtype=np.float64)


@pytest.fixture(scope="module")
def tiny_pointwise(tiny_llm_dir):
    return LLMRanker(LLMRankerConfig(model=tiny_llm_dir, mode="pointwise", batch_size=4,
                                     max_prompt_tokens=1024))


def _rank(ranker: LLMRanker, groups) -> tuple[list, list[dict]]:
    """Rank `groups`; return the rankings and the "pointwise_prompt" records of this call."""
    before = len(ranker.records)
    out = ranker.rank_groups(groups)
    new = ranker.records[before:]
    return out, [r for r in new if r["event"] == "pointwise_prompt"]


def _expected(logp: list[float]) -> float:
    p = np.exp(np.asarray(logp, dtype=np.float64))
    return float(np.sum(RATINGS * p) / np.sum(p))


def test_rating_labels_on_the_tiny_tokenizer_are_the_space_digit_tokens(tiny_pointwise):
    prefix, ids = pointwise.rating_labels(tiny_pointwise.backend)
    assert prefix == "Rating:"  # the tiny BPE merges " 1".." 9" (GPT-2 style)
    assert list(ids) == tiny_pointwise.tokenizer.convert_tokens_to_ids([f"Ġ{r}" for r in
                                                                        range(1, 10)])


def _fake_backend(encode):
    """A backend whose `token_ids` is `encode` (a tokenizer here or a server's)."""
    return types.SimpleNamespace(token_ids=encode,
                                 render_chat=lambda system, user, prefix: f"{user}\n{prefix}")


def test_rating_labels_pick_the_split_digit_form_or_refuse():
    by_bytes = _fake_backend(lambda text: list(text.encode()))  # " 7" is two tokens
    prefix, ids = pointwise.rating_labels(by_bytes)
    assert prefix == "Rating: " and list(ids) == [ord(str(r)) for r in range(1, 10)]
    one_digit = _fake_backend(lambda text: [0 if c.isdigit() else ord(c) for c in text])
    with pytest.raises(ValueError, match="one distinct token"):
        pointwise.rating_labels(one_digit)


def test_label_probabilities_sum_to_the_logged_mass(tiny_pointwise):
    import torch

    _, records = _rank(tiny_pointwise, [random_games(3, 60, seed=4)])
    label_ids = tiny_pointwise.tokenizer.convert_tokens_to_ids([f"Ġ{r}" for r in range(1, 10)])
    for record in records:
        p = np.exp(np.asarray(record["logp"]))
        assert p.sum() == pytest.approx(record["label_mass"], rel=1e-9)
        assert 0.0 < record["label_mass"] < 1.0
        assert record["prompt"].endswith("Rating:")
    ids = tiny_pointwise.tokenizer(records[0]["prompt"], return_tensors="pt",
                                   add_special_tokens=False)["input_ids"]
    with torch.inference_mode():  # an unbatched forward pass, read independently
        logits = tiny_pointwise.model(input_ids=ids).logits[0, -1].float()
    direct = torch.log_softmax(logits, dim=-1)[label_ids].numpy()
    np.testing.assert_allclose(records[0]["logp"], direct, atol=1e-4)
    assert tiny_pointwise.last_label_mass == pytest.approx(
        np.mean([r["label_mass"] for r in records]))


def test_ranking_sorts_by_expected_rating_and_prob_follows_the_order(tiny_pointwise):
    groups = [random_games(5, 80, seed=1), random_games(4, 60, seed=2)]
    out, records = _rank(tiny_pointwise, groups)
    assert len(records) == 5 + 4
    for g, ranking in enumerate(out):
        rows = sorted((r for r in records if r["group"] == g), key=lambda r: r["trajectory"])
        expected = np.array([_expected(r["logp"]) for r in rows])
        np.testing.assert_allclose(ranking.scores, expected, rtol=1e-6)
        np.testing.assert_array_equal(ranking.order, np.argsort(-expected, kind="stable"))
        assert np.all(np.diff(expected[ranking.order]) <= 0)
        p = ranking.pairwise_prob.astype(np.float64)
        np.testing.assert_array_equal(p > 0.5, expected[:, None] > expected[None, :])
        np.testing.assert_allclose(p + p.T, 1.0, atol=1e-6)
        np.testing.assert_array_equal(np.diag(p), 0.5)
        diff = (expected[:, None] - expected[None, :]) / pointwise.TEMPERATURE
        np.testing.assert_allclose(p, scipy.special.expit(diff), atol=1e-6)


def test_rating_ranking_hand_case_ties_keep_the_lower_index_first():
    ranking = pointwise.rating_ranking(np.array([2.0, 5.0, 5.0, 1.0]), temperature=2.0)
    assert ranking.order.tolist() == [1, 2, 0, 3]
    assert ranking.pairwise_prob[0, 1] == pytest.approx(1 / (1 + np.exp(1.5)), rel=1e-6)
    assert ranking.pairwise_prob[1, 2] == 0.5
    assert pointwise.rating_ranking(np.array([1.0, np.nan]), 1.0) is None
    with np.errstate(divide="ignore"):  # log(0) = -inf: labels the model gives no mass
        log_probs = np.log([[0.1, 0, 0, 0, 0, 0, 0, 0, 0.3]])
    score, mass = pointwise.expected_rating(log_probs)
    assert score[0] == pytest.approx(7.0) and mass[0] == pytest.approx(0.4)


def test_groups_too_small_to_rank_cost_no_prompt(tiny_pointwise):
    out, records = _rank(tiny_pointwise, [random_games(1, 10)])
    assert out[0].order.tolist() == [0] and records == []


def test_confidence_weights_come_from_the_logistic_link(tiny_pointwise):
    (ranking,), _ = _rank(tiny_pointwise, [random_games(5, 60, seed=8)])
    r_theta = -np.asarray(ranking.scores, np.float64)  # reversed: every pair discordant
    with warnings.catch_warnings():
        warnings.simplefilter("error", PreferenceFallbackWarning)
        prefs = build_preferences(r_theta, ranking, 0, PreferenceConfig(weighting="confidence"))
    assert len(prefs.i) == 10
    p = ranking.pairwise_prob.astype(np.float64)[prefs.i, prefs.j]
    np.testing.assert_allclose(prefs.w, np.abs(2 * p - 1), atol=1e-6)


def test_pointwise_config_validation():
    with pytest.raises(ValueError, match="mode"):
        LLMRankerConfig(mode="rated")


def test_sailor_loop_runs_with_the_pointwise_judge(tmp_path, tiny_llm_dir):
    from support import TINY

    from sailor_jax.run import loop

    llm = LLMRankerConfig(model=tiny_llm_dir, mode="pointwise", batch_size=4,
                          max_prompt_tokens=1024, device="cpu")
    cfg = dataclasses.replace(TINY, tunable=("empty_cells", "monotonicity"),
                              ranker=RankerConfig(kind="llm", llm=llm))
    out = str(tmp_path / "run")
    results = loop.run(cfg, out)
    assert np.asarray(results.theta_history).shape == (cfg.iterations + 1, cfg.num_seeds, 8)
    with open(os.path.join(out, "results.json")) as f:
        assert json.load(f)["ranker"]["mode"] == "pointwise"
    with open(os.path.join(out, "llm.jsonl")) as f:
        records = [json.loads(line) for line in f]
    groups = [r for r in records if r["event"] == "group"]
    prompts_logged = [r for r in records if r["event"] == "pointwise_prompt"]
    assert groups and all(g["mode"] == "pointwise" for g in groups)
    assert len(prompts_logged) == sum(g["m"] for g in groups)


def test_prefix_reuse_gives_the_same_ratings(tiny_pointwise, monkeypatch):
    """The judge's prompts run with the shared prefix cached give the ratings of the prompts
    read in full (`LLMBackend.uncached_logprobs`)."""
    batch = random_games(3, 60, seed=9)
    (a,), records_a = _rank(tiny_pointwise, [batch])
    monkeypatch.setattr(prefix_cache, "supports_prefix_reuse", lambda model: False)
    (b,), records_b = _rank(tiny_pointwise, [batch])
    np.testing.assert_allclose([r["logp"] for r in records_a], [r["logp"] for r in records_b],
                               atol=1e-4)
    np.testing.assert_allclose(a.scores, b.scores, atol=1e-4)
