"""Tests for `agents.board_layers.TupleFeatures` (issue 26): the n-tuple first layer against a
plain NumPy lookup-table network, outputs and gradients, plus its invariants and bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sailor_jax.agents.board_layers import tuple_indices
from sailor_jax.agents.networks import make_network
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import NUM_TILE_CLASSES

# The 17 tuples as flat cell lists, written out independently of the JAX index arithmetic.
ROWS = [[4 * r + c for c in range(4)] for r in range(4)]
COLS = [[4 * r + c for r in range(4)] for c in range(4)]
SQUARES = [[4 * r + c, 4 * r + c + 1, 4 * r + c + 4, 4 * r + c + 5]
           for r in range(3) for c in range(3)]
SHAPES = (("rows", "row_bias", ROWS), ("cols", "col_bias", COLS),
          ("squares", "square_bias", SQUARES))
F, H, B = 3, 24, 40


def _boards(seed: int, n: int = B) -> np.ndarray:
    """Boards with repeated rows (so table rows are hit more than once) and big tiles."""
    rng = np.random.default_rng(seed)
    boards = rng.integers(0, NUM_TILE_CLASSES, size=(n, 16))
    boards[::4, 4:8] = boards[::4, 0:4]  # a row equal to the one above it
    return boards


def _index(board: np.ndarray, cells: list[int]) -> int:
    return sum(min(int(board[cell]), 15) * 16 ** k for k, cell in enumerate(cells))


def _numpy_forward(p: dict, boards: np.ndarray):
    """The shared-trunk ReLU network with an n-tuple first layer, in loops and NumPy."""
    pre = np.zeros((len(boards), 17, F), np.float32)
    t = 0
    for table, bias, tuples in SHAPES:
        for cells in tuples:
            for b, board in enumerate(boards):
                pre[b, t] = p["trunk_ntuple"][table][_index(board, cells)] + \
                    p["trunk_ntuple"][bias]
            t += 1
    x = np.maximum(pre, 0).reshape(len(boards), -1)
    h_pre = x @ p["trunk_0"]["kernel"] + p["trunk_0"]["bias"]
    h = np.maximum(h_pre, 0)
    logits = h @ p["actor_out"]["kernel"] + p["actor_out"]["bias"]
    value = (h @ p["critic_out"]["kernel"] + p["critic_out"]["bias"])[:, 0]
    return pre, h_pre, h, logits, value


def _network(trunk: str = "shared"):
    cfg = NetworkConfig(hidden_sizes=(H,), activation="relu", trunk=trunk,
                        first_layer="ntuple", tuple_features=F)
    init, apply = make_network(cfg)
    return jax.tree.map(lambda x: x + 0.01, init(jax.random.PRNGKey(5))), apply


def test_tuple_indices_match_the_cell_lists():
    boards = _boards(0)
    rows, cols, squares = map(np.asarray, tuple_indices(jnp.asarray(boards)))
    for got, tuples in ((rows, ROWS), (cols, COLS), (squares, SQUARES)):
        want = np.array([[_index(board, cells) for cells in tuples] for board in boards])
        np.testing.assert_array_equal(got, want)
    assert rows.dtype == np.int32 and squares.shape == (B, 9)
    assert 0 <= squares.min() and squares.max() < 16 ** 4


def test_ntuple_network_matches_a_numpy_lookup_table_network():
    params, apply = _network()
    p = jax.tree.map(np.asarray, params)
    assert p["trunk_ntuple"]["squares"].shape == (16 ** 4, F)
    assert p["trunk_0"]["kernel"].shape == (17 * F, H)
    boards = _boards(1)
    logits, value = apply(params, jnp.asarray(boards), jnp.ones((B, 4), bool))
    _, _, _, ref_logits, ref_value = _numpy_forward(p, boards)
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-5)


def test_ntuple_gradients_match_numpy_backpropagation():
    """d(sum(value) + sum(C * logits)) by hand: the table gradient is a scatter-add of the
    pre-activation gradient into the rows the tuples looked up."""
    params, apply = _network()
    p = jax.tree.map(np.asarray, params)
    boards = _boards(2)
    weights = np.random.default_rng(3).normal(size=(B, 4)).astype(np.float32)

    def loss(q):
        logits, value = apply(q, jnp.asarray(boards), jnp.ones((B, 4), bool))
        return jnp.sum(value) + jnp.sum(weights * logits)

    grads = jax.tree.map(np.asarray, jax.grad(loss)(params))
    pre, h_pre, h, _, _ = _numpy_forward(p, boards)
    d_h = p["critic_out"]["kernel"][:, 0] + weights @ p["actor_out"]["kernel"].T
    d_h_pre = d_h * (h_pre > 0)
    np.testing.assert_allclose(grads["trunk_0"]["kernel"],
                               np.maximum(pre, 0).reshape(B, -1).T @ d_h_pre, rtol=1e-4,
                               atol=1e-4)
    d_pre = (d_h_pre @ p["trunk_0"]["kernel"].T).reshape(B, 17, F) * (pre > 0)
    t = 0
    for table, bias, tuples in SHAPES:
        want = np.zeros_like(p["trunk_ntuple"][table])
        for cells in tuples:
            for b, board in enumerate(boards):
                want[_index(board, cells)] += d_pre[b, t]
            t += 1
        got = grads["trunk_ntuple"][table]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert np.count_nonzero(np.any(got != 0, axis=1)) <= B * len(tuples)  # rows hit only
        np.testing.assert_allclose(grads["trunk_ntuple"][bias],
                                   d_pre[:, t - len(tuples):t].sum(axis=(0, 1)), rtol=1e-4,
                                   atol=1e-4)


def test_tiles_beyond_32768_share_the_last_class_and_jit_vmap_agree():
    params, apply = _network(trunk="separate")
    boards = _boards(4, n=8)
    clipped = np.minimum(boards, 15)
    mask = jnp.ones((8, 4), bool)
    a = apply(params, jnp.asarray(boards), mask)
    b = jax.jit(apply)(params, jnp.asarray(clipped), mask)
    c = jax.vmap(apply, in_axes=(None, 0, 0))(params, jnp.asarray(boards)[:, None],
                                              mask[:, None])
    for x, y, z in zip(a, b, c, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(x, np.asarray(z)[:, 0], rtol=1e-5, atol=1e-5)
    assert sorted(params) == ["actor_0", "actor_1", "actor_ntuple", "critic_0", "critic_1",
                              "critic_ntuple"]


def test_non_positive_tuple_features_is_a_clear_error():
    with pytest.raises(ValueError, match="tuple_features must be positive"):
        NetworkConfig(first_layer="ntuple", tuple_features=0)
    with pytest.raises(ValueError, match="'ntuple'"):
        NetworkConfig(first_layer="ntuples")
