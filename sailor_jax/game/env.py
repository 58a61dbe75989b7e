"""pgx 2048 adapter: reset, step with auto-reset, board decoding, and `EnvFns`, the bundle.

The only module that reads pgx's private board field (`State._board`); tests check it
against the public one-hot observation. All functions handle one game; `jax.vmap` them
for a batch of `N` games. `reset`, `play` and `step` are jitted: programs that play moves
hold them as calls XLA inlines, so a process traces pgx's step once, not once per program.

Board layout (tile exponents, 0 = empty, k = tile 2**k), row 0 on top::

    [[ 0,  1,  2,  3],
     [ 4,  5,  6,  7],
     [ 8,  9, 10, 11],
     [12, 13, 14, 15]]

Actions follow pgx: 0 left, 1 up, 2 right, 3 down. pgx ends the game with reward -1 on an
illegal move, so callers must sample only actions allowed by `legal_action_mask`.

`EnvFns` bundles these single-game functions (plus the transition features `phi`) as the
static environment argument of PPO, DQN, rollout and evaluation; `GAME_2048` is this game,
and tests swap in tiny probe environments with the same signatures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import pgx
import pgx.play2048
from flax import struct

from sailor_jax.game.features import phi

NUM_ACTIONS: int = 4
NUM_TILE_CLASSES: int = 18
"""Exponents 0..17: 2**17 = 131072 is the largest tile a 4x4 board can hold."""

State = pgx.play2048.State
_ENV = pgx.make("2048")


@struct.dataclass
class StepResult:
    """What one move produced (shapes for one game; a batch adds a leading `[N]`)."""

    board: jax.Array  # [16] int32 exponents before the move
    next_board: jax.Array  # [16] int32 after the move and the random spawn (final board if done)
    score_gain: jax.Array  # [] float32 merge points of the move (pgx reward)
    terminated: jax.Array  # [] bool, the game ended with this move


def board_exponents(state: State) -> jax.Array:
    """Return the board as `[..., 16] int32` tile exponents (row-major, row 0 on top)."""
    return state._board


def legal_action_mask(state: State) -> jax.Array:
    """Return `[..., 4] bool` legal moves (all True at a terminal state, as pgx does)."""
    return state.legal_action_mask


@jax.jit
def reset(key: jax.Array) -> State:
    """Start a new game: an empty board with two random tiles (2 w.p. 0.9, else 4).

    Args:
      key: PRNG key.

    Returns:
      pgx 2048 `State` for one game.
    """
    return _ENV.init(key)


@jax.jit
def play(state: State, action: jax.Array, key: jax.Array) -> tuple[State, StepResult]:
    """Play one move without auto-reset (a finished game stays finished, with zero gain).

    Compiled-safe; vmap over `(state, action, key)` for a batch.

    Args:
      state: pgx `State`.
      action: `[] int32` in {0 left, 1 up, 2 right, 3 down}; must be legal.
      key: PRNG key for the random spawn.

    Returns:
      `(next_state, result)` with `result.terminated` True only on the move that ended the game.
    """
    board = board_exponents(state)
    stepped = _ENV.step(state, action, key)
    result = StepResult(
        board=board,
        next_board=board_exponents(stepped),
        score_gain=stepped.rewards[0],
        terminated=stepped.terminated & ~state.terminated,
    )
    return stepped, result


@jax.jit
def step(state: State, action: jax.Array, key: jax.Array) -> tuple[State, StepResult]:
    """Play one move, then auto-reset if the game ended.

    Compiled-safe; vmap over `(state, action, key)` for a batch.

    Args:
      state: pgx `State` of a running game.
      action: `[] int32` in {0 left, 1 up, 2 right, 3 down}; must be legal.
      key: PRNG key, split into the spawn key and the reset key.

    Returns:
      `(next_state, result)`: `next_state` is the state after the move and spawn, or a fresh
      game when `result.terminated`; `result.next_board` is always the board after the move
      (the final board of a finished game), which is what features must see.
    """
    key_step, key_reset = jax.random.split(key)
    stepped, result = play(state, action, key_step)
    fresh = reset(key_reset)
    next_state = jax.tree.map(lambda a, b: jnp.where(result.terminated, a, b), fresh, stepped)
    return next_state, result


def obs_one_hot(board: jax.Array) -> jax.Array:
    """Encode boards for the network: `[..., 16]` exponents -> `[..., 16 * 18] float32` one-hot."""
    one_hot = jax.nn.one_hot(board, NUM_TILE_CLASSES, dtype=jnp.float32)
    return one_hot.reshape(board.shape[:-1] + (16 * NUM_TILE_CLASSES,))


@dataclasses.dataclass(frozen=True)
class EnvFns:
    """The environment as pure single-game functions (static and hashable; default: 2048).

    `reset(key) -> state`; `step(state, action, key) -> (state, StepResult)` with auto-reset
    (training); `play(state, action, key)` the same without auto-reset (a finished game stays
    finished: rollout and evaluation, which read `state.terminated`); `board(state) -> [16]
    int`; `legal_action_mask(state) -> [4] bool`; `phi(board, next_board, score_gain,
    terminated) -> [F] float32` (broadcast over leading axes).
    """

    reset: Callable = reset
    step: Callable = step
    board: Callable = board_exponents
    legal_action_mask: Callable = legal_action_mask
    phi: Callable = phi
    play: Callable = play


GAME_2048 = EnvFns()
"""pgx 2048 with the SAILOR transition features."""
