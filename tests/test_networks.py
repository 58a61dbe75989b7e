"""Tests for `agents.networks`: the one factory, both heads, masking, jit/vmap, bad input."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sailor_jax.agents import board_layers, networks
from sailor_jax.agents.networks import MASKED_LOGIT, make_network, masked_log_prob_entropy
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import NUM_TILE_CLASSES

NET = NetworkConfig(hidden_sizes=(32, 16), activation="tanh", trunk="separate")  # v0 towers
BOARDS = jax.random.randint(jax.random.PRNGKey(1), (5, 16), 0, 12)
MASK = jnp.asarray([[1, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1], [1, 1, 0, 0], [0, 1, 0, 1]], bool)


def test_actor_critic_shapes_masking_and_parameter_names():
    init, apply = make_network(NET)
    params = init(jax.random.PRNGKey(0))
    assert sorted(params) == ["actor_0", "actor_1", "actor_2", "critic_0", "critic_1",
                              "critic_2"]
    assert params["actor_0"]["kernel"].shape == (16 * NUM_TILE_CLASSES, 32)
    logits, value = apply(params, BOARDS, MASK)
    assert logits.shape == (5, 4) and value.shape == (5,) and logits.dtype == jnp.float32
    assert np.all(np.asarray(logits)[~np.asarray(MASK)] == MASKED_LOGIT)
    assert np.all(np.abs(np.asarray(logits)[np.asarray(MASK)]) < 10)
    np.testing.assert_array_equal(params["critic_2"]["bias"], 0.0)


def test_q_head_is_unmasked_and_matches_a_manual_forward_pass():
    init, apply = make_network(NET, head="q")
    params = init(jax.random.PRNGKey(0))
    assert sorted(params) == ["q_0", "q_1", "q_2"]
    q = apply(params, BOARDS)
    x = jax.nn.one_hot(BOARDS, NUM_TILE_CLASSES).reshape(5, -1)
    for k in range(2):
        x = jnp.tanh(x @ params[f"q_{k}"]["kernel"] + params[f"q_{k}"]["bias"])
    expected = x @ params["q_2"]["kernel"] + params["q_2"]["bias"]
    np.testing.assert_allclose(q, expected, rtol=1e-5, atol=1e-6)


def test_jit_and_vmap_agree_with_the_plain_call():
    init, apply = make_network(NET)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *[init(k) for k in keys])
    logits, value = jax.vmap(apply, in_axes=(0, None, None))(stacked, BOARDS, MASK)
    one_logits, one_value = jax.jit(apply)(init(keys[1]), BOARDS, MASK)
    # Two compiled programs of the same function: equal up to float reassociation.
    np.testing.assert_allclose(logits[1], one_logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value[1], one_value, rtol=1e-5, atol=1e-6)


def test_masked_entropy_ignores_illegal_actions():
    logits = jnp.where(MASK, 0.0, MASKED_LOGIT)  # uniform over the legal actions
    log_p, entropy = masked_log_prob_entropy(logits, MASK)
    np.testing.assert_allclose(entropy, np.log(np.sum(MASK, -1)), rtol=1e-6)
    assert np.all(np.isfinite(log_p))


def test_unknown_head_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown network head 'policy'"):
        make_network(NET, head="policy")


@pytest.mark.parametrize("head", ["actor_critic", "q"])
def test_embedding_first_layer_equals_the_one_hot_matmul(head):
    """The gather-and-sum first layer is the same function, forward and backward."""
    one_hot = NetworkConfig(hidden_sizes=(64, 32), first_layer="one_hot", trunk="separate")
    embedding = NetworkConfig(hidden_sizes=(64, 32), first_layer="embedding", trunk="separate")
    init, apply_a = make_network(one_hot, head)
    _, apply_b = make_network(embedding, head)
    apply_a, apply_b = jax.jit(apply_a), jax.jit(apply_b)
    params = init(jax.random.PRNGKey(4))
    # Non-zero biases, so the bias path is checked too.
    params = jax.tree.map(lambda x: x + 0.01, params)
    boards = jax.random.randint(jax.random.PRNGKey(5), (32, 16), 0, NUM_TILE_CLASSES)
    mask = jax.random.bernoulli(jax.random.PRNGKey(6), 0.7, (32, 4)).at[:, 0].set(True)
    args = (boards, mask) if head == "actor_critic" else (boards,)

    def total(apply, p):
        return sum(jnp.sum(jnp.where(jnp.abs(x) < 1e8, x, 0.0)) for x in
                   jax.tree.leaves(apply(p, *args)))

    for a, b in zip(jax.tree.leaves(apply_a(params, *args)),
                    jax.tree.leaves(apply_b(params, *args)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    grads_a = jax.jit(jax.grad(lambda p: total(apply_a, p)))(params)
    grads_b = jax.jit(jax.grad(lambda p: total(apply_b, p)))(params)
    for a, b in zip(jax.tree.leaves(grads_a), jax.tree.leaves(grads_b), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    first = "actor_0" if head == "actor_critic" else "q_0"
    used = np.zeros(16 * NUM_TILE_CLASSES, bool)  # rows no board selects get no gradient
    used[(np.arange(16) * NUM_TILE_CLASSES + np.asarray(boards)).ravel()] = True
    assert np.all(np.asarray(grads_b[first]["kernel"])[~used] == 0)
    assert np.any(np.asarray(grads_b[first]["kernel"])[used] != 0)


@pytest.mark.parametrize("backend, one_hot", [("cpu", False), ("gpu", True), ("tpu", True)])
def test_embedding_is_a_gather_on_the_cpu_and_the_one_hot_matmul_elsewhere(
        monkeypatch, backend, one_hot):
    assert board_layers.reads_one_hot("one_hot", backend)
    assert board_layers.reads_one_hot("embedding", backend) == one_hot
    monkeypatch.setattr(networks, "reads_one_hot",
                        lambda first_layer: board_layers.reads_one_hot(first_layer, backend))
    init, apply = make_network(dataclasses.replace(NET, first_layer="embedding"))
    _, apply_one_hot = make_network(dataclasses.replace(NET, first_layer="one_hot"))
    params = jax.tree.map(lambda x: x + 0.01, init(jax.random.PRNGKey(9)))
    jaxpr = str(jax.make_jaxpr(apply)(params, BOARDS, MASK))
    assert ("gather" in jaxpr) != one_hot
    for a, b in zip(apply(params, BOARDS, MASK), apply_one_hot(params, BOARDS, MASK),
                    strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("first_layer", ["conv", "lines", "ntuple"])
def test_unknown_first_layer_is_a_clear_error(first_layer):
    with pytest.raises(ValueError, match="first_layer must be 'one_hot' or 'embedding'"):
        NetworkConfig(first_layer=first_layer)


@pytest.mark.parametrize("first_layer", ["one_hot", "embedding"])
def test_shared_trunk_matches_a_numpy_forward(first_layer):
    """One trunk, a linear output per head; checked against plain NumPy."""
    cfg = NetworkConfig(hidden_sizes=(32, 16), activation="tanh", trunk="shared",
                        first_layer=first_layer)
    init, apply = make_network(cfg)
    params = jax.tree.map(lambda x: x + 0.01, init(jax.random.PRNGKey(7)))
    assert sorted(params) == ["actor_out", "critic_out", "trunk_0", "trunk_1"]
    boards = np.asarray(jax.random.randint(jax.random.PRNGKey(8), (20, 16), 0, NUM_TILE_CLASSES))
    mask = np.ones((20, 4), bool)
    mask[::3, 1] = False
    logits, value = apply(params, jnp.asarray(boards), jnp.asarray(mask))
    p = jax.tree.map(np.asarray, params)
    x = np.eye(NUM_TILE_CLASSES, dtype=np.float32)[boards].reshape(20, -1)
    h = np.tanh(x @ p["trunk_0"]["kernel"] + p["trunk_0"]["bias"])
    h = np.tanh(h @ p["trunk_1"]["kernel"] + p["trunk_1"]["bias"])
    ref_logits = h @ p["actor_out"]["kernel"] + p["actor_out"]["bias"]
    ref_value = (h @ p["critic_out"]["kernel"] + p["critic_out"]["bias"])[:, 0]
    np.testing.assert_allclose(np.asarray(logits)[mask], ref_logits[mask], rtol=1e-5, atol=1e-5)
    assert np.all(np.asarray(logits)[~mask] == MASKED_LOGIT)
    np.testing.assert_allclose(value, ref_value, rtol=1e-5, atol=1e-5)
    q_params = make_network(cfg, head="q")[0](jax.random.PRNGKey(0))
    assert sorted(q_params) == ["q_out", "trunk_0", "trunk_1"]


def test_unknown_trunk_is_a_clear_error():
    with pytest.raises(ValueError, match="trunk must be 'separate' or 'shared'"):
        NetworkConfig(trunk="tied")
