"""Tests of `experiments/oracle_recovery.py`: the linear-oracle recovery experiment.

The smoke test plays real (tiny) 2048 pools end to end; the recovery tests use synthetic,
independent features, so they check the ranking -> preferences -> update machinery apart from
the feature correlations of real games.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import load_script

from sailor_jax.types import Preferences
from sailor_lab.recovery import PairStore, tunable_cosine

orc = load_script("experiments/oracle_recovery.py")

THREE = "score_gain,empty_cells,max_tile_in_corner"


def synthetic_pools(seed: int, m: int = 32, iterations: int = 3, heldout: int = 128):
    """Independent N(0, 1) feature sums; game_over is 1 for every game, as in real play."""
    rng = np.random.default_rng(seed)

    def pool(n: int) -> np.ndarray:
        phi = rng.normal(size=(n, 8))
        phi[:, 7] = 1.0
        return phi

    return [pool(m) for _ in range(iterations)], pool(heldout), rng


def synthetic_theta_star(rng: np.random.Generator) -> str:
    """Random weights on the three tunable features, 0 on the frozen ones (game_over aside)."""
    theta_star = np.zeros(8)
    theta_star[:3] = rng.uniform(-1.0, 1.0, 3)
    theta_star[7] = -0.5
    return ",".join(f"{v:.6f}" for v in theta_star)


def test_smoke_json_lines(capsys):
    args = orc.Args(iterations=2, trajectories=16, heldout=32, max_len=300, hidden=16,
                    bo_calls=10, json=True)
    results = orc.main(args)
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]  # only JSON
    assert [r["update"] for r in records] == ["bo", "bt_mcmc"]
    for record, result in zip(records, results, strict=True):
        assert {"update", "cosine", "heldout_agreement", "iterations"} <= set(record)
        assert record["iterations"] == 2
        assert -1.0 <= record["cosine"] <= 1.0 and math.isfinite(record["cosine"])
        assert 0.0 <= record["heldout_agreement"] <= 1.0
        assert len(record["cosine_history"]) == 3  # theta0, then one row per iteration
        assert len(record["theta"]) == 8 and all(-1.0 <= v <= 1.0 for v in record["theta"])
        assert record["theta"][7] == -1.0  # game_over is not tunable by default
        assert record["cosine"] == pytest.approx(result["cosine"])


@settings(max_examples=4, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_bo_recovers_synthetic_theta_star(seed):
    pools, heldout, rng = synthetic_pools(seed)
    args = orc.Args(theta_star=synthetic_theta_star(rng), tunable=THREE, updates="bo",
                    bo_calls=15, trust_region=None, seed=seed)
    result = orc.recover("bo", pools, heldout, args)
    best = max(r["cosine"] for r in result["rows"][1:])
    assert best >= 0.9, [round(r["cosine"], 3) for r in result["rows"]]


@pytest.mark.parametrize("method", ["bo", "bt_mcmc"])
def test_accumulated_recovery_ends_aligned(method):
    pools, heldout, rng = synthetic_pools(seed=7)
    args = orc.Args(theta_star=synthetic_theta_star(rng), tunable=THREE, updates=method,
                    bo_calls=15, trust_region=None, accumulate=True)
    result = orc.recover(method, pools, heldout, args)
    assert result["cosine"] >= 0.9 and result["heldout_agreement"] >= 0.9, result["rows"]


def test_run_recovery_accepts_given_pools():
    pools, heldout, rng = synthetic_pools(seed=3, iterations=1)
    args = orc.Args(theta_star=synthetic_theta_star(rng), tunable=THREE, updates="bt_mcmc")
    (result,) = orc.run_recovery(args, pools=(pools, heldout))
    assert result["update"] == "bt_mcmc" and result["iterations"] == 1
    assert result["rows"][1]["num_discordant"] > 0


def test_pair_store_offsets_indices():
    store = PairStore()
    prefs = Preferences(i=np.array([0], np.int32), j=np.array([1], np.int32),
                        w=np.ones(1, np.float32), discordant=np.array([True]))
    store.add(np.zeros((2, 8)), prefs)
    phi, union = store.add(np.ones((3, 8)), prefs)
    assert phi.shape == (5, 8)
    np.testing.assert_array_equal(union.i, [0, 2])
    np.testing.assert_array_equal(union.j, [1, 3])


def test_tunable_cosine_is_scale_invariant_and_masked():
    spec = orc.Args(tunable=THREE).spec()
    a = np.array([1.0, 2.0, 3.0, 9.0, 9.0, 9.0, 9.0, 9.0])
    b = np.array([2.0, 4.0, 6.0, -9.0, 0.0, 0.0, 0.0, 0.0])
    assert tunable_cosine(a, b, spec) == pytest.approx(1.0)
    assert math.isnan(tunable_cosine(np.zeros(8), b, spec))


@pytest.mark.parametrize("kwargs, match", [
    ({"theta_star": "1,2,3"}, "8 finite"),
    ({"theta_star": "1,2,x,0,0,0,0,0"}, "comma-separated numbers"),
    ({"theta_star": "1,0,0,0,0,0,0,nan"}, "8 finite"),
    ({"start": "2,0,0,0,0,0,0,0"}, "outside its bounds"),
    ({"tunable": "score_gain,wins"}, "unknown feature"),
    ({"updates": "bo,sgd"}, "--updates"),
    ({"trajectories": 1}, "--trajectories"),
    ({"objective": "hinge"}, "objective"),
])
def test_args_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        orc.Args(**kwargs)
