"""Sample whole games with the current stochastic policy, for the judges to rank (or
record the greedy policy's games move by move, `greedy=True`, as `experiments/watch.py` does).

Each trajectory carries `Phi`, the sum of its transition features, so its return under any
reward is `R_theta(tau) = theta . Phi(tau)`: ranking by R_theta and every alignment objective
are matrix-vector products over `Phi`, with no re-simulation.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from sailor_jax.agents.networks import make_network
from sailor_jax.agents.policy import actor_logits, logits_policy, policy_step
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import GAME_2048, EnvFns
from sailor_jax.types import TrajectoryBatch


@functools.lru_cache(maxsize=16)
def make_collect(net: NetworkConfig, num: int, max_len: int = 2000, env_fns: EnvFns = GAME_2048,
                 greedy: bool = False):
    """Build the compiled `collect(params, key) -> TrajectoryBatch`.

    Plays `num` games from reset with actions sampled from the policy (illegal moves masked)
    until all ended, at most `max_len` moves each (games still running are flagged `truncated`).
    `greedy=True` plays the argmax of the legal logits instead (`policy.logits_policy`, the
    action `evaluation.make_evaluate` plays: with the same key, the same games). Static: `net`,
    `num`, `max_len`, `env_fns` (the environment; its states need a `terminated` field),
    `greedy`. Vmap it over a leading seed axis of params and keys. Cached: the same arguments
    return the same compiled function.

    The returned batch has boards `[num, max_len + 1, 16] int8`, actions `[num, max_len] int8`
    (-1 after the game ended), score gains `[num, max_len] float32`, and `Phi [num, F]`.

    Raises:
      ValueError: `num` or `max_len` not positive.
    """
    if num <= 0 or max_len <= 0:
        raise ValueError(f"num and max_len must be positive, got {num}, {max_len}")
    _, apply = make_network(net)
    return jax.jit(functools.partial(_collect, env_fns, apply, num, max_len, greedy))


@functools.lru_cache(maxsize=16)
def make_act_collect(act, num: int, max_len: int = 2000, env_fns: EnvFns = GAME_2048):
    """Build the compiled `collect(key) -> TrajectoryBatch` for any policy `act`.

    The protocol of `make_collect` for a policy that is not a network (e.g. the expert,
    `expert.expert_act`): `act(key, board [num, 16], legal_action_mask [num, 4]) -> (action
    [num] int32, extra)`, as `policy.policy_step` takes it. Static: all arguments. Cached
    like `make_collect` (`expert.expert_act` returns one `act` per depth and epsilon).

    Raises:
      ValueError: `num` or `max_len` not positive.
    """
    if num <= 0 or max_len <= 0:
        raise ValueError(f"num and max_len must be positive, got {num}, {max_len}")
    return jax.jit(functools.partial(_collect_act, env_fns, act, num, max_len))


def _collect(fns: EnvFns, apply, num: int, max_len: int, greedy: bool, params, key: jax.Array
             ) -> TrajectoryBatch:
    """Play `num` games with the policy of `params`; see `make_collect`."""
    act = functools.partial(logits_policy, functools.partial(actor_logits, apply), params,
                            greedy)
    return _collect_act(fns, act, num, max_len, key)


CHUNK = 32
"""Moves played between two tests of whether every game of a collect call has ended."""


def _collect_act(fns: EnvFns, act, num: int, max_len: int, key: jax.Array) -> TrajectoryBatch:
    """Play `num` games with `act` until all ended (at most `max_len` moves); see
    `make_act_collect`. The moves are played `CHUNK` at a time; those after the last game
    ended are the padding that playing on idle gives (final board, action -1, gain 0, features
    0), so the batch is the one `max_len` moves of finished games left idle would give
    (`fns.play` must leave a finished game as it is)."""
    key_reset, key_play = jax.random.split(key)
    state = jax.vmap(fns.reset)(jax.random.split(key_reset, num))
    move = functools.partial(_move, fns, act, max_len)
    size, rows = -(-max_len // CHUNK) * CHUNK, (num,)
    # The buffers of `move`'s outputs, shaped from the board and `fns.phi` alone: tracing a
    # move (the env's step) again would be a quarter of a collect's trace. A mismatch fails
    # in `chunk`.
    board = jax.eval_shape(jax.vmap(fns.board), state)
    feats = jax.eval_shape(fns.phi, board, board, jax.ShapeDtypeStruct(rows, jnp.float32),
                           jax.ShapeDtypeStruct(rows, jnp.bool_))
    buffers = tuple(jnp.full((size, *shape), fill, dtype) for shape, fill, dtype in (
        (board.shape, 0, jnp.int8), (rows, -1, jnp.int8), (rows, 0.0, jnp.float32),
        (feats.shape, 0.0, jnp.float32), (rows, False, jnp.bool_)))

    def unfinished(carry):
        return (carry[0] < max_len) & jnp.any(~carry[1].terminated)

    def chunk(carry):
        t, state, key, buffers = carry
        (state, key), out = jax.lax.scan(move, (state, key), t + jnp.arange(CHUNK))
        buffers = jax.tree.map(lambda buf, x: jax.lax.dynamic_update_slice_in_dim(buf, x, t, 0),
                               buffers, out)
        return t + CHUNK, state, key, buffers

    played, state, _, buffers = jax.lax.while_loop(
        unfinished, chunk, (jnp.int32(0), state, key_play, buffers))
    boards, actions, gains, feats, running = (buf[:max_len] for buf in buffers)
    final = jax.vmap(fns.board)(state).astype(jnp.int8)
    boards = jnp.where(jnp.arange(max_len)[:, None, None] < played, boards, final)
    return TrajectoryBatch(
        boards=jnp.concatenate([jnp.swapaxes(boards, 0, 1), final[:, None]], axis=1),
        actions=jnp.swapaxes(actions, 0, 1), score_gains=jnp.swapaxes(gains, 0, 1),
        lengths=jnp.sum(running, axis=0).astype(jnp.int32), truncated=~state.terminated,
        score=jnp.sum(gains, axis=0), Phi=jnp.sum(feats, axis=0),
        max_tile=(2 ** jnp.max(final.astype(jnp.int32), axis=-1)).astype(jnp.int32))


def _move(fns: EnvFns, act, max_len: int, carry, t: jax.Array):
    """Move `t` of every game (none from `max_len` on): `((state, key), (board [num, 16] int8,
    action [num] int8 (-1 once ended), gain [num] float32 (0 once ended), features [num, F]
    float32 (0 once ended), running [num] bool))`."""
    state, key = carry
    running = ~state.terminated
    key, move, _ = policy_step(fns, act, state, key, auto_reset=False)
    res = move.result
    feats = fns.phi(res.board, res.next_board, res.score_gain, res.terminated)
    state = jax.tree.map(lambda new, old: jnp.where(t < max_len, new, old), move.env_state, state)
    return (state, key), (move.board.astype(jnp.int8),
                          jnp.where(running, move.action, -1).astype(jnp.int8),
                          jnp.where(running, res.score_gain, 0.0),
                          jnp.where(running[:, None], feats, 0.0), running)


def cut_windows(batch: TrajectoryBatch, key: jax.Array, window: int,
                env_fns: EnvFns = GAME_2048) -> TrajectoryBatch:
    """One window of `window` consecutive moves from each game, for judging strategy, not length.

    Compiled-safe; `batch` holds `M` games (`[M, L, 16]` boards etc., no seed axis; vmap for
    one). Game `m`'s window starts at a move drawn uniformly from `0..max(length - window, 0)`
    (so it lies inside the game when the game is long enough; a shorter game is kept whole).
    `Phi` is the sum of the transition features over the window's moves (recomputed from its
    boards with `env_fns.phi`), so `R_theta` and the judge see the same moves. `score` and
    `max_tile` are the window's; `truncated` is True when the game goes on after the window.

    Returns:
      `TrajectoryBatch` with boards `[M, window + 1, 16]`, actions / score gains
      `[M, window]`, lengths `min(window, length - start)`, padded as `make_collect` pads.

    Raises:
      ValueError: `window` not positive.
    """
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    keys = jax.random.split(key, batch.lengths.shape[0])
    return jax.vmap(functools.partial(_window, env_fns, int(window)))(batch, keys)


def _window(fns: EnvFns, window: int, game: TrajectoryBatch, key: jax.Array
            ) -> TrajectoryBatch:
    last_move = game.actions.shape[0] - 1
    slack = jnp.maximum(game.lengths - window, 0)
    start = jnp.minimum(jnp.floor(jax.random.uniform(key) * (slack + 1)), slack).astype(jnp.int32)
    offset = jnp.arange(window)
    t = start + offset
    played = offset < game.lengths - start
    moves = jnp.clip(t, 0, last_move)
    boards = game.boards[jnp.clip(start + jnp.arange(window + 1), 0, last_move + 1)]
    gains = jnp.where(played, game.score_gains[moves], 0.0)
    ended = (t == game.lengths - 1) & ~game.truncated
    feats = fns.phi(boards[:-1].astype(jnp.int32), boards[1:].astype(jnp.int32), gains, ended)
    return TrajectoryBatch(
        boards=boards, actions=jnp.where(played, game.actions[moves], -1).astype(jnp.int8),
        score_gains=gains, lengths=jnp.sum(played).astype(jnp.int32),
        truncated=game.truncated | (start + window < game.lengths), score=jnp.sum(gains),
        max_tile=(2 ** jnp.max(boards.astype(jnp.int32))).astype(jnp.int32),
        Phi=jnp.sum(jnp.where(played[:, None], feats, 0.0), axis=0))
