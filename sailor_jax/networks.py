"""Actor-critic and Q networks: `nnx.Module`s crossed into functional JAX once with `nnx.split`.

Training code sees only `make_network(cfg) -> (init_params, apply)` (PPO) and
`make_q_network(cfg) -> (init_params, apply)` (DQN); nothing else in the package touches Flax.
Illegal actions are masked in the actor's logits; Q-values come back unmasked.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sailor_jax.config import NetworkConfig
from sailor_jax.env import NUM_ACTIONS, NUM_TILE_CLASSES, obs_one_hot

MASKED_LOGIT = -1e9
"""Logit given to illegal actions: large and finite, so softmax and entropy stay NaN-free."""

_ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh, "relu": jax.nn.relu, "gelu": jax.nn.gelu}


def _mlp(sizes: list[int], out: int, out_scale: float, rngs: nnx.Rngs) -> list[nnx.Linear]:
    layers, width = [], sizes[0]
    for h in sizes[1:]:
        layers.append(nnx.Linear(width, h, kernel_init=nnx.initializers.orthogonal(np.sqrt(2)),
                                 bias_init=nnx.initializers.zeros_init(), rngs=rngs))
        width = h
    layers.append(nnx.Linear(width, out, kernel_init=nnx.initializers.orthogonal(out_scale),
                             bias_init=nnx.initializers.zeros_init(), rngs=rngs))
    return layers


class ActorCritic(nnx.Module):
    """Separate MLP towers: policy logits `[..., 4]` and state value `[...]`.

    Layers are named attributes (`actor_0`, ..., `critic_0`, ...) so that the parameters are
    a plain nested dict with string keys (friendly to optax and orbax).
    """

    def __init__(self, cfg: NetworkConfig, rngs: nnx.Rngs):
        sizes = [16 * NUM_TILE_CLASSES, *cfg.hidden_sizes]
        self.num_layers = len(sizes)
        self.activation = cfg.activation
        for tower, out, scale in (("actor", NUM_ACTIONS, 0.01), ("critic", 1, 1.0)):
            for k, layer in enumerate(_mlp(sizes, out, scale, rngs)):
                setattr(self, f"{tower}_{k}", layer)

    def _tower(self, tower: str, x: jax.Array) -> jax.Array:
        act = _ACTIVATIONS[self.activation]
        for k in range(self.num_layers - 1):
            x = act(getattr(self, f"{tower}_{k}")(x))
        return getattr(self, f"{tower}_{self.num_layers - 1}")(x)

    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        return self._tower("actor", x), self._tower("critic", x)[..., 0]


Params = dict
InitFn = Callable[[jax.Array], Params]
ApplyFn = Callable[[Params, jax.Array, jax.Array], tuple[jax.Array, jax.Array]]


def make_network(cfg: NetworkConfig) -> tuple[InitFn, ApplyFn]:
    """Build `(init_params, apply)` for the actor-critic.

    `init_params(key) -> params` (a nested dict of float32 arrays; orthogonal sqrt(2) hidden,
    0.01 policy head, 1.0 value head, zero biases). `apply(params, board, legal_action_mask)
    -> (logits, value)` takes `[..., 16]` integer exponents and a `[..., 4] bool` mask and
    returns masked logits `[..., 4] float32` (illegal = `MASKED_LOGIT`) and values `[...]`.
    Both are pure and compiled-safe.
    """
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: ActorCritic(cfg, nnx.Rngs(0))))

    def init_params(key: jax.Array) -> Params:
        return nnx.to_pure_dict(nnx.state(ActorCritic(cfg, nnx.Rngs(params=key)), nnx.Param))

    def apply(params: Params, board: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
        state = jax.tree.map(lambda x: x, abstract_state)  # a fresh copy to fill in
        nnx.replace_by_pure_dict(state, params)
        model = nnx.merge(graphdef, state)
        logits, value = model(obs_one_hot(board))
        return jnp.where(mask, logits, MASKED_LOGIT), value

    return init_params, apply


class QNetwork(nnx.Module):
    """One MLP from the one-hot board to `[..., 4]` action values (layers `q_0`, `q_1`, ...)."""

    def __init__(self, cfg: NetworkConfig, rngs: nnx.Rngs):
        sizes = [16 * NUM_TILE_CLASSES, *cfg.hidden_sizes]
        self.num_layers = len(sizes)
        self.activation = cfg.activation
        for k, layer in enumerate(_mlp(sizes, NUM_ACTIONS, 1.0, rngs)):
            setattr(self, f"q_{k}", layer)

    def __call__(self, x: jax.Array) -> jax.Array:
        act = _ACTIVATIONS[self.activation]
        for k in range(self.num_layers - 1):
            x = act(getattr(self, f"q_{k}")(x))
        return getattr(self, f"q_{self.num_layers - 1}")(x)


QApplyFn = Callable[[Params, jax.Array], jax.Array]


def make_q_network(cfg: NetworkConfig) -> tuple[InitFn, QApplyFn]:
    """Build `(init_params, apply)` for the DQN action-value network.

    `init_params(key) -> params` (nested dict of float32 arrays; orthogonal sqrt(2) hidden,
    1.0 output layer, zero biases). `apply(params, board) -> q` takes `[..., 16]` integer
    exponents and returns `[..., 4] float32` Q-values for every action, legal or not (the DQN
    policy and target mask them). Both are pure and compiled-safe.
    """
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: QNetwork(cfg, nnx.Rngs(0))))

    def init_params(key: jax.Array) -> Params:
        return nnx.to_pure_dict(nnx.state(QNetwork(cfg, nnx.Rngs(params=key)), nnx.Param))

    def apply(params: Params, board: jax.Array) -> jax.Array:
        state = jax.tree.map(lambda x: x, abstract_state)
        nnx.replace_by_pure_dict(state, params)
        return nnx.merge(graphdef, state)(obs_one_hot(board))

    return init_params, apply


def masked_log_prob_entropy(logits: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Return `(log_softmax [..., 4], entropy [...])` over legal actions only (NaN-free)."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    p = jnp.exp(log_p)
    entropy = -jnp.sum(jnp.where(mask, p * log_p, 0.0), axis=-1)
    return log_p, entropy
