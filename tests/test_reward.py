"""Tests for `sailor_jax.game.reward`: `reward(theta, phi) = phi @ theta` and `RewardSpec`."""

from __future__ import annotations

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sailor_jax.game import features, reward
from sailor_jax.game.reward import THETA0, RewardSpec

F = 8
NAMES = features.FEATURE_NAMES
REWARD = jax.jit(reward.reward)
REWARD_SEEDS = jax.jit(jax.vmap(reward.reward, in_axes=(0, None)))


# ---------------------------------------------------------------------------------------------
# reward(theta, phi)


def test_reward_hand_computed():
    theta = np.array([1.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, -1.0], np.float32)
    phi = np.array([0.5, 0.25, 1.0, 0.3, 0.0, 0.9, 1.0, 1.0], np.float32)
    # 1.0 * 0.5 + 0.1 * 1.0 - 1.0 * 1.0 = -0.4
    np.testing.assert_allclose(REWARD(theta, phi), -0.4, rtol=0, atol=1e-6)


@settings(deadline=None, max_examples=30)
@given(st.integers(0, 2**31 - 1))
def test_reward_equals_numpy_matmul(seed):
    rng = np.random.default_rng(seed)
    theta = rng.uniform(-1, 1, F).astype(np.float32)
    phi = rng.uniform(0, 1, (5, 7, F)).astype(np.float32)
    got = REWARD(theta, phi)
    chex.assert_shape(got, (5, 7))
    chex.assert_type(got, jnp.float32)
    np.testing.assert_allclose(got, phi @ theta, rtol=1e-6, atol=1e-6)


def test_reward_single_and_eager():
    rng = np.random.default_rng(0)
    theta = rng.uniform(-1, 1, F).astype(np.float32)
    phi = rng.uniform(0, 1, F).astype(np.float32)
    got = reward.reward(theta, phi)
    chex.assert_shape(got, ())
    chex.assert_type(got, jnp.float32)
    np.testing.assert_allclose(got, phi @ theta, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(REWARD(theta, phi), got, rtol=1e-6, atol=1e-7)


def test_reward_vmaps_over_seed_axis_of_theta():
    rng = np.random.default_rng(1)
    thetas = rng.uniform(-1, 1, (4, F)).astype(np.float32)
    phi = rng.uniform(0, 1, (6, F)).astype(np.float32)
    got = REWARD_SEEDS(thetas, phi)
    chex.assert_shape(got, (4, 6))
    chex.assert_type(got, jnp.float32)
    for s in range(4):
        np.testing.assert_allclose(got[s], phi @ thetas[s], rtol=1e-6, atol=1e-6)


def test_new_theta_does_not_retrace():
    counted = jax.jit(chex.assert_max_traces(reward.reward, n=1))
    phi = jnp.ones((3, F), jnp.float32)
    for value in (0.1, 0.2, -0.3):
        counted(jnp.full((F,), value, jnp.float32), phi)


# ---------------------------------------------------------------------------------------------
# RewardSpec defaults


def test_default_spec():
    spec = RewardSpec()
    assert spec.names == NAMES
    assert spec.num_features == F
    by_name = dict(zip(spec.names, spec.start, strict=True))
    assert by_name == {
        "score_gain": 1.0,
        "empty_cells": 0.0,
        "max_tile_in_corner": 0.1,
        "monotonicity": 0.0,
        "merges_available": 0.0,
        "smoothness": 0.0,
        "max_tile_increase": 0.0,
        "game_over": -1.0,
    }
    assert spec.lower == (-1.0,) * F
    assert spec.upper == (1.0,) * F
    # The issue does not fix the default mask; the code documents "all tunable".
    assert spec.tunable == (True,) * F
    np.testing.assert_array_equal(spec.tunable_index, np.arange(F))
    theta = spec.validate(spec.start)
    chex.assert_type(theta, np.float32)
    chex.assert_shape(theta, (F,))
    np.testing.assert_allclose(theta, [1.0, 0, 0.1, 0, 0, 0, 0, -1.0], rtol=0, atol=1e-7)
    hash(spec)  # hashable, so it can be a static jit argument


def test_spec_is_frozen():
    spec = RewardSpec()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.start = (0.0,) * F  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# validate


def _theta(**weights: float) -> np.ndarray:
    theta = np.zeros(F, np.float64)
    for name, value in weights.items():
        theta[NAMES.index(name)] = value
    return theta


@pytest.mark.parametrize("length", [0, 7, 9])
def test_validate_rejects_wrong_length(length):
    with pytest.raises(ValueError, match="score_gain"):  # the message lists the features
        RewardSpec().validate(np.zeros(length))


def test_validate_rejects_wrong_rank():
    with pytest.raises(ValueError, match="shape"):
        RewardSpec().validate(np.zeros((1, F)))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_validate_rejects_non_finite_naming_feature(name, bad):
    theta = _theta()
    theta[NAMES.index(name)] = bad
    with pytest.raises(ValueError, match=name):
        RewardSpec().validate(theta)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [1.0001, -1.5, 10.0])
def test_validate_rejects_out_of_bounds_naming_feature(name, bad):
    with pytest.raises(ValueError, match=name):
        RewardSpec().validate(_theta(**{name: bad}))


def test_validate_accepts_bounds_inclusive():
    spec = RewardSpec()
    for theta in (np.ones(F), -np.ones(F), np.zeros(F)):
        np.testing.assert_array_equal(spec.validate(theta), theta.astype(np.float32))


def test_validate_uses_per_feature_bounds():
    spec = RewardSpec(lower=(0.0,) * F, upper=(2.0,) * F, start=(0.5,) * F)
    spec.validate(np.full(F, 2.0))
    theta = np.full(F, 0.5)
    theta[NAMES.index("empty_cells")] = -0.1  # fine for the default bounds, not for [0, 2]
    RewardSpec().validate(theta)
    with pytest.raises(ValueError, match="empty_cells"):
        spec.validate(theta)


# ---------------------------------------------------------------------------------------------
# with_weights / with_tunable


def test_with_weights_by_name():
    spec = RewardSpec().with_weights({"empty_cells": 0.5, "smoothness": -0.25})
    assert dict(zip(spec.names, spec.start, strict=True)) == {
        name: {"empty_cells": 0.5, "smoothness": -0.25}.get(name, 0.0) for name in NAMES
    }
    assert spec.lower == RewardSpec().lower


def test_with_weights_rejects_unknown_name():
    with pytest.raises(ValueError, match="not_a_feature"):
        RewardSpec().with_weights({"not_a_feature": 0.1})


def test_with_weights_rejects_out_of_bounds():
    with pytest.raises(ValueError, match="game_over"):
        RewardSpec().with_weights({"game_over": -2.0})


def test_with_tunable():
    spec = RewardSpec().with_tunable(["empty_cells", "game_over"])
    assert spec.tunable == tuple(n in ("empty_cells", "game_over") for n in NAMES)
    np.testing.assert_array_equal(spec.tunable_index, [1, 7])
    assert spec.start == THETA0
    assert RewardSpec().with_tunable([]).tunable_index.size == 0


def test_with_tunable_rejects_unknown_name():
    with pytest.raises(ValueError, match="bogus"):
        RewardSpec().with_tunable(["empty_cells", "bogus"])


# ---------------------------------------------------------------------------------------------
# Invalid specs


def test_lower_above_upper_raises_naming_feature():
    lower = (-1.0,) * 5 + (0.5,) + (-1.0,) * 2
    upper = (1.0,) * 5 + (0.2,) + (1.0,) * 2
    with pytest.raises(ValueError, match="smoothness"):
        RewardSpec(lower=lower, upper=upper)


@pytest.mark.parametrize("field", ["start", "lower", "upper", "tunable"])
def test_length_mismatch_raises(field):
    value = getattr(RewardSpec(), field)[:-1]
    with pytest.raises(ValueError, match=field):
        RewardSpec(**{field: value})


def test_names_length_mismatch_raises():
    with pytest.raises(ValueError):
        RewardSpec(names=NAMES[:-1])


def test_start_outside_bounds_raises():
    with pytest.raises(ValueError, match="max_tile_in_corner"):
        RewardSpec(upper=(1.0, 1.0, 0.05, 1.0, 1.0, 1.0, 1.0, 1.0))


def test_non_finite_bounds_raise():
    with pytest.raises(ValueError, match="score_gain"):
        RewardSpec(lower=(-math.inf,) + (-1.0,) * 7)
