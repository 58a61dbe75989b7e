"""Tests for `NetworkConfig(actions="afterstates")`: each move's logit (or Q-value)
is one output of the network on that move's afterstate, checked against the NumPy reference
game and a hand-written forward pass (outputs and gradients), plus equivariance and bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference.numpy_2048 import legal_mask, move

from sailor_jax.agents.networks import MASKED_LOGIT, make_network
from sailor_jax.agents.symmetry import ACTION_PERMUTATIONS, CELL_PERMUTATIONS
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import NUM_TILE_CLASSES

NET = NetworkConfig(hidden_sizes=(24, 16), first_layer="one_hot", actions="afterstates")


def _boards(seed: int, n: int) -> np.ndarray:
    """Random boards with empty cells, equal neighbours and some with no legal move."""
    rng = np.random.default_rng(seed)
    boards = rng.integers(0, 9, (n, 16)) * (rng.random((n, 16)) < 0.7)
    boards[0] = [1, 2, 1, 2, 2, 1, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1]  # game over: all illegal
    return boards.astype(np.int32)


def _reference_afterstates(boards: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`[N, 4, 16]` afterstates (the board itself for an illegal move) and `[N, 4]` legality
    from the NumPy reference game."""
    after = np.stack([[move(b, a)[0] for a in range(4)] for b in boards]).astype(np.int32)
    return after, np.stack([legal_mask(b) for b in boards])


def _tower(params: dict, head: str, boards: jax.Array) -> jax.Array:
    """Hand-written shared trunk + one output layer on `[..., 16]` boards -> `[...]`."""
    x = jax.nn.one_hot(boards, NUM_TILE_CLASSES).reshape(*boards.shape[:-1], -1)
    for k in range(2):
        x = jax.nn.relu(x @ params[f"trunk_{k}"]["kernel"] + params[f"trunk_{k}"]["bias"])
    return (x @ params[f"{head}_out"]["kernel"] + params[f"{head}_out"]["bias"])[..., 0]


def _params(key: int) -> dict:
    init = make_network(NET)[0]
    return jax.tree.map(lambda x: x + 0.01, init(jax.random.PRNGKey(key)))  # non-zero biases


def test_logits_are_the_actor_output_on_each_afterstate_and_value_reads_the_board():
    params = _params(0)
    boards = _boards(1, 40)
    after, legal = _reference_afterstates(boards)
    assert not legal[0].any() and legal[1:].any()
    logits, value = jax.jit(make_network(NET)[1])(params, jnp.asarray(boards),
                                                  jnp.asarray(legal))
    assert logits.shape == (40, 4) and value.shape == (40,) and logits.dtype == jnp.float32
    want = np.asarray(_tower(params, "actor", jnp.asarray(after)))
    np.testing.assert_allclose(np.asarray(logits)[legal], want[legal], rtol=1e-5, atol=1e-6)
    assert np.all(np.asarray(logits)[~legal] == MASKED_LOGIT)
    np.testing.assert_allclose(value, _tower(params, "critic", jnp.asarray(boards)),
                               rtol=1e-5, atol=1e-6)


def test_gradients_match_the_hand_written_forward_pass():
    params = _params(2)
    boards = _boards(3, 24)
    after, legal = _reference_afterstates(boards)
    apply = make_network(NET)[1]
    weights = jnp.asarray(np.random.default_rng(4).normal(size=(24, 4)) * legal)

    def loss(p):
        logits, value = apply(p, jnp.asarray(boards), jnp.asarray(legal))
        return jnp.sum(jnp.where(legal, logits, 0.0) * weights) + jnp.sum(value ** 2)

    def reference(p):
        logits = _tower(p, "actor", jnp.asarray(after))
        return jnp.sum(logits * weights) + jnp.sum(_tower(p, "critic", jnp.asarray(boards)) ** 2)

    loss, reference = jax.jit(loss), jax.jit(reference)
    np.testing.assert_allclose(loss(params), reference(params), rtol=1e-5)
    got, want = jax.jit(jax.grad(loss))(params), jax.jit(jax.grad(reference))(params)
    for path, g in jax.tree_util.tree_leaves_with_path(got):
        w = want
        for k in path:
            w = w[k.key]
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6, err_msg=str(path))


def test_q_head_scores_every_afterstate_unmasked():
    init, apply = make_network(NET, head="q")
    params = init(jax.random.PRNGKey(5))
    assert params["q_out"]["kernel"].shape == (16, 1)
    boards = _boards(6, 16)
    after, _ = _reference_afterstates(boards)
    np.testing.assert_allclose(apply(params, jnp.asarray(boards)),
                               _tower(params, "q", jnp.asarray(after)), rtol=1e-5, atol=1e-6)


def test_canonical_afterstate_network_is_exactly_equivariant_and_vmaps():
    cfg = NetworkConfig(hidden_sizes=(16,), actions="afterstates", symmetry="canonical")
    init, apply = make_network(cfg)
    apply = jax.jit(apply)
    stacked = jax.vmap(init)(jax.random.split(jax.random.PRNGKey(7), 2))
    boards = _boards(8, 30)
    mask = np.ones((30, 4), bool)
    logits, value = jax.vmap(apply, in_axes=(0, None, None))(stacked, jnp.asarray(boards),
                                                             jnp.asarray(mask))
    assert logits.shape == (2, 30, 4) and value.shape == (2, 30)
    one = jax.tree.map(lambda x: x[1], stacked)
    for t in range(8):
        view_logits, view_value = apply(one, jnp.asarray(boards[:, CELL_PERMUTATIONS[t]]),
                                        jnp.asarray(mask))
        np.testing.assert_allclose(np.asarray(view_logits)[:, ACTION_PERMUTATIONS[t]],
                                   logits[1], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(view_value, value[1], rtol=1e-5, atol=1e-5)


def test_unknown_actions_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="actions must be 'board' or 'afterstates'"):
        NetworkConfig(actions="afterstate")
