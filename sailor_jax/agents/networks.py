"""Actor-critic and Q networks: `nnx.Module`s crossed into functional JAX once with `nnx.split`.

Training code sees only `make_network(cfg, head) -> (init_params, apply)`, the one factory for
the PPO actor-critic and the DQN Q-network; nothing else in the package touches Flax.
Illegal actions are masked in the actor's logits; Q-values come back unmasked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from sailor_jax.agents import symmetry
from sailor_jax.agents.board_layers import embed, reads_one_hot
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import NUM_ACTIONS, NUM_TILE_CLASSES, obs_one_hot
from sailor_jax.game.expert import afterstates

MASKED_LOGIT = -1e9
"""Logit given to illegal actions: large and finite, so softmax and entropy stay NaN-free."""

_ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "tanh": jnp.tanh, "relu": jax.nn.relu, "gelu": jax.nn.gelu}


def _hidden(sizes: list[int], rngs: nnx.Rngs) -> list[nnx.Linear]:
    """Hidden layers `sizes[0] -> sizes[1] -> ...`: orthogonal sqrt(2), zero bias."""
    return [nnx.Linear(a, b, kernel_init=nnx.initializers.orthogonal(np.sqrt(2)),
                       bias_init=nnx.initializers.zeros_init(), rngs=rngs)
            for a, b in zip(sizes[:-1], sizes[1:], strict=True)]


def _output(width: int, out: int, scale: float, rngs: nnx.Rngs) -> nnx.Linear:
    return nnx.Linear(width, out, kernel_init=nnx.initializers.orthogonal(scale),
                      bias_init=nnx.initializers.zeros_init(), rngs=rngs)


HEADS: dict[str, tuple[tuple[str, int, float], ...]] = {
    "actor_critic": (("actor", NUM_ACTIONS, 0.01), ("critic", 1, 1.0)),
    "q": (("q", NUM_ACTIONS, 1.0),)}
"""Per head kind, its towers: (name, outputs, orthogonal scale of the output layer)."""


class Towers(nnx.Module):
    """MLP towers over the board, one per output head (or one shared trunk, `cfg.trunk`).

    The first layer reads the board as `cfg.first_layer` says: a matmul on the one-hot
    encoding, or the same function as an embedding gather-and-sum (`board_layers.embed`) on
    the CPU and the matmul elsewhere (`board_layers.reads_one_hot`).

    Layers are named attributes so that the parameters are a plain nested dict with string
    keys (friendly to optax and orbax): separate towers `actor_0`, ..., `critic_0`, ... (or
    `q_0`, ...), the last of each its output layer; a shared trunk `trunk_0`, ... and one
    output layer per head, `actor_out`, `critic_out` (or `q_out`).
    """

    def __init__(self, cfg: NetworkConfig, head: str, rngs: nnx.Rngs):
        sizes = [16 * NUM_TILE_CLASSES, *cfg.hidden_sizes]
        self.activation, self.first_layer = cfg.activation, cfg.first_layer
        self.heads = tuple(name for name, _, _ in HEADS[head])
        self.towers = ("trunk",) if cfg.trunk == "shared" else self.heads
        self.num_hidden = len(sizes) - 1
        per_move = 1 if cfg.actions == "afterstates" else NUM_ACTIONS  # outputs per move
        outputs = {name: (per_move if out == NUM_ACTIONS else out, scale)
                   for name, out, scale in HEADS[head]}
        for tower in self.towers:  # creation order fixes the init RNG stream: keep it
            for k, layer in enumerate(_hidden(sizes, rngs)):
                setattr(self, f"{tower}_{k}", layer)
            if tower in outputs:
                setattr(self, f"{tower}_{self.num_hidden}",
                        _output(sizes[-1], *outputs[tower], rngs))
        if cfg.trunk == "shared":
            for name, (out, scale) in outputs.items():
                setattr(self, f"{name}_out", _output(sizes[-1], out, scale, rngs))

    def __call__(self, board: jax.Array) -> tuple[jax.Array, ...]:
        """`[..., 16]` integer exponents -> one raw `[..., out]` output per head."""
        act = _ACTIVATIONS[self.activation]
        x = obs_one_hot(board) if reads_one_hot(self.first_layer) else None
        features = {}
        for tower in self.towers:
            first = getattr(self, f"{tower}_0")
            h = act(first(x) if x is not None else embed(first, board))
            for k in range(1, self.num_hidden):
                h = act(getattr(self, f"{tower}_{k}")(h))
            features[tower] = h
        if self.towers == ("trunk",):
            return tuple(getattr(self, f"{name}_out")(features["trunk"]) for name in self.heads)
        return tuple(getattr(self, f"{name}_{self.num_hidden}")(features[name])
                     for name in self.heads)


Params = dict
InitFn = Callable[[jax.Array], Params]


def make_network(cfg: NetworkConfig, head: str = "actor_critic") -> tuple[InitFn, Callable]:
    """Build `(init_params, apply)` for the actor-critic (PPO) or the Q-network (DQN).

    `init_params(key) -> params`: a nested dict of float32 arrays; orthogonal sqrt(2) hidden
    layers, zero biases, output layers at scale 0.01 (policy), 1.0 (value, Q). Inputs are
    `[..., 16]` integer exponents (one-hot encoded inside). Both functions are pure and
    compiled-safe. With `cfg.symmetry="canonical"` the towers see each board's canonical
    view and the per-action outputs are mapped back (`_canonical`). With
    `cfg.actions="afterstates"` each action's output is the towers' one output on that
    action's afterstate (`_afterstates`); illegal moves' afterstates are the board itself.

    - head "actor_critic": `apply(params, board, legal_action_mask [..., 4] bool) ->
      (logits [..., 4] float32, illegal = MASKED_LOGIT; value [...] float32)`.
    - head "q": `apply(params, board) -> q [..., 4] float32` for every action, legal or not
      (the DQN policy and target mask them).

    Raises:
      ValueError: unknown head.
    """
    if head not in HEADS:
        raise ValueError(f"unknown network head {head!r}; known: {', '.join(HEADS)}")
    graphdef, abstract_state = nnx.split(nnx.eval_shape(lambda: Towers(cfg, head, nnx.Rngs(0))))
    forward = functools.partial(_forward, graphdef, abstract_state)
    init_params = functools.partial(_init_params, cfg, head)
    if cfg.symmetry == "canonical":
        forward = functools.partial(_canonical, forward)
    if cfg.actions == "afterstates":
        per_move = tuple(out == NUM_ACTIONS for _, out, _ in HEADS[head])
        forward = functools.partial(_afterstates, forward, per_move)
    if head == "q":
        return init_params, functools.partial(_q_values, forward)
    return init_params, functools.partial(_actor_critic, forward)


def _init_params(cfg: NetworkConfig, head: str, key: jax.Array) -> Params:
    """Fresh `Towers` parameters as a nested dict of float32 arrays."""
    return nnx.to_pure_dict(nnx.state(Towers(cfg, head, nnx.Rngs(params=key)), nnx.Param))


def _forward(graphdef: nnx.GraphDef, abstract_state: nnx.State, params: Params,
             board: jax.Array) -> tuple[jax.Array, ...]:
    """Run the towers on `[..., 16]` exponent boards; one raw output per tower."""
    state = jax.tree.map(lambda x: x, abstract_state)  # a fresh copy to fill in
    nnx.replace_by_pure_dict(state, params)
    return nnx.merge(graphdef, state)(board)


def _canonical(forward: Callable, params: Params, board: jax.Array) -> tuple[jax.Array, ...]:
    """`forward` on each board's canonical view (`symmetry.canonicalize`), per-action
    outputs (4 wide) mapped back to the board's own action order: exactly equivariant."""
    view, t = symmetry.canonicalize(board)
    outputs = forward(params, view)
    return tuple(symmetry.from_view(t, out) if out.shape[-1] == NUM_ACTIONS else out
                 for out in outputs)


def _afterstates(forward: Callable, per_move: tuple[bool, ...], params: Params,
                 board: jax.Array) -> tuple[jax.Array, ...]:
    """`forward` on the board and its 4 afterstates (`[..., 5, 16]`, one pass): the per-move
    outputs (`per_move[k]`, 1 wide) of the afterstates become `[..., 4]`, the other outputs
    are the board's."""
    after, _ = afterstates(board)
    boards = jnp.concatenate([board[..., None, :].astype(after.dtype), after], axis=-2)
    outputs = forward(params, boards)
    return tuple(out[..., 1:, 0] if move else out[..., 0, :]
                 for move, out in zip(per_move, outputs, strict=True))


def _q_values(forward: Callable, params: Params, board: jax.Array) -> jax.Array:
    """`[..., 4] float32` Q-values for every action (unmasked)."""
    return forward(params, board)[0]


def _actor_critic(forward: Callable, params: Params, board: jax.Array, mask: jax.Array
                  ) -> tuple[jax.Array, jax.Array]:
    """Masked logits `[..., 4]` (illegal = `MASKED_LOGIT`) and value `[...]`, float32."""
    logits, value = forward(params, board)
    return jnp.where(mask, logits, MASKED_LOGIT), value[..., 0]


def masked_log_prob_entropy(logits: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Return `(log_softmax [..., 4], entropy [...])` over legal actions only (NaN-free)."""
    log_p = jax.nn.log_softmax(logits, axis=-1)
    p = jnp.exp(log_p)
    entropy = -jnp.sum(jnp.where(mask, p * log_p, 0.0), axis=-1)
    return log_p, entropy
