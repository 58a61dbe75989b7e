"""Tests for `sailor_jax.rollout`: trajectories for the judge, their feature sums, bad input."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from sailor_jax import rollout
from sailor_jax.config import NetworkConfig
from sailor_jax.features import phi
from sailor_jax.networks import make_network

NET = NetworkConfig(hidden_sizes=(8,))
PARAMS = make_network(NET)[0](jax.random.PRNGKey(0))


def test_collect_phi_matches_recomputed_features():
    net = NetworkConfig(hidden_sizes=(8,))
    params = make_network(net)[0](jax.random.PRNGKey(0))
    batch = jax.device_get(rollout.make_collect(net, 6, 400)(params, jax.random.PRNGKey(1)))
    assert batch.boards.shape == (6, 401, 16) and batch.Phi.shape == (6, 8)
    for i in range(6):
        n = int(batch.lengths[i])
        terminated = np.zeros(n, bool)
        terminated[-1] = not batch.truncated[i]
        expected = np.asarray(phi(batch.boards[i, :n], batch.boards[i, 1:n + 1],
                                  batch.score_gains[i, :n], terminated)).sum(0)
        np.testing.assert_allclose(batch.Phi[i], expected, rtol=1e-5, atol=1e-4)
        assert batch.score[i] == pytest.approx(batch.score_gains[i].sum())
        assert (batch.actions[i, n:] == -1).all() and (batch.actions[i, :n] >= 0).all()
        assert batch.max_tile[i] == 2 ** int(batch.boards[i, n].max())


def test_collect_is_deterministic_per_key_and_vmaps_over_seeds():
    collect = rollout.make_collect(NET, 3, 50)
    a = jax.device_get(collect(PARAMS, jax.random.PRNGKey(2)))
    b = jax.device_get(collect(PARAMS, jax.random.PRNGKey(2)))
    np.testing.assert_array_equal(a.boards, b.boards)
    params2 = jax.tree.map(lambda x: np.stack([x, x]), PARAMS)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    both = jax.device_get(jax.vmap(collect)(params2, keys))
    assert both.boards.shape == (2, 3, 51, 16) and both.Phi.shape == (2, 3, 8)
    one = jax.device_get(collect(PARAMS, keys[1]))
    np.testing.assert_array_equal(both.actions[1], one.actions)
    assert both.boards.dtype == np.int8 and both.lengths.dtype == np.int32
    # A 50-move cap: short games end, the rest are flagged truncated at exactly 50 moves.
    assert np.all((both.lengths == 50) | ~both.truncated)
    assert np.all(both.lengths <= 50)


@pytest.mark.parametrize("num, max_len", [(0, 10), (2, 0), (-1, 5)])
def test_bad_sizes_raise(num, max_len):
    with pytest.raises(ValueError, match="positive"):
        rollout.make_collect(NET, num, max_len)
