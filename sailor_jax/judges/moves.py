"""Move groups: every legal move from boards the play reached, for judging moves (issue 49).

Host orchestration around one compiled function. A window verdict compares stretches of play
that differ in many ways at once; a reward error that pays a bonus on nearly every move (a
smoothness or merges-available term) barely changes the order of such windows, so the window
pairs cannot say that it is too large (docs/repair.md, "Mild errors"). A move group holds one
board and every legal move from it: the transition features `phi(s, a, s')` of each move, all
four with the same spawn key (so that the moves differ only by what they do, not by the spawn's
luck). A judge orders the moves by its action values (the expert: `expert_action_values`);
`R_theta` orders them by `phi @ theta`; the pairs of one board say which per-move trade-offs the
judge prefers, the question a per-move bonus answers wrongly. Preferences over a linear reward
from the moves of one state: as in Christiano et al. (2017)'s clip comparisons cut to a
single step, or the action-preference learning of Fürnkranz et al. (2012).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.game import env
from sailor_jax.game.features import phi
from sailor_jax.judges.expert import call_in_chunks

__all__ = ["MoveGroups", "move_groups", "sample_boards"]


@dataclasses.dataclass(frozen=True)
class MoveGroups:
    """`B` boards and their four moves (host NumPy)."""

    boards: np.ndarray
    """`int32[B, 16]` tile exponents of the boards moved from."""
    phi: np.ndarray
    """`float32[B, 4, F]` features of each move (action order left, up, right, down); rows of
    illegal moves hold what pgx's illegal step gives and are never compared."""
    next_boards: np.ndarray
    """`int32[B, 4, 16]` the board after each move and its spawn (what `phi` saw)."""
    legal: np.ndarray
    """`bool[B, 4]` legal moves."""

    def __len__(self) -> int:
        return int(self.boards.shape[0])


def sample_boards(batch: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` boards a move was played on, uniformly without replacement among a group's moves.

    Args:
      batch: one group's host `TrajectoryBatch` (`boards [M, L, 16]`, `actions [M, L - 1]`,
        -1 = padding).
      n: boards wanted (> 0); fewer when the group played fewer moves.
      rng: the host generator of this seed and update.

    Returns:
      `int32[min(n, moves), 16]`.

    Raises:
      ValueError: `n` not positive.
    """
    if n <= 0:
        raise ValueError(f"boards per move sample must be positive, got {n}")
    played = np.asarray(batch.actions) >= 0
    m, t = np.nonzero(played)
    pick = np.sort(rng.choice(len(m), size=min(n, len(m)), replace=False))
    return np.asarray(batch.boards)[m[pick], t[pick]].astype(np.int32).reshape(-1, 16)


@functools.lru_cache(maxsize=1)
def _moves_fn():
    def one(board: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        state = env.state_from_board(board)

        def play(action: jax.Array) -> tuple[jax.Array, jax.Array]:
            _, result = env.play(state, action, key)  # one spawn key for all four moves
            return (phi(result.board, result.next_board, result.score_gain, result.terminated),
                    result.next_board)

        legal = env.legal_action_mask(state) & ~state.terminated
        return *jax.vmap(play)(jnp.arange(env.NUM_ACTIONS)), legal

    return jax.jit(jax.vmap(one))


def move_groups(boards: np.ndarray, seed: int, chunk: int = 256) -> MoveGroups:
    """Every move of each board with its features, spawns drawn from `seed`. Host-only.

    Compiled in chunks of `chunk` boards (`expert.call_in_chunks`), so the sizes a run uses
    compile once.

    Args:
      boards: `int[B, 16]` exponents.
      seed: spawn seed (the same for a board's four moves; one key per board).
      chunk: boards per compiled call (> 0).

    Returns:
      `MoveGroups` over these boards (a board with no legal move has none legal).
    """
    boards = np.asarray(boards, np.int32).reshape(-1, 16)
    keys = jax.random.split(jax.random.key(seed), max(len(boards), 1))[:len(boards)]
    phis, next_boards, legal = call_in_chunks(_moves_fn(), chunk, boards, keys)
    return MoveGroups(boards=boards, phi=phis, next_boards=next_boards, legal=legal)
