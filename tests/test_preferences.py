"""Tests for sailor_jax.alignment.preferences against a brute-force double loop over every pair."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from sailor_jax.alignment.preferences import (
    SOURCE_NONE,
    SOURCE_PAIRWISE,
    SOURCE_PAIRWISE_REVERSED,
    SOURCE_SCORES,
    PreferenceConfig,
    PreferenceFallbackWarning,
    build_preferences,
    judge_probability,
    kendall_tau,
    pair_agreement,
)
from sailor_jax.types import Ranking

# ---------------------------------------------------------------------------- reference


def reference_pairs(r_theta, order, scores=None, tie_tol=1e-6):
    """Brute force: (discordant, concordant) sets of (judge-preferred, other) pairs."""
    position = {int(t): k for k, t in enumerate(order)}
    discordant, concordant = set(), set()
    m = len(order)
    for a in range(m):
        for b in range(a + 1, m):
            if scores is not None and scores[a] == scores[b]:
                continue  # the judge ties them
            win, lose = (a, b) if position[a] < position[b] else (b, a)
            ra, rb = float(r_theta[win]), float(r_theta[lose])
            if abs(ra - rb) <= tie_tol * max(1.0, abs(ra), abs(rb)):
                continue  # R_theta ties them
            if ra < rb:
                discordant.add((win, lose))
            else:
                concordant.add((win, lose))
    return discordant, concordant


def pairs_of(prefs, mask=None):
    mask = np.ones(len(prefs), bool) if mask is None else mask
    return list(zip(prefs.i[mask].tolist(), prefs.j[mask].tolist(), strict=True))


@st.composite
def ranked_pools(draw, max_m=9):
    """Small pools with frequent ties: (r_theta, Ranking)."""
    m = draw(st.integers(min_value=1, max_value=max_m))
    r = np.array(draw(st.lists(st.integers(-3, 3), min_size=m, max_size=m)), dtype=np.float64)
    order = np.array(draw(st.permutations(range(m))), dtype=np.int32)
    scores = None
    if draw(st.booleans()):
        scores = np.array(draw(st.lists(st.integers(0, 3), min_size=m, max_size=m)), np.float32)
    return r, Ranking(order=order, scores=scores)


# ---------------------------------------------------------------------------- pair selection


@settings(max_examples=60, deadline=None)
@given(pool=ranked_pools(), ratio=st.sampled_from([0.0, 0.5, 1.0, 2.5]), seed=st.integers(0, 9))
def test_matches_bruteforce(pool, ratio, seed):
    r, ranking = pool
    prefs = build_preferences(r, ranking, seed, PreferenceConfig(concordant_ratio=ratio))
    ref_neg, ref_pos = reference_pairs(r, ranking.order, ranking.scores)

    assert prefs.i.dtype == np.int32 and prefs.j.dtype == np.int32
    assert prefs.w.dtype == np.float32 and prefs.discordant.dtype == bool
    neg = pairs_of(prefs, prefs.discordant)
    pos = pairs_of(prefs, ~prefs.discordant)
    assert len(neg) == len(set(neg)) and set(neg) == ref_neg
    assert len(pos) == len(set(pos)) and set(pos) <= ref_pos
    assert len(pos) == min(math.floor(ratio * len(ref_neg) + 0.5), len(ref_pos))
    assert np.all(prefs.i != prefs.j)
    np.testing.assert_array_equal(prefs.w, 1.0)


@settings(max_examples=40, deadline=None)
@given(pool=ranked_pools())
def test_swapping_the_pair_flips_the_preference(pool):
    """Negate R_theta and reverse the judge: every discordant pair comes back as (j, i)."""
    r, ranking = pool
    reversed_ranking = Ranking(
        order=ranking.order[::-1].copy(),
        scores=None if ranking.scores is None else -ranking.scores,
    )
    cfg = PreferenceConfig(concordant_ratio=0.0)
    prefs = build_preferences(r, ranking, 0, cfg)
    flipped = build_preferences(-r, reversed_ranking, 0, cfg)
    assert set(pairs_of(flipped)) == {(j, i) for i, j in pairs_of(prefs)}


def test_hand_written_case():
    # Judge: 0 > 1 > 2 > 3. R_theta: 3 best, then 0 ~ 1 (tied), then 2.
    r = np.array([5.0, 5.0 + 1e-9, 1.0, 9.0])
    ranking = Ranking(order=np.array([0, 1, 2, 3], np.int32))
    prefs = build_preferences(r, ranking, 0, PreferenceConfig(concordant_ratio=10.0))
    assert pairs_of(prefs, prefs.discordant) == [(0, 3), (1, 3), (2, 3)]
    assert pairs_of(prefs, ~prefs.discordant) == [(0, 2), (1, 2)]  # (0, 1) is an R_theta tie
    assert prefs.num_discordant == 3 and prefs.num_concordant == 2


def test_judge_score_ties_never_appear():
    # R_theta orders 0, 1, 2 wrongly among themselves, but the judge ties them (equal scores).
    r = np.array([1.0, 2.0, 3.0, 5.0])
    ranking = Ranking(order=np.array([0, 1, 2, 3], np.int32), scores=np.array([1, 1, 1, 0.0]))
    prefs = build_preferences(r, ranking, 0, PreferenceConfig(concordant_ratio=10.0))
    assert set(pairs_of(prefs)) == {(0, 3), (1, 3), (2, 3)}  # only pairs across score levels
    assert prefs.num_discordant == 3


def test_rankings_agree_gives_empty_preferences():
    r = np.array([3.0, 2.0, 1.0])
    prefs = build_preferences(r, Ranking(order=np.array([0, 1, 2])), 0, PreferenceConfig())
    assert len(prefs) == 0 and prefs.w.shape == (0,) and prefs.i.dtype == np.int32


def test_concordant_sample_is_seeded():
    rng = np.random.default_rng(0)
    m = 40
    r = rng.normal(size=m)
    ranking = Ranking(order=np.argsort(-(r + rng.normal(scale=0.5, size=m))).astype(np.int32))
    cfg = PreferenceConfig(concordant_ratio=0.5)
    a = build_preferences(r, ranking, 3, cfg)
    b = build_preferences(r, ranking, np.random.default_rng(3), cfg)
    c = build_preferences(r, ranking, 4, cfg)
    np.testing.assert_array_equal(a.i, b.i)
    np.testing.assert_array_equal(a.j, b.j)
    assert pairs_of(a) != pairs_of(c)
    assert pairs_of(a, a.discordant) == pairs_of(c, c.discordant)


# ---------------------------------------------------------------------------- weights


def test_confidence_weights_use_the_margin():
    p = np.full((3, 3), np.nan)
    p[0, 1] = 0.9  # forward entry
    p[2, 0] = 0.2  # only the reverse of (0, 2) is known -> p(0 beats 2) = 0.8
    ranking = Ranking(order=np.array([0, 1, 2]), pairwise_prob=p)
    r = np.array([0.0, 1.0, 2.0])  # R_theta reverses the judge: all pairs discordant
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prefs = build_preferences(r, ranking, 0, PreferenceConfig(weighting="confidence"))
    weights = dict(zip(pairs_of(prefs), prefs.w.tolist(), strict=True))
    assert weights[(0, 1)] == pytest.approx(0.8)
    assert weights[(0, 2)] == pytest.approx(0.6)
    assert weights[(1, 2)] == 1.0  # nothing known about (1, 2): weight 1, with a warning
    assert any(issubclass(w.category, PreferenceFallbackWarning) for w in caught)

    _, source = judge_probability(ranking, prefs.i, prefs.j)
    assert sorted(source.tolist()) == [SOURCE_PAIRWISE, SOURCE_PAIRWISE_REVERSED, SOURCE_NONE]


def test_confidence_falls_back_to_scores():
    scores = np.array([2.0, 1.0, 0.0])
    ranking = Ranking(order=np.array([0, 1, 2]), scores=scores)
    r = np.array([0.0, 1.0, 2.0])
    with pytest.warns(PreferenceFallbackWarning):
        prefs = build_preferences(r, ranking, 0, PreferenceConfig(weighting="confidence"))
    for i, j, w in zip(prefs.i, prefs.j, prefs.w, strict=True):
        p = 1.0 / (1.0 + math.exp(-(scores[i] - scores[j])))
        assert w == pytest.approx(abs(2 * p - 1), rel=1e-6)
    p, source = judge_probability(ranking, prefs.i, prefs.j)
    assert np.all(source == SOURCE_SCORES) and np.all(p > 0.5)


def test_confidence_without_fallback_does_not_warn():
    p = np.array([[np.nan, 0.7], [0.3, np.nan]])
    ranking = Ranking(order=np.array([0, 1]), pairwise_prob=p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prefs = build_preferences([0.0, 1.0], ranking, 0, PreferenceConfig(weighting="confidence"))
    assert prefs.w.tolist() == pytest.approx([0.4])


@settings(max_examples=30, deadline=None)
@given(pool=ranked_pools(), ratio=st.sampled_from([0.5, 1.0, 3.0]))
def test_discrepancy_weights_follow_rank_distance_with_mean_one(pool, ratio):
    r, ranking = pool
    cfg = PreferenceConfig(weighting="discrepancy", concordant_ratio=ratio)
    prefs = build_preferences(r, ranking, 0, cfg)
    if len(prefs) == 0:
        return
    distance = np.abs(ranking.rank[prefs.i] - ranking.rank[prefs.j]).astype(np.float64)
    assert prefs.w.mean() == pytest.approx(1.0, rel=1e-5)
    np.testing.assert_allclose(prefs.w, distance / distance.mean(), rtol=1e-6)


def test_discrepancy_prioritises_far_apart_pairs():
    ranking = Ranking(order=np.arange(4, dtype=np.int32))
    prefs = build_preferences(
        [0.0, 1.0, 2.0, 3.0], ranking, 0, PreferenceConfig(weighting="discrepancy")
    )
    weights = dict(zip(pairs_of(prefs), prefs.w.tolist(), strict=True))
    assert weights[(0, 3)] == pytest.approx(3 * weights[(0, 1)])
    assert weights[(0, 3)] == max(weights.values())


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs",
    [
        {"weighting": "rank"},
        {"concordant_ratio": -1.0},
        {"concordant_ratio": float("nan")},
    ],
)
def test_config_validation(kwargs):
    with pytest.raises(ValueError):
        PreferenceConfig(**kwargs)


@pytest.mark.parametrize("r", [[0.0, 1.0], [0.0, float("nan"), 1.0], [[0.0, 1.0, 2.0]]])
def test_bad_returns_raise(r):
    ranking = Ranking(order=np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="r_theta"):
        build_preferences(r, ranking, 0, PreferenceConfig())
    with pytest.raises(ValueError, match="r_theta"):
        pair_agreement(r, ranking)


# ---------------------------------------------------------------------------- agreement metrics


def test_identical_and_reversed_orders():
    r = np.array([0.5, 3.0, -1.0, 2.0, 7.0])
    same = Ranking(order=np.argsort(-r).astype(np.int32))
    reverse = Ranking(order=np.argsort(r).astype(np.int32))
    assert kendall_tau(r, same) == pytest.approx(1.0)
    assert pair_agreement(r, same) == 1.0
    assert kendall_tau(r, reverse) == pytest.approx(-1.0)
    assert pair_agreement(r, reverse) == 0.0


def test_undefined_cases_are_nan():
    one = Ranking(order=np.array([0]))
    assert math.isnan(kendall_tau([1.0], one)) and math.isnan(pair_agreement([1.0], one))
    ranking = Ranking(order=np.array([0, 1, 2]))
    assert math.isnan(kendall_tau([2.0, 2.0, 2.0], ranking))
    assert pair_agreement([2.0, 2.0, 2.0], ranking) == 0.5  # all tied: half credit
    all_tied_judge = Ranking(order=np.array([0, 1, 2]), scores=np.ones(3))
    assert math.isnan(kendall_tau([0.0, 1.0, 2.0], all_tied_judge))
    assert math.isnan(pair_agreement([0.0, 1.0, 2.0], all_tied_judge))


@pytest.mark.parametrize("seed", range(5))
def test_metrics_match_scipy_and_bruteforce_on_random_data(seed):
    rng = np.random.default_rng(seed)
    m = 30
    r = rng.normal(size=m)
    key = r + rng.normal(scale=1.0, size=m)
    ranking = Ranking(order=np.argsort(-key).astype(np.int32))
    expected_tau = scipy.stats.kendalltau(r, key).statistic
    assert kendall_tau(r, ranking) == pytest.approx(expected_tau)
    with_scores = Ranking(order=ranking.order, scores=np.round(key).astype(np.float32))
    expected_tau_b = scipy.stats.kendalltau(r, np.round(key)).statistic
    assert kendall_tau(r, with_scores) == pytest.approx(expected_tau_b)

    neg, pos = reference_pairs(r, ranking.order)
    agreement = pair_agreement(r, ranking)
    assert agreement == pytest.approx(len(pos) / (len(pos) + len(neg)))
    assert kendall_tau(r, ranking) == pytest.approx(2 * agreement - 1)  # no ties either side
