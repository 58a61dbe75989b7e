"""Tests for sailor_jax.alignment.updates: objectives, constraints and both update rules."""

from __future__ import annotations

import dataclasses
import functools
import math
import os

import numpy as np
import pytest

from sailor_jax.alignment.parallel import resolve_workers, update_many
from sailor_jax.alignment.preferences import build_preferences
from sailor_jax.alignment.updates import (
    AlignmentConfig,
    bt_nll,
    bt_scale,
    pair_error,
    update_theta,
)
from sailor_jax.config import PAPER, PreferenceConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.types import Preferences, Ranking

M, F = 60, 8
SPEC = RewardSpec()
THETA0 = np.asarray(SPEC.start, dtype=np.float32)

# Small budgets keep every update well under a few seconds on a shared CPU.
BO = dataclasses.replace(PAPER.alignment, method="bo", bo_calls=15, bo_initial_points=5)
MCMC = dataclasses.replace(PAPER.alignment, method="bt_mcmc", mcmc_samples=600, mcmc_burn_in=200)


def make_pool(seed=0):
    """Synthetic trajectories: feature sums of very different scales, like real Phi."""
    rng = np.random.default_rng(seed)
    phi = rng.normal(size=(M, F)) * rng.uniform(5.0, 200.0, size=F)
    theta_star = rng.uniform(-1.0, 1.0, size=F).astype(np.float32)
    return phi.astype(np.float32), theta_star


PHI, THETA_STAR = make_pool()
ORACLE = Ranking(order=np.argsort(-(PHI.astype(np.float64) @ THETA_STAR)).astype(np.int32))
PREFS = build_preferences(PHI @ THETA0, ORACLE, 0, PreferenceConfig(concordant_ratio=1.0))


@functools.cache
def cached_update(cfg: AlignmentConfig):
    """One update per config from THETA0 on PREFS (BO runs are the slow part of this file)."""
    return update_theta(THETA0, PHI, PREFS, SPEC, cfg, rng=0)


def make_prefs(i, j, w=None):
    i, j = np.asarray(i, np.int32), np.asarray(j, np.int32)
    w = np.ones(len(i), np.float32) if w is None else np.asarray(w, np.float32)
    return Preferences(i=i, j=j, w=w, discordant=np.ones(len(i), bool))


# ---------------------------------------------------------------------------- objectives


def test_pair_error_hand_computed():
    phi = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    prefs = make_prefs([0, 1, 2], [1, 2, 0], w=[1.0, 2.0, 1.0])
    # theta = (1, 1): R = (1, 1, 2). (0>1) tie -> 1/2; (1>2) wrong; (2>0) right.
    assert pair_error([1.0, 1.0], phi, prefs) == pytest.approx((0.5 * 1 + 1 * 2 + 0) / 4)
    # theta = (2, -1): R = (2, -1, 1). (0>1) right; (1>2) wrong; (2>0) wrong.
    assert pair_error([2.0, -1.0], phi, prefs) == pytest.approx((0 + 2 + 1) / 4)


def test_bt_nll_hand_computed_and_stable():
    phi = np.array([[2.0, 0.0], [0.0, 0.0]])
    prefs = make_prefs([0], [1])
    expected = -math.log(1.0 / (1.0 + math.exp(-0.5 * 2.0 / 4.0)))
    assert bt_nll([1.0, 0.0], phi, prefs, beta=0.5, scale=4.0) == pytest.approx(expected)
    huge = bt_nll(np.array([[1e9, 0.0], [-1e9, 0.0]]), phi, prefs, beta=1.0, scale=1.0)
    assert np.all(np.isfinite(huge)) and huge[0] == 0.0 and huge[1] == pytest.approx(2e9)


def test_bt_nll_matches_logaddexp_reference():
    rng = np.random.default_rng(2)
    thetas = rng.uniform(-1, 1, size=(5, F)) * np.array([[1e-3], [1.0], [10.0], [1e3], [1e6]])
    prefs = make_prefs(PREFS.i, PREFS.j, w=rng.uniform(0, 2, size=len(PREFS)))
    scale = bt_scale(PHI, prefs)
    margin = thetas @ (PHI[prefs.i].astype(np.float64) - PHI[prefs.j]).T
    loss = np.logaddexp(0.0, -0.7 * margin / scale)
    expected = loss @ prefs.w.astype(np.float64) / prefs.w.sum(dtype=np.float64)
    np.testing.assert_allclose(bt_nll(thetas, PHI, prefs, 0.7, scale), expected, rtol=1e-12)


def test_bt_scale_is_mean_pair_distance():
    phi = np.array([[3.0, 4.0], [0.0, 0.0], [0.0, 1.0]])
    assert bt_scale(phi, make_prefs([0, 2], [1, 1])) == pytest.approx((5.0 + 1.0) / 2)
    assert bt_scale(phi, make_prefs([], [])) == 1.0


def test_objectives_are_vectorised():
    rng = np.random.default_rng(1)
    thetas = rng.uniform(-1, 1, size=(7, F))
    scale = bt_scale(PHI, PREFS)
    batch_err = pair_error(thetas, PHI, PREFS)
    batch_nll = bt_nll(thetas, PHI, PREFS, 0.9, scale)
    assert batch_err.shape == (7,) and batch_nll.shape == (7,)
    np.testing.assert_allclose(batch_err, [pair_error(t, PHI, PREFS) for t in thetas])
    np.testing.assert_allclose(batch_nll, [bt_nll(t, PHI, PREFS, 0.9, scale) for t in thetas])
    assert pair_error(THETA_STAR, PHI, PREFS) == 0.0


# ---------------------------------------------------------------------------- learning


@pytest.mark.parametrize(
    "cfg",
    [BO, dataclasses.replace(BO, objective="bt_nll"), MCMC],
    ids=["bo-error", "bo-bt_nll", "bt_mcmc"],
)
def test_update_reduces_pair_error(cfg):
    before = pair_error(THETA0, PHI, PREFS)
    result = cached_update(cfg)
    assert result.accepted, result.message
    assert result.theta.dtype == np.float32 and result.theta.shape == (F,)
    assert result.error_before == pytest.approx(before)
    assert result.error_after == pytest.approx(pair_error(result.theta, PHI, PREFS))
    assert result.error_after < before
    assert result.objective_after < result.objective_before
    assert "accepted" in result.message
    SPEC.validate(result.theta)


def test_bo_counts_evaluations():
    result = cached_update(BO)
    assert result.num_evaluations == 1 + BO.bo_calls  # x0 (passed as y0) + the calls


def test_mcmc_rejects_a_candidate_that_is_not_better():
    # The oracle theta already orders every pair right: error 0 cannot be beaten.
    result = update_theta(THETA_STAR, PHI, PREFS, SPEC, MCMC, rng=0)
    assert not result.accepted
    assert "rejected" in result.message and "pair error" in result.message
    np.testing.assert_array_equal(result.theta, THETA_STAR)
    assert result.error_before == result.error_after == 0.0


# ---------------------------------------------------------------------------- constraints


@pytest.mark.parametrize(
    "cfg",
    [dataclasses.replace(BO, bo_calls=8, bo_initial_points=3, trust_region=0.1),
     dataclasses.replace(MCMC, trust_region=0.05)],
    ids=["bo", "bt_mcmc"],
)  # fmt: skip
def test_fixed_entries_bounds_and_trust_region(cfg):
    spec = dataclasses.replace(
        SPEC.with_tunable(["score_gain", "empty_cells", "monotonicity", "smoothness"]),
        lower=(0.9, -1.0, -1.0, -0.25, -1.0, -1.0, -1.0, -1.0),
        upper=(1.0, 1.0, 1.0, 0.25, 1.0, 1.0, 1.0, 1.0),
    )
    theta = THETA0.copy()
    theta[3] = np.float32(0.25)  # at its upper bound
    fixed = ~np.asarray(spec.tunable)
    for seed in (1, 2, 3):  # several optimiser runs, each must respect the box
        result = update_theta(theta, PHI, PREFS, spec, cfg, rng=seed)
        np.testing.assert_array_equal(result.theta[fixed], theta[fixed])  # bit-for-bit
        spec.validate(result.theta)
        change = np.abs(result.theta.astype(np.float64) - theta.astype(np.float64))
        assert np.all(change <= cfg.trust_region + 1e-7), (seed, change)


def test_float32_rounding_never_leaves_the_bounds():
    # 0.3 is not a float32: float32(0.3) > 0.3. A float64 theta at that bound must not
    # come back one ulp outside it.
    spec = dataclasses.replace(SPEC, lower=(-0.3,) * F, upper=(0.3,) * F, start=(0.0,) * F)
    theta = np.array([0.3, -0.3, 0.3, 0.0, 0.0, 0.0, 0.0, -0.3])
    # The judge orders by this theta, so the update is rejected and theta comes back as is.
    judge = Ranking(order=np.argsort(-(PHI.astype(np.float64) @ theta)).astype(np.int32))
    prefs = build_preferences(PHI @ THETA0, judge, 0, PreferenceConfig())
    result = update_theta(theta, PHI, prefs, spec, MCMC, rng=0)
    assert not result.accepted and result.error_before == 0.0
    spec.validate(result.theta)
    update_theta(result.theta, PHI, prefs, spec, MCMC, rng=1)  # valid input for the next round


def test_degenerate_boxes_skip_the_optimiser():
    names = ["score_gain", "game_over"]
    spec = dataclasses.replace(
        SPEC.with_tunable(names),
        lower=(1.0,) + (-1.0,) * 6 + (-1.0,),
        upper=(1.0,) + (1.0,) * 6 + (-1.0,),
    )
    result = update_theta(THETA0, PHI, PREFS, spec, BO, rng=0)
    assert not result.accepted and result.num_evaluations == 0
    assert "no tunable entry can move" in result.message
    np.testing.assert_array_equal(result.theta, THETA0)


def test_degenerate_entry_stays_while_others_move():
    spec = dataclasses.replace(SPEC, lower=(1.0,) + (-1.0,) * 7, upper=(1.0,) + (1.0,) * 7)
    result = update_theta(THETA0, PHI, PREFS, spec, MCMC, rng=0)
    assert result.accepted and result.theta[0] == THETA0[0]


def test_nothing_tunable_returns_unchanged():
    spec = dataclasses.replace(SPEC, tunable=(False,) * F)
    result = update_theta(THETA0, PHI, PREFS, spec, BO, rng=0)
    assert not result.accepted and "no tunable entry" in result.message
    np.testing.assert_array_equal(result.theta, THETA0)


def test_empty_preferences_return_unchanged():
    for cfg in (BO, MCMC):
        result = update_theta(THETA0, PHI, make_prefs([], []), SPEC, cfg, rng=0)
        assert not result.accepted
        assert result.message == "no preference data (rankings agree); theta unchanged"
        np.testing.assert_array_equal(result.theta, THETA0)
        assert result.num_evaluations == 0


def test_zero_total_weight_returns_unchanged():
    prefs = make_prefs(PREFS.i, PREFS.j, w=np.zeros(len(PREFS)))
    result = update_theta(THETA0, PHI, prefs, SPEC, MCMC, rng=0)
    assert not result.accepted and "weights sum to 0" in result.message
    assert math.isnan(pair_error(THETA0, PHI, prefs))


def _bad_inputs():
    nan_phi = PHI.copy()
    nan_phi[3, 2] = np.nan
    nan_theta = THETA0.copy()
    nan_theta[1] = np.nan
    out_of_bounds = THETA0.copy()
    out_of_bounds[0] = 1.5
    return {
        "theta-length": ((THETA0[:-1], PHI, PREFS), "shape"),
        "theta-nan": ((nan_theta, PHI, PREFS), "finite"),
        "theta-bounds": ((out_of_bounds, PHI, PREFS), "outside its bounds"),
        "phi-nan": ((THETA0, nan_phi, PREFS), "non-finite"),
        "phi-shape": ((THETA0, PHI[:, :5], PREFS), "Phi must have shape"),
        "index-high": ((THETA0, PHI, make_prefs([0, M], [1, 2])), "pair indices"),
        "index-negative": ((THETA0, PHI, make_prefs([0, -1], [1, 2])), "pair indices"),
        "index-self": ((THETA0, PHI, make_prefs([4], [4])), "pair indices"),
        "weight-negative": ((THETA0, PHI, make_prefs([0], [1], w=[-1.0])), "weights"),
    }


@pytest.mark.parametrize("case", list(_bad_inputs()))
def test_bad_inputs_raise(case):
    args, match = _bad_inputs()[case]
    with pytest.raises(ValueError, match=match):
        update_theta(*args, SPEC, MCMC, rng=0)


BAD_CONFIGS = [
    {"method": "adam"}, {"objective": "hinge"}, {"bo_calls": 0},
    {"bo_initial_points": 50}, {"trust_region": 0.0}, {"trust_region": float("inf")},
    {"beta": -1.0}, {"mcmc_burn_in": 2000}, {"mcmc_trust_region": -0.1},
    {"update_workers": -1},
]  # fmt: skip


@pytest.mark.parametrize("kwargs", BAD_CONFIGS)
def test_config_validation(kwargs):
    with pytest.raises(ValueError):
        AlignmentConfig(**kwargs)


# ---------------------------------------------------------------------------- determinism


@pytest.mark.parametrize(
    "cfg", [dataclasses.replace(BO, bo_calls=5, bo_initial_points=2), MCMC], ids=["bo", "bt_mcmc"]
)
def test_deterministic_given_the_seed(cfg):
    spec = SPEC.with_tunable(["score_gain", "empty_cells", "monotonicity"])
    a = update_theta(THETA0, PHI, PREFS, spec, cfg, rng=np.random.default_rng(7))
    b = update_theta(THETA0, PHI, PREFS, spec, cfg, rng=7)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert (a.accepted, a.objective_after, a.error_after, a.num_evaluations) == (
        b.accepted, b.objective_after, b.error_after, b.num_evaluations)
    assert a.message == b.message


@pytest.mark.parametrize(
    "cfg", [dataclasses.replace(BO, bo_calls=8, bo_initial_points=3), MCMC], ids=["bo", "bt_mcmc"]
)
def test_update_many_in_worker_processes_equals_a_serial_loop(cfg):
    """The seeds' updates side by side in 2 processes give the serial thetas."""
    calls = [(THETA0, PHI * (1 + 0.1 * k), PREFS, SPEC, cfg, np.random.default_rng([3, k]))
             for k in range(3)]
    serial = update_many([c[:-1] + (np.random.default_rng([3, k]),)
                          for k, c in enumerate(calls)], workers=1)
    parallel = update_many(calls, workers=2)
    assert any(r.accepted for r in serial)  # the updates did something to compare
    for a, b in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(a.theta, b.theta)
        assert (a.accepted, a.objective_after, a.message) == (b.accepted, b.objective_after,
                                                              b.message)


def test_resolve_workers():
    assert resolve_workers(1, 8) == 1
    assert resolve_workers(4, 2) == 2  # never more than the updates
    assert resolve_workers(3, 0) == 1
    assert 1 <= resolve_workers(0, 64) <= (os.cpu_count() or 1)


def test_mcmc_posterior_mean_and_diagnostics_against_quadrature():
    """One free weight, a few pairs, a gentle likelihood: the sampler's posterior mean equals
    the mean of `prior x likelihood` integrated on a grid over the box (trapezoid rule, an
    independent reference), and its diagnostics say the chains mixed."""
    spec = SPEC.with_tunable(["empty_cells"])
    phi = np.zeros((4, F), np.float32)
    phi[:, 1] = [3.0, 1.0, 2.0, 0.0]
    prefs = make_prefs([0, 2, 1], [1, 3, 2])  # 0 > 1, 2 > 3, 1 > 2 (against its feature)
    cfg = dataclasses.replace(PAPER.alignment, method="bt_mcmc", beta=0.9, mcmc_samples=6000,
                              mcmc_burn_in=1000, mcmc_trust_region=0.3)
    theta = THETA0.copy()
    result = update_theta(theta, phi, prefs, spec, cfg, rng=0)
    grid = np.linspace(-0.3, 0.3, 2001) + theta[1]
    thetas = np.tile(theta.astype(np.float64), (len(grid), 1))
    thetas[:, 1] = grid
    dphi = phi[[0, 2, 1]] - phi[[1, 3, 2]]
    scale = np.mean(np.linalg.norm(dphi, axis=1))
    log_lik = -np.logaddexp(0.0, -(thetas @ dphi.T.astype(np.float64)) * 0.9 / scale).sum(1)
    density = np.exp(log_lik - log_lik.max())
    reference = np.trapezoid(grid * density, grid) / np.trapezoid(density, grid)
    assert result.proposal[1] == pytest.approx(reference, abs=0.02)
    assert result.diagnostics["rhat"] < 1.05 and result.diagnostics["ess"] > 200
    assert "R-hat" in result.message and "ESS" in result.message


def test_bo_has_no_sampler_diagnostics():
    assert cached_update(dataclasses.replace(BO, bo_calls=5, bo_initial_points=2)
                         ).diagnostics is None
