"""The offline Bradley-Terry fit: the ceiling of a linear R_theta."""

from __future__ import annotations

import numpy as np
import pytest

from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges import LinearOracleRanker
from sailor_jax.judges.oracles import order_by_scores
from sailor_jax.types import Ranking
from sailor_lab.offline_fit import (
    agreement,
    fit_bradley_terry,
    group_pairs,
    mean_group_tau,
)
from sailor_lab.recovery import phi_batch, tunable_cosine

THETA_STAR = np.array([0.5, 0.3, 0.4, 0.2, 0.1, 0.0, 0.3, -0.5])


def _pool(groups: int, m: int = 8, seed: int = 0, temperature: float = 0.1):
    """Synthetic whole-game pool: correlated positive feature sums, game_over = 1 always;
    a noisy linear oracle (Boltzmann temperature in return units) ranks each group."""
    rng = np.random.default_rng(seed)
    length = rng.uniform(50, 300, size=(groups * m, 1))
    phi = length * rng.uniform(0.2, 1.0, size=(groups * m, 8)) / 100
    phi[:, 7] = 1.0
    oracle = LinearOracleRanker(THETA_STAR, temperature=temperature, seed=seed)
    phis = [phi[g * m:(g + 1) * m] for g in range(groups)]
    rankings = [r for p in phis for r in oracle.rank_groups([phi_batch(p)])]
    # the noisy order is the judge's verdict: drop the exact scores so ties are not skipped
    rankings = [Ranking(order=r.order) for r in rankings]
    return phi, phis, rankings


def test_fit_recovers_a_linear_oracles_theta_on_a_synthetic_pool():
    phi, phis, rankings = _pool(groups=250)
    train = 200
    prefs = group_pairs(rankings[:train], [8 * g for g in range(train)])
    spec = RewardSpec().with_tunable(FEATURE_NAMES[:7])  # game_over's sum never varies
    fit = fit_bradley_terry(phi, prefs, theta=spec.start, free=np.asarray(spec.tunable))
    assert fit.converged
    assert tunable_cosine(fit.theta, THETA_STAR, spec) > 0.95
    assert fit.theta[7] == spec.start[7]  # game_over is not tunable: kept as given
    held = group_pairs(rankings[train:], [8 * (g - train) for g in range(train, 250)])
    acc_fit = agreement(fit.theta, phi[8 * train:], held)
    acc_star = agreement(THETA_STAR, phi[8 * train:], held)
    assert acc_fit > acc_star - 0.03  # as good as the truth on held-out noisy pairs
    assert mean_group_tau(fit.theta, phis[train:], rankings[train:]) > 0.5


def test_group_pairs_lists_every_ordered_pair_with_pooled_indices():
    rankings = [Ranking(order=np.array([2, 0, 1])), None,
                Ranking(order=order_by_scores(np.array([1.0, 1.0, 0.0])),
                        scores=np.array([1.0, 1.0, 0.0]))]
    prefs = group_pairs(rankings, [0, 3, 6])
    pairs = set(zip(prefs.i.tolist(), prefs.j.tolist(), strict=True))
    assert pairs == {(2, 0), (2, 1), (0, 1), (6, 8), (7, 8)}  # the score tie (6, 7) is skipped


def test_fit_minimises_its_documented_objective():
    """`nll` is `sum_p w_p softplus(-dphi_p . theta / scale) / sum_p w_p + l2 |theta_free|^2`
    at the fitted theta, whose free entries zero that objective's gradient."""
    phi, _, rankings = _pool(groups=30, seed=1)
    prefs = group_pairs(rankings, [8 * g for g in range(30)])
    free = np.arange(8) < 7
    fit = fit_bradley_terry(phi, prefs, theta=np.full(8, 0.3), free=free, l2=0.05)
    dphi = phi[prefs.i] - phi[prefs.j]
    z = dphi @ fit.theta / np.mean(np.linalg.norm(dphi, axis=1))
    free_theta = fit.theta[free]
    assert fit.converged and fit.theta[7] == 0.3
    assert fit.nll == pytest.approx(np.mean(np.logaddexp(0.0, -z)) + 0.05 * free_theta @ free_theta)
    sigma = 1.0 / (1.0 + np.exp(z))  # d softplus(-z) / dz = -sigma
    grad = -(sigma @ dphi[:, free]) / len(z) / np.mean(np.linalg.norm(dphi, axis=1))
    np.testing.assert_allclose(grad + 2 * 0.05 * free_theta, 0.0, atol=1e-6)


def test_fit_rejects_no_pairs():
    empty = group_pairs([], [])
    with pytest.raises(ValueError, match="positive total weight"):
        fit_bradley_terry(np.zeros((2, 8)), empty)
