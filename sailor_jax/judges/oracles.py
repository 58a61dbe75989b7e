"""Oracle judges: the game outcome, a hidden linear reward (optionally noisy), and a random one.

Host-only. These need no LLM: `OutcomeRanker` is the "ground truth" judge of 2048 (final
score), `LinearOracleRanker` ranks by a known reward `theta_star . Phi`, which lets tests and
ablations check whether an alignment method recovers `theta_star`.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from sailor_jax.judges.base import Ranker
from sailor_jax.types import Ranking, TrajectoryBatch


def order_by_scores(scores: np.ndarray) -> np.ndarray:
    """Return `int32[M]` indices sorted by score, highest first; ties keep the lower index first.

    Host-only. NaN scores sort last.
    """
    scores = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(scores), np.inf, -scores)  # -scores ascending: NaN at the end
    return np.argsort(key, kind="stable").astype(np.int32)


class OutcomeRanker(Ranker):
    """Rank trajectories by final game score, best first.

    Host-only. Ties are broken by the larger max tile, then by the lower trajectory index.
    `Ranking.scores` holds the game scores.
    """

    name = "outcome"

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        """Rank each group by `batch.score`; never fails. Host-only."""
        out: list[Ranking | None] = []
        for batch in groups:
            score = np.asarray(batch.score, dtype=np.float64)
            max_tile = np.asarray(batch.max_tile, dtype=np.float64)
            index = np.arange(score.shape[0])
            order = np.lexsort((index, -max_tile, -score)).astype(np.int32)
            out.append(Ranking(order=order, scores=score.astype(np.float32)))
        return out


class RandomRanker(Ranker):
    """Rank trajectories in a uniformly random order: a judge with no information.

    Host-only. The control of a reward-learning experiment: the same update fitted to
    preferences that carry nothing about the games shows what the update does on its own
    (for BO: re-draw theta from the box). The order is a function of the seed and the group's
    contents (lengths, scores and `Phi`, hashed with CRC-32), not of call history, so a
    resumed run gets the rankings of an uninterrupted one. `Ranking.scores` is None.

    Args:
      seed: seed mixed into every group's generator.
    """

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        """A uniformly random permutation per group; never fails. Host-only."""
        out: list[Ranking | None] = []
        for batch in groups:
            content = b"".join(np.ascontiguousarray(np.asarray(a)).tobytes() for a in
                               (batch.lengths, batch.score, batch.Phi))
            rng = np.random.default_rng([self.seed, zlib.crc32(content)])
            m = np.asarray(batch.lengths).shape[0]
            out.append(Ranking(order=rng.permutation(m).astype(np.int32)))
        return out


class LinearOracleRanker(Ranker):
    """Rank trajectories by a hidden linear return `theta_star . Phi`, optionally noisy.

    Host-only. With `temperature == 0` the order is exact (ties: lower index first). With
    `temperature > 0` the order is a Plackett-Luce (Boltzmann) sample with utilities
    `Phi @ theta_star / temperature`, drawn as a Gumbel-perturbed sort from a NumPy generator
    seeded once at construction: the same seed and the same sequence of calls give the same
    rankings. `Ranking.scores` holds the noiseless returns `Phi @ theta_star`.

    Args:
      theta_star: `[F]` float reward weights of the oracle.
      temperature: noise scale (>= 0), in units of the return.
      seed: seed of the noise generator.

    Raises:
      ValueError: `theta_star` is not a finite 1-D vector, or `temperature` is negative or
        not finite.
    """

    name = "linear-oracle"

    def __init__(
        self, theta_star: Sequence[float] | np.ndarray, temperature: float = 0.0, seed: int = 0
    ) -> None:
        theta = np.asarray(theta_star, dtype=np.float64)
        if theta.ndim != 1 or theta.size == 0 or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta_star must be a finite 1-D vector, got shape {theta.shape}")
        if not (math.isfinite(temperature) and temperature >= 0.0):
            raise ValueError(f"temperature must be finite and >= 0, got {temperature}")
        self.theta_star = theta
        self.temperature = float(temperature)
        self._rng = np.random.default_rng(seed)

    def returns(self, batch: TrajectoryBatch) -> np.ndarray:
        """Return `float64[M]` oracle returns `Phi @ theta_star`. Host-only.

        Raises:
          ValueError: `batch.Phi` does not have `F = len(theta_star)` columns.
        """
        phi_sum = np.asarray(batch.Phi, dtype=np.float64)
        if phi_sum.ndim != 2 or phi_sum.shape[1] != self.theta_star.shape[0]:
            raise ValueError(
                f"batch.Phi has shape {phi_sum.shape}, expected [M, "
                f"{self.theta_star.shape[0]}] to match theta_star"
            )
        return phi_sum @ self.theta_star

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        """Rank each group by (noisy) oracle return; never fails. Host-only."""
        out: list[Ranking | None] = []
        for batch in groups:
            utility = self.returns(batch)
            if self.temperature > 0.0:
                noisy = utility / self.temperature + self._rng.gumbel(size=utility.shape)
                order = order_by_scores(noisy)
            else:
                order = order_by_scores(utility)
            out.append(Ranking(order=order, scores=utility.astype(np.float32)))
        return out
