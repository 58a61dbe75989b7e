"""Tests for the reliability update (`alignment.reliability`, method "bt_reliability"): the
judge's reliability follows its verdicts, a random judge leaves theta near its prior, the
belief round-trips, and the update path carries it from update to update."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from sailor_jax.alignment import reliability
from sailor_jax.alignment.preferences import all_judged_pairs
from sailor_jax.alignment.updates import update_theta
from sailor_jax.config import PAPER, AlignmentConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.types import Ranking

D, M = 6, 16
CFG = dataclasses.replace(
    PAPER.alignment, method="bt_reliability", beta=5.0, mcmc_samples=500, mcmc_burn_in=200)


def _pairs(judge: str, seed: int, groups: int = 1):
    """`groups` groups of M windows with features of very different scales, every judged
    pair (weight 2 / M), judged by a hidden linear reward or at random."""
    rng = np.random.default_rng(seed)
    truth = np.array([1.0, -0.8, 0.6, 0.0, 0.3, -0.5])
    a_all, w_all = [], []
    for _ in range(groups):
        phi = rng.normal(size=(M, D)) * rng.uniform(1, 50, size=D)
        i, j = np.triu_indices(M, 1)
        d = phi[i] - phi[j]
        first = (d @ truth > 0) if judge == "truth" else rng.random(len(d)) < 0.5
        d = np.where(first[:, None], d, -d)
        a_all.append(d * 5.0 / np.linalg.norm(d, axis=1).mean())
        w_all.append(np.full(len(d), 2.0 / M))
    return np.concatenate(a_all), np.concatenate(w_all), truth


def test_a_judge_that_follows_a_reward_is_found_more_reliable_the_more_it_says():
    prior = reliability.Belief.prior(np.zeros(D), 0.3, 1.0, 4.0)
    eta = []
    for groups in (1, 4):
        a, w, truth = _pairs("truth", 0, groups)
        post = reliability.sample(prior, -np.ones(D), np.ones(D), a, np.zeros(len(w)), w, 0,
                                  200, 300, 0.3)
        eta.append(post.belief.eta_mean)
        mean = post.belief.mean
        assert mean @ truth / np.linalg.norm(mean) / np.linalg.norm(truth) > 0.8
        assert post.rhat < 1.05 and post.ess > 200 and post.divergences < 0.05
    assert 0.2 < eta[0] < eta[1]  # 0.2: the prior's mean
    assert eta[1] > 0.5


def test_a_random_judge_is_found_unreliable_and_leaves_theta_near_its_prior():
    a, w, _ = _pairs("random", 1, groups=3)
    start = np.full(D, 0.2)
    prior = reliability.Belief.prior(start, 0.3, 1.0, 4.0)
    post = reliability.sample(prior, -np.ones(D), np.ones(D), a, np.zeros(len(w)), w, 0, 200,
                              300, 0.3)
    assert post.belief.eta_mean < 0.2
    assert np.linalg.norm(post.belief.mean - start) < 0.15
    # no direction of the carried prior is wider than the first one
    assert np.linalg.eigvalsh(post.belief.cov).max() <= 0.3**2 + 1e-12


def test_the_belief_round_trips_through_json_and_beta_moments_match():
    belief = reliability.Belief.prior(np.arange(3.0), 0.5, 2.0, 3.0)
    again = reliability.Belief.from_json(json.loads(json.dumps(belief.to_json())))
    assert np.array_equal(again.mean, belief.mean) and np.array_equal(again.cov, belief.cov)
    assert (again.eta_a, again.eta_b) == (2.0, 3.0) and again.eta_mean == pytest.approx(0.4)
    a, b = reliability.beta_moments(0.3, 0.01)
    assert a / (a + b) == pytest.approx(0.3)
    assert a * b / ((a + b) ** 2 * (a + b + 1)) == pytest.approx(0.01)


def test_the_update_steps_to_the_posterior_mean_inside_the_bounds_and_carries_its_belief():
    spec = RewardSpec()
    rng = np.random.default_rng(3)
    phi = rng.normal(size=(M, 8)) * rng.uniform(1, 50, size=8)
    truth = np.array([1.0, 0.5, 0.2, 0.0, 0.0, 0.0, 0.0, -1.0])
    order = np.argsort(-(phi @ truth)).astype(np.int32)
    ranking = Ranking(order=order, scores=(phi @ truth).astype(np.float32))
    theta = np.asarray(spec.start, np.float32)
    prefs = all_judged_pairs(ranking, 2.0 / M, phi @ theta)
    assert len(prefs) == M * (M - 1) // 2 and np.allclose(prefs.w, 2.0 / M)
    first = update_theta(theta, phi, prefs, spec, CFG, rng=0)
    assert first.accepted and first.diagnostics["mixed"]
    assert np.all(first.theta >= -1) and np.all(first.theta <= 1)
    assert {"rhat", "ess", "divergences", "eta"} <= set(first.diagnostics)
    assert first.belief is not None
    second = update_theta(first.theta, phi, prefs, spec, CFG, rng=1,
                          belief=first.belief)
    # the same verdicts again: more evidence, a more reliable judge and a narrower posterior
    assert second.diagnostics["eta"] > first.diagnostics["eta"]
    assert (np.trace(np.asarray(second.belief["cov"]))
            < np.trace(np.asarray(first.belief["cov"])))


@pytest.mark.parametrize("bad", [(0.0, 1.0), (1.0,), (1.0, float("nan"))])
def test_a_bad_reliability_prior_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="reliability_prior"):
        AlignmentConfig(method="bt_reliability", reliability_prior=bad)
