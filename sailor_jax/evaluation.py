"""Game metrics of a policy: native 2048 score, moves, max tile, tile rates, win rate.

Always the game's own score (sum of merge points), never the shaped reward.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from sailor_jax.config import NetworkConfig
from sailor_jax.networks import make_network
from sailor_jax.policy import GAME_2048, EnvFns, logits_policy, policy_step

TILE_THRESHOLDS: tuple[int, ...] = (256, 512, 1024, 2048, 4096, 8192)
WIN_TILE: int = 2048


@struct.dataclass
class EpisodeStats:
    """Per-episode results of `evaluate`, each `[E]` (device or NumPy arrays)."""

    score: jax.Array  # float32 game score
    length: jax.Array  # int32 moves played
    max_tile: jax.Array  # int32 largest tile value on the final board
    truncated: jax.Array  # bool, stopped at max_len before the game ended
    final_board: Any = None  # uint8[16] tile exponents of the last board (row-major), optional


@functools.lru_cache(maxsize=16)
def make_evaluate(net: NetworkConfig, num_episodes: int, max_len: int = 50_000,
                  greedy: bool = True):
    """Build the compiled `evaluate(params, key) -> EpisodeStats` for the PPO actor-critic.

    Plays `num_episodes` games in parallel from reset until every game ends or `max_len`
    moves, with the greedy (argmax of legal logits) or sampled policy. Static: `net`,
    `num_episodes`, `max_len`, `greedy`. Vmap it over a leading seed axis of params and keys.
    Cached: the same arguments return the same compiled function.

    Raises:
      ValueError: `num_episodes` or `max_len` not positive.
    """
    _, apply = make_network(net)
    return make_policy_evaluate(lambda params, board, mask: apply(params, board, mask)[0],
                                num_episodes, max_len, greedy)


def make_policy_evaluate(apply_fn: Callable[[Any, jax.Array, jax.Array], jax.Array],
                         num_episodes: int, max_len: int = 50_000, greedy: bool = True,
                         env_fns: EnvFns = GAME_2048):
    """Build the compiled `evaluate(params, key) -> EpisodeStats` for any scoring network.

    The protocol of `make_evaluate`, for any policy given as scores per action: PPO logits or
    DQN Q-values. The action is the argmax of the scores (`greedy`) or a sample from their
    softmax; `apply_fn` must give illegal actions a score far below every legal one (e.g.
    `networks.MASKED_LOGIT`). Static: `apply_fn`, `num_episodes`, `max_len`, `greedy`. Not
    cached: callers that build it repeatedly cache their own factory (as `make_evaluate` does).

    Args:
      apply_fn: `apply_fn(params, board [E, 16] int32, legal_action_mask [E, 4] bool) ->
        [E, 4] float32` scores, illegal actions masked.
      num_episodes: games `E` played in parallel.
      max_len: move cap per game (games still running then count as truncated).
      greedy: argmax (True) or sample from the softmax of the scores (False).
      env_fns: the environment (its states need a `terminated` field).

    Raises:
      ValueError: `num_episodes` or `max_len` not positive.
    """
    if num_episodes <= 0 or max_len <= 0:
        raise ValueError(f"num_episodes and max_len must be positive, got {num_episodes}, "
                         f"{max_len}")

    return jax.jit(functools.partial(_evaluate, env_fns, apply_fn, num_episodes, max_len,
                                     greedy))


def _evaluate(fns: EnvFns, apply_fn: Callable, num_episodes: int, max_len: int, greedy: bool,
              params, key: jax.Array) -> EpisodeStats:
    """Play `num_episodes` games to the end or `max_len` moves; see `make_policy_evaluate`."""
    key_reset, key_play = jax.random.split(key)
    state = jax.vmap(fns.reset)(jax.random.split(key_reset, num_episodes))
    zeros = jnp.zeros((num_episodes,), jnp.int32)
    carry = (state, jnp.zeros((num_episodes,), jnp.float32), zeros, jnp.int32(0), key_play)
    act = functools.partial(logits_policy, apply_fn, params, greedy)

    def body(c):
        state, score, length, t, key = c
        running = ~state.terminated
        key, move, _ = policy_step(fns, act, state, key, auto_reset=False)
        return (move.env_state, score + move.result.score_gain, length + running, t + 1, key)

    state, score, length, _, _ = jax.lax.while_loop(
        lambda c: (c[3] < max_len) & ~jnp.all(c[0].terminated), body, carry)
    final_board = jax.vmap(fns.board)(state)
    return EpisodeStats(score=score, length=length,
                        max_tile=(2 ** jnp.max(final_board, axis=-1)).astype(jnp.int32),
                        truncated=~state.terminated, final_board=final_board.astype(jnp.uint8))
