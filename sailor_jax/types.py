"""Shared records that flow between the compiled device code and the host loop.

Device records (`Transition`, `RunnerState`, `SegmentMetrics`, `TrajectoryBatch`) are
`flax.struct` dataclasses, so they pass through `jit`, `scan` and `vmap` as pytrees.
Host records (`Ranking`, `Preferences`) are plain frozen dataclasses of NumPy arrays.

Axis names used in shapes: `T` rollout steps, `N` parallel envs, `U` PPO updates in a
segment, `M` sampled trajectories, `L` = `max_len + 1` board snapshots per trajectory,
`F` features (8), `P` preference pairs, `S` seeds (a leading vmapped axis, where present).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np
from flax import struct


@struct.dataclass
class Transition:
    """One PPO rollout step for `N` envs; `lax.scan` stacks it to `[T, N, ...]`."""

    obs: jax.Array  # [N, 16] int8 tile exponents seen by the agent
    legal_action_mask: jax.Array  # [N, 4] bool
    action: jax.Array  # [N] int32
    log_prob: jax.Array  # [N] float32
    value: jax.Array  # [N] float32
    reward: jax.Array  # [N] float32, r_shaped = theta . phi (normalised if configured)
    done: jax.Array  # [N] bool, the game ended on this step (next obs is a fresh game)


@struct.dataclass
class RunningStats:
    """Running mean/variance (parallel Welford), for reward normalisation."""

    mean: jax.Array  # [] float32
    var: jax.Array  # [] float32
    count: jax.Array  # [] float32


@struct.dataclass
class RunnerState:
    """Everything a training segment needs to continue; checkpointed as a whole."""

    params: Any  # network parameters (nnx.State of Param)
    opt_state: Any  # optax state
    env_state: Any  # pgx 2048 State, batched [N]
    key: jax.Array  # uint32[2] PRNG key (raw, for portable checkpoints)
    update_step: jax.Array  # [] int32, PPO updates done so far
    env_steps: jax.Array  # [] int32 per-seed env steps done so far (wraps past 2**31)
    episode_score: jax.Array  # [N] float32 game score of the running episode
    episode_length: jax.Array  # [N] int32 moves of the running episode
    discounted_return: jax.Array  # [N] float32, for reward normalisation
    return_stats: RunningStats  # statistics of `discounted_return`


@struct.dataclass
class SegmentMetrics:
    """Per-update summaries of one segment, each `[U]` (or `[S, U]` under seed vmap)."""

    episode_score: jax.Array  # float32 mean game score of episodes that ended in the update
    episode_length: jax.Array  # float32 mean moves of episodes that ended
    episode_max_tile: jax.Array  # float32 mean max tile (value) of episodes that ended
    episodes: jax.Array  # int32 number of episodes that ended (0 -> the means above are NaN)
    max_tile: jax.Array  # int32 largest tile (value) on any board during the rollout
    reward_mean: jax.Array  # float32 mean shaped reward (before normalisation)
    policy_loss: jax.Array
    value_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    clip_fraction: jax.Array
    explained_variance: jax.Array
    lr: jax.Array


@struct.dataclass
class TrajectoryBatch:
    """`M` complete (or truncated) games played from reset, for ranking.

    On the host the same class holds NumPy arrays (`jax.device_get` of the device batch).
    Steps at `t >= length` are padding: boards repeat the final board, actions are -1,
    score gains are 0.
    """

    boards: Any  # [M, L, 16] int8 exponents; boards[:, 0] is the initial board
    actions: Any  # [M, L - 1] int8 in {0 left, 1 up, 2 right, 3 down}, -1 = padding
    score_gains: Any  # [M, L - 1] float32 merge points of each move
    lengths: Any  # [M] int32 moves played
    truncated: Any  # [M] bool, stopped at max_len before the game ended
    score: Any  # [M] float32 final game score (sum of merge points)
    max_tile: Any  # [M] int32 largest tile value reached
    Phi: Any  # [M, F] float32 sum of phi over the trajectory; R_theta = Phi @ theta


@dataclasses.dataclass(frozen=True)
class Ranking:
    """A judge's ranking of `M` trajectories (host-only).

    Attributes:
      order: `int32[M]` trajectory indices, best first (a permutation of `0..M-1`).
      scores: optional `float32[M]` per-trajectory scores (higher is better), aligned with the
        trajectory index, not with `order`.
      pairwise_prob: optional `float32[M, M]`; entry `[i, j]` is the judge's probability that
        trajectory `i` is better than `j` (NaN where the pair was not judged).
    """

    order: np.ndarray
    scores: np.ndarray | None = None
    pairwise_prob: np.ndarray | None = None

    def __post_init__(self) -> None:
        order = np.asarray(self.order)
        m = order.shape[0]
        if order.ndim != 1 or sorted(order.tolist()) != list(range(m)):
            raise ValueError(f"Ranking.order must be a permutation of 0..{m - 1}, got {order}")
        if self.scores is not None and np.shape(self.scores) != (m,):
            raise ValueError(f"Ranking.scores must have shape ({m},), got {np.shape(self.scores)}")
        if self.pairwise_prob is not None and np.shape(self.pairwise_prob) != (m, m):
            raise ValueError(
                f"Ranking.pairwise_prob must have shape ({m}, {m}), "
                f"got {np.shape(self.pairwise_prob)}"
            )

    @property
    def rank(self) -> np.ndarray:
        """`int32[M]` position of each trajectory in `order` (0 = best)."""
        rank = np.empty(len(self.order), dtype=np.int32)
        rank[np.asarray(self.order)] = np.arange(len(self.order), dtype=np.int32)
        return rank


@dataclasses.dataclass(frozen=True)
class Preferences:
    """Preference pairs (host-only): trajectory `i[p]` is preferred over `j[p]` with weight `w[p]`.

    Attributes:
      i: `int32[P]` preferred trajectory indices.
      j: `int32[P]` dispreferred trajectory indices.
      w: `float32[P]` non-negative pair weights.
      discordant: `bool[P]`, True for pairs in D_neg (R_theta disagreed with the judge).
    """

    i: np.ndarray
    j: np.ndarray
    w: np.ndarray
    discordant: np.ndarray

    def __len__(self) -> int:
        return int(np.shape(self.i)[0])

    @property
    def num_discordant(self) -> int:
        return int(np.sum(self.discordant))

    @property
    def num_concordant(self) -> int:
        return len(self) - self.num_discordant
