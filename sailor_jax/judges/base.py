"""The `Ranker` protocol: who judges a group of trajectories.

Host-only. A *group* is one `TrajectoryBatch` of `M` trajectories (on the host, NumPy arrays)
that the judge orders best first. A judge returns one `Ranking` per group, or `None` for a group
it could not judge (for example an unparsable LLM answer): a judge never invents an order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from sailor_jax.types import Ranking, TrajectoryBatch


@runtime_checkable
class Ranker(Protocol):
    """A judge that orders trajectories, best first.

    Implementations should subclass `Ranker` explicitly to inherit `rank`. Judges that can
    do the work of all groups in one batched call (the LLM) do so in `rank_groups`.
    """

    name: str
    """Short name for logs, e.g. "outcome", "llm-pairwise"."""

    aggregate: str = "sum"
    """What the verdict on a trajectory is about: "sum" (a total over its moves: a score, a
    return, a whole-game impression) or "mean" (a per-move average, blind to length). The
    preference builder ranks `R_theta`'s side the same way (`PreferenceConfig.compare`)."""

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        """Rank each group of trajectories.

        Host-only.

        Args:
          groups: `G` host `TrajectoryBatch`es; group `g` has `M_g` trajectories.

        Returns:
          `G` entries: a `Ranking` over `0..M_g-1`, or None where the judge failed for that
          group.
        """
        ...

    def rank(self, batch: TrajectoryBatch) -> Ranking | None:
        """Rank one group; see `rank_groups`. Host-only."""
        return self.rank_groups([batch])[0]

    def reseed(self, seed: int) -> None:
        """Reset the judge's random state (the loop reseeds per iteration so that a resumed
        run sees the same randomness as an uninterrupted one). Judges with an `_rng` attribute
        get a fresh `numpy.random.default_rng(seed)`; deterministic judges ignore it."""
        if hasattr(self, "_rng"):
            self._rng = np.random.default_rng(seed)


def group_size(batch: TrajectoryBatch) -> int:
    """Return `M`, the number of trajectories in a host batch. Host-only."""
    return int(np.shape(batch.lengths)[0])
