"""The agent-environment interface shared by PPO, DQN, rollout and evaluation.

Device code. `EnvFns` is the environment as pure single-game functions (pgx 2048 by default,
probe environments in tests); `policy_step` is one move of N games (split the key, read the
boards and legal masks, let the policy choose, step every game), the one copy of that
sequence; `episode_metrics` summarises the moves of a rollout (games that ended, their score,
length and max tile).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sailor_jax import env
from sailor_jax.features import phi


@dataclasses.dataclass(frozen=True)
class EnvFns:
    """The environment as pure single-game functions (static; the default is pgx 2048).

    `reset(key) -> state`; `step(state, action, key) -> (state, env.StepResult)` with
    auto-reset (training); `play(state, action, key)` the same without auto-reset (a finished
    game stays finished: rollout and evaluation); `board(state) -> [16] int`;
    `legal_action_mask(state) -> [4] bool`; `phi(board, next_board, score_gain, terminated)
    -> [F] float32`. Tests swap in tiny probe environments with the same signatures.
    """

    reset: Callable = env.reset
    step: Callable = env.step
    board: Callable = env.board_exponents
    legal_action_mask: Callable = env.legal_action_mask
    phi: Callable = phi
    play: Callable = env.play


GAME_2048 = EnvFns()


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


def episode_metrics(done: jax.Array, score: jax.Array, length: jax.Array,
                    max_tile: jax.Array, r_shaped: jax.Array) -> dict[str, jax.Array]:
    """Scalar summaries of a rollout's `[T, N]` move records (PPO and DQN segment metrics).

    Args:
      done: bool, the game ended on this move; score / length: the game's score and moves
        so far (read where `done`); max_tile: largest exponent on the board after the move;
        r_shaped: the shaped reward `theta . phi` of the move.

    Returns:
      `episode_score`, `episode_length`, `episode_max_tile` (tile value): float32 means over
      the games that ended (NaN when none did); `episodes` int32; `max_tile` int32 largest
      tile value seen; `reward_mean` float32.
    """
    episodes = jnp.sum(done)

    def finished_mean(x):
        total = jnp.sum(jnp.where(done, x.astype(jnp.float32), 0.0))
        return jnp.where(episodes > 0, total / jnp.maximum(episodes, 1), jnp.nan)

    return dict(episode_score=finished_mean(score), episode_length=finished_mean(length),
                episode_max_tile=finished_mean(2.0 ** max_tile.astype(jnp.float32)),
                episodes=episodes.astype(jnp.int32),
                max_tile=(2 ** jnp.max(max_tile)).astype(jnp.int32),
                reward_mean=jnp.mean(r_shaped))
