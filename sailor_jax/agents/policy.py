"""The agent-environment interface shared by PPO, DQN, rollout and evaluation.

Device code. `policy_step` is one move of N games of an `env.EnvFns` environment (split the
key, read the boards and legal masks, let the policy choose, step every game), the one copy
of that sequence; `logits_policy` turns per-action scores (PPO logits, DQN Q-values) into an
argmax or sampled policy; `episode_metrics` summarises the moves of a rollout (games that
ended, their score, length and max tile). `EnvFns` and `GAME_2048` are re-exported from `env`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sailor_jax.agents.collectives import global_max, global_mean, global_sum
from sailor_jax.game.env import GAME_2048, EnvFns

__all__ = ["GAME_2048", "EnvFns", "Move", "actor_logits", "episode_metrics", "logits_policy",
           "policy_step"]


class Move(NamedTuple):
    """One move of N games (`policy_step`): what the policy saw, chose, and what followed."""

    board: jax.Array  # [N, 16] int exponents before the move
    legal_action_mask: jax.Array  # [N, 4] bool
    action: jax.Array  # [N] int32
    env_state: Any  # the games after the move, batched [N]
    result: Any  # env.StepResult, fields [N, ...]


def policy_step(fns: EnvFns, act: Callable, env_state: Any, key: jax.Array,
                auto_reset: bool = True) -> tuple[jax.Array, Move, Any]:
    """Play one move in each of N games with the policy `act`. Compiled-safe.

    Args:
      fns: the environment (static).
      act: `act(key_action, board [N, 16], legal_action_mask [N, 4]) -> (action [N], extra)`;
        `extra` is returned as is (e.g. logits and values).
      env_state: batched `[N]` game states.
      key: PRNG key; split into `(next key, key_action, key_step)`, and `key_step` into one
        key per game.
      auto_reset: `fns.step` (a finished game restarts) or `fns.play` (it stays finished).

    Returns:
      `(next key, Move, extra)`.
    """
    key, key_action, key_step = jax.random.split(key, 3)
    board = jax.vmap(fns.board)(env_state)
    mask = jax.vmap(fns.legal_action_mask)(env_state)
    action, extra = act(key_action, board, mask)
    step = fns.step if auto_reset else fns.play
    env_state, result = jax.vmap(step)(env_state, action,
                                       jax.random.split(key_step, board.shape[0]))
    return key, Move(board, mask, action, env_state, result), extra


def logits_policy(logits_fn: Callable, params: Any, greedy: bool, key: jax.Array,
                  board: jax.Array, mask: jax.Array) -> tuple[jax.Array, None]:
    """An `act` for `policy_step` from scores per action (PPO logits, DQN Q-values).

    `logits_fn(params, board [N, 16], mask [N, 4]) -> [N, 4]` with illegal actions masked;
    the action is their argmax (`greedy`) or a sample from their softmax.
    """
    logits = logits_fn(params, board, mask)
    action = jnp.argmax(logits, -1) if greedy else jax.random.categorical(key, logits)
    return action, None


def actor_logits(apply: Callable, params: Any, board: jax.Array, mask: jax.Array
                 ) -> jax.Array:
    """The masked logits `[N, 4]` of an actor-critic `apply` (a `logits_fn` for PPO networks)."""
    return apply(params, board, mask)[0]


def episode_metrics(done: jax.Array, score: jax.Array, length: jax.Array,
                    max_tile: jax.Array, r_shaped: jax.Array, axis_name: str | None = None
                    ) -> dict[str, jax.Array]:
    """Scalar summaries of a rollout's `[T, N]` move records (PPO and DQN segment metrics).

    Args:
      done: bool, the game ended on this move; score / length: the game's score and moves
        so far (read where `done`); max_tile: largest exponent on the board after the move;
        r_shaped: the shaped reward `theta . phi` of the move.
      axis_name: mesh axis the env axis `N` is split over (`env_sharding`), or None. Then the
        summaries are those of all devices' games: episode counts and sums are psum'd before
        dividing, the max tile is pmax'd.

    Returns:
      `episode_score`, `episode_length`, `episode_max_tile` (tile value): float32 means over
      the games that ended (NaN when none did); `episodes` int32; `max_tile` int32 largest
      tile value seen; `reward_mean` float32.
    """
    episodes = global_sum(done, axis_name)

    def finished_mean(x):
        total = global_sum(jnp.where(done, x.astype(jnp.float32), 0.0), axis_name)
        return jnp.where(episodes > 0, total / jnp.maximum(episodes, 1), jnp.nan)

    return dict(episode_score=finished_mean(score), episode_length=finished_mean(length),
                episode_max_tile=finished_mean(2.0 ** max_tile.astype(jnp.float32)),
                episodes=episodes.astype(jnp.int32),
                max_tile=(2 ** global_max(max_tile, axis_name)).astype(jnp.int32),
                reward_mean=global_mean(r_shaped, axis_name))
