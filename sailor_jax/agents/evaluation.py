"""Game metrics of a policy: native 2048 score, moves, max tile, tile rates, win rate.

Always the game's own score (sum of merge points), never the shaped reward.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from sailor_jax.agents.networks import make_network
from sailor_jax.agents.policy import actor_logits, logits_policy, policy_step
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import GAME_2048, EnvFns

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
                  greedy: bool = True, env_fns: EnvFns = GAME_2048):
    """Build the compiled `evaluate(params, key) -> EpisodeStats` for the PPO actor-critic.

    Plays `num_episodes` games in parallel from reset until every game ends or `max_len`
    moves, with the greedy (argmax of legal logits) or sampled policy. Static: `net`,
    `num_episodes`, `max_len`, `greedy`, `env_fns` (the environment, default 2048; its states
    need a `terminated` field). Vmap it over a leading seed axis of params and keys.
    Cached: the same arguments return the same compiled function.

    Raises:
      ValueError: `num_episodes` or `max_len` not positive.
    """
    _, apply = make_network(net)
    return make_policy_evaluate(functools.partial(actor_logits, apply), num_episodes, max_len,
                                greedy, env_fns)


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
    act = functools.partial(logits_policy, apply_fn, params, greedy)
    return play_out(fns, act, num_episodes, max_len, key)


def play_out(fns: EnvFns, act: Callable, num_episodes: int, max_len: int, key: jax.Array
             ) -> EpisodeStats:
    """`EpisodeStats` (`[E]`) of `E = num_episodes` games played with `act` to the end or
    `max_len` moves; jit it with all but `key` bound. `act(key, board [E, 16],
    legal_action_mask [E, 4]) -> (action [E] int32, extra)`, as `policy.policy_step` takes it:
    a network's (`make_policy_evaluate`) or another policy's (the expert, `expert_act`)."""
    key_reset, key_play = jax.random.split(key)
    state = jax.vmap(fns.reset)(jax.random.split(key_reset, num_episodes))
    zeros = jnp.zeros((num_episodes,), jnp.int32)
    carry = (state, jnp.zeros((num_episodes,), jnp.float32), zeros, jnp.int32(0), key_play)

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


def summarize(stats: EpisodeStats) -> dict:
    """Reduce per-episode results to the report dict. Host-only.

    Args:
      stats: `EpisodeStats` with `[E]` or `[S, E]` arrays (seeds are pooled).

    Returns:
      dict with `episodes`, `score_mean`, `score_std`, `score_max`, `length_mean`,
      `max_tile_mean`, `max_tile_rates` ({tile: fraction of games reaching it} for 256..8192),
      `win_rate` (fraction reaching 2048), `truncated` (count) and `max_tile_counts`
      ({tile: games whose largest tile is exactly that value}); plain Python numbers. With
      `final_board` also `max_tile_position`: `4 x 4` nested list, the fraction of games whose
      largest tile sits in each cell (row-major board; a game with the largest tile in two
      cells counts in both, so the cells can sum to more than 1).
    """
    stats = jax.device_get(stats)
    board = stats.final_board
    s = jax.tree.map(lambda x: np.asarray(x).reshape(-1),
                     stats.replace(final_board=None))
    tiles, counts = np.unique(s.max_tile, return_counts=True)
    out = {
        "episodes": int(s.score.size),
        "score_mean": float(np.mean(s.score)),
        "score_std": float(np.std(s.score)),
        "score_max": float(np.max(s.score)),
        "length_mean": float(np.mean(s.length)),
        "max_tile_mean": float(np.mean(s.max_tile)),
        "max_tile_rates": {str(t): float(np.mean(s.max_tile >= t)) for t in TILE_THRESHOLDS},
        "win_rate": float(np.mean(s.max_tile >= WIN_TILE)),
        "truncated": int(np.sum(s.truncated)),
        "max_tile_counts": {str(int(t)): int(c) for t, c in zip(tiles, counts, strict=True)},
    }
    if board is not None:
        board = np.asarray(board).reshape(-1, 16)
        at_max = board == board.max(axis=1, keepdims=True)
        out["max_tile_position"] = at_max.mean(axis=0).reshape(4, 4).tolist()
    return out


def random_policy_stats(key: jax.Array, num_episodes: int, max_len: int = 50_000
                        ) -> EpisodeStats:
    """Play uniformly random legal moves (the reference baseline). Compiled on each call."""
    return _random_eval(num_episodes, max_len)(key)


def _random_eval(num_episodes: int, max_len: int):
    """A compiled random-legal-move evaluator: zero network weights give uniform logits."""
    zero_net = NetworkConfig(hidden_sizes=(1,))
    init, _ = make_network(zero_net)
    params = jax.tree.map(jnp.zeros_like, init(jax.random.PRNGKey(0)))
    evaluate = make_evaluate(zero_net, num_episodes, max_len, greedy=False)
    return lambda key: evaluate(params, key)
