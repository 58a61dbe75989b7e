"""Sample whole games with the current stochastic policy, for the judges to rank.

Each trajectory carries `Phi`, the sum of its transition features, so its return under any
reward is `R_theta(tau) = theta . Phi(tau)`: ranking by R_theta and every alignment objective
are matrix-vector products over `Phi`, with no re-simulation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sailor_jax import env
from sailor_jax.config import NetworkConfig
from sailor_jax.features import phi
from sailor_jax.networks import make_network
from sailor_jax.types import TrajectoryBatch


def make_collect(net: NetworkConfig, num: int, max_len: int = 2000):
    """Build the compiled `collect(params, key) -> TrajectoryBatch`.

    Plays `num` games from reset with actions sampled from the policy (illegal moves masked)
    for at most `max_len` moves each; games still running then are flagged `truncated`.
    Static: `net`, `num`, `max_len`. Vmap it over a leading seed axis of params and keys.

    The returned batch has boards `[num, max_len + 1, 16] int8`, actions `[num, max_len] int8`
    (-1 after the game ended), score gains `[num, max_len] float32`, and `Phi [num, F]`.

    Raises:
      ValueError: `num` or `max_len` not positive.
    """
    if num <= 0 or max_len <= 0:
        raise ValueError(f"num and max_len must be positive, got {num}, {max_len}")
    _, apply = make_network(net)

    def collect(params, key: jax.Array) -> TrajectoryBatch:
        def step(carry, _):
            state, key = carry
            key, key_action, key_step = jax.random.split(key, 3)
            board = env.board_exponents(state)
            logits, _ = apply(params, board, env.legal_action_mask(state))
            action = jax.random.categorical(key_action, logits)
            running = ~state.terminated
            state, res = jax.vmap(env.play)(state, action, jax.random.split(key_step, num))
            feats = phi(res.board, res.next_board, res.score_gain, res.terminated)
            out = (board.astype(jnp.int8), jnp.where(running, action, -1).astype(jnp.int8),
                   jnp.where(running, res.score_gain, 0.0),
                   jnp.where(running[:, None], feats, 0.0), running)
            return (state, key), out

        key_reset, key_play = jax.random.split(key)
        state = jax.vmap(env.reset)(jax.random.split(key_reset, num))
        (state, _), (boards, actions, gains, feats, running) = jax.lax.scan(
            step, (state, key_play), length=max_len)
        final = env.board_exponents(state).astype(jnp.int8)
        boards = jnp.concatenate([jnp.swapaxes(boards, 0, 1), final[:, None]], axis=1)
        return TrajectoryBatch(
            boards=boards,
            actions=jnp.swapaxes(actions, 0, 1),
            score_gains=jnp.swapaxes(gains, 0, 1),
            lengths=jnp.sum(running, axis=0).astype(jnp.int32),
            truncated=~state.terminated,
            score=jnp.sum(gains, axis=0),
            max_tile=(2 ** jnp.max(final.astype(jnp.int32), axis=-1)).astype(jnp.int32),
            Phi=jnp.sum(feats, axis=0),
        )

    return jax.jit(collect)
