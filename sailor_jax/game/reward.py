"""The parametric reward `R_theta(s, a, s') = theta . phi(s, a, s')` and its specification."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.game.features import FEATURE_NAMES

BASELINE_THETA: dict[str, float] = {"score_gain": 1.0, "max_tile_in_corner": 0.1, "game_over": -1.0}
"""The seed plan's baseline reward; features not named here have weight 0."""


def theta_from(weights: dict[str, float], names: Sequence[str] = FEATURE_NAMES
               ) -> tuple[float, ...]:
    """`float[F]` weights in the order of `names`, 0.0 for names not in `weights`.

    Raises:
      ValueError: a key of `weights` is not in `names` (the message lists the known ones).
    """
    unknown = sorted(set(weights) - set(names))
    if unknown:
        raise ValueError(f"unknown feature name(s) {unknown}; known: {list(names)}")
    return tuple(float(weights.get(n, 0.0)) for n in names)


THETA0: tuple[float, ...] = theta_from(BASELINE_THETA, FEATURE_NAMES)
"""theta0: the baseline reward's weights, `float[F]` in feature order. Every run's start
unless it names another (`SailorConfig.start`)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RewardSpec:
    """Names, initial weights, bounds and tunable mask of the reward parameters theta.

    Host-only (hashable, can be a static jit argument). All tuples have length `F`.
    """

    names: tuple[str, ...] = FEATURE_NAMES
    """Feature names, in the order of phi's last axis."""
    start: tuple[float, ...] = THETA0
    """The start reward's weights, theta before any update (theta0 by default)."""
    lower: tuple[float, ...] = (-1.0,) * len(FEATURE_NAMES)
    """Lower bound of each weight."""
    upper: tuple[float, ...] = (1.0,) * len(FEATURE_NAMES)
    """Upper bound of each weight."""
    tunable: tuple[bool, ...] = (True,) * len(FEATURE_NAMES)
    """Which weights the alignment step may change (constrained reward editing)."""

    def __post_init__(self) -> None:
        f = len(self.names)
        for field in ("start", "lower", "upper", "tunable"):
            n = len(getattr(self, field))
            if n != f:
                raise ValueError(f"RewardSpec.{field} has length {n}, expected {f} (one per name)")
        for name, lo, hi in zip(self.names, self.lower, self.upper, strict=True):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise ValueError(f"bounds of feature '{name}' must be finite with lower <= upper, "
                                 f"got [{lo}, {hi}]")
        self.validate(self.start, "start")

    @property
    def num_features(self) -> int:
        return len(self.names)

    @property
    def tunable_index(self) -> np.ndarray:
        """`int64[K]` indices of the tunable entries."""
        return np.flatnonzero(np.asarray(self.tunable, dtype=bool))

    def with_weights(self, weights: dict[str, float], **kwargs) -> RewardSpec:
        """Return a copy whose start is `weights` (by feature name, others 0)."""
        return dataclasses.replace(self, start=theta_from(weights, self.names), **kwargs)

    def with_tunable(self, names: Sequence[str]) -> RewardSpec:
        """Return a copy where only the named features are tunable."""
        unknown = sorted(set(names) - set(self.names))
        if unknown:
            raise ValueError(f"unknown feature name(s) {unknown}; known: {list(self.names)}")
        return dataclasses.replace(self, tunable=tuple(n in names for n in self.names))

    def for_run(self, start: Sequence[float] | None, tunable: Sequence[str] | None
                ) -> RewardSpec:
        """Return a copy with a run's start weights `start` (`float[F]`, feature order) and
        its tunable feature names (None: this spec's, for either).

        Raises:
          ValueError: an unknown feature name in `tunable`.
        """
        spec = self
        if start is not None:
            spec = dataclasses.replace(spec, start=tuple(float(v) for v in start))
        return spec if tunable is None else spec.with_tunable(tunable)

    def validate(self, theta, name: str = "theta") -> np.ndarray:
        """Check a theta vector against the spec and return it as `float32[F]`.

        Host-only. `name` is what the messages call the vector (e.g. "theta_star").

        Raises:
          ValueError: wrong shape/length, a non-finite entry, or an entry outside its bounds;
            the message names the feature.
        """
        arr = np.asarray(theta, dtype=np.float64)
        if arr.ndim != 1 or arr.shape[0] != self.num_features:
            raise ValueError(
                f"{name} must have shape ({self.num_features},) for features {list(self.names)}, "
                f"got shape {arr.shape}"
            )
        # Compare in float32, the dtype theta lives in on device: a weight sitting on a bound
        # (0.3 -> 0.30000001 in float32) must still pass when it comes back from the device.
        arr32 = arr.astype(np.float32)
        lower, upper = np.float32(self.lower), np.float32(self.upper)
        for k, feature in enumerate(self.names):
            v = arr[k]
            if not np.isfinite(v):
                raise ValueError(f"{name}[{k}] ('{feature}') is {v}; weights must be finite")
            if arr32[k] < lower[k] or arr32[k] > upper[k]:
                raise ValueError(
                    f"{name}[{k}] ('{feature}') = {v} is outside its bounds "
                    f"[{self.lower[k]}, {self.upper[k]}]"
                )
        return arr32


def reward(theta: jax.Array, phi: jax.Array) -> jax.Array:
    """Evaluate `R_theta = phi @ theta`.

    Compiled-safe; vmaps over a leading seed axis of `theta`.

    Args:
      theta: `[F] float32` reward weights.
      phi: `[..., F] float32` features (or `Phi`, their sums over a trajectory).

    Returns:
      `[...] float32` reward (or trajectory return).
    """
    return jnp.einsum("...f,f->...", phi, theta)
