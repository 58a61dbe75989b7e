"""Which entries of theta can a ranking of a group of trajectories move at all?

Host-only NumPy. A judge's ranking of `M` trajectories constrains theta only through the
differences `Phi[i] - Phi[j]` of their feature sums. A feature whose sum is (almost) the same
for every trajectory of a group adds (almost) the same constant to every `R_theta` there, so no
ranking of that group can move its weight. The standard case: every finished game has
`Phi[game_over] = 1`, so on groups of finished whole games the game-over weight is invisible
to the update; windows that cut some games (or games truncated at `max_len`) make it vary.

`feature_spread` measures this per feature over many groups: the within-group spread of the
sums relative to their size, and the fraction of groups where the sum is constant.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def feature_spread(phis: Sequence[np.ndarray], names: Sequence[str], *,
                   lengths: Sequence[np.ndarray] | None = None, tol: float = 1e-6,
                   min_varying: float = 0.5, min_rel_spread: float = 0.01) -> list[dict]:
    """Per feature, how much its trajectory sums vary within groups. Host-only.

    Args:
      phis: per group, `float[M, F]` feature sums `Phi` of its `M` trajectories.
      names: the `F` feature names.
      lengths: optional per group `[M]` trajectory lengths; adds `corr_length`, the mean
        within-group Pearson correlation of each feature's sum with the length (near 1: the
        feature's sum mostly counts moves, so its weight and the other length-like weights
        are told apart only by the rest of the variation).
      tol: a group's sums count as constant when their range is at most
        `tol * max(1, max |Phi|)`.
      min_varying: a feature is identifiable only if it varies in at least this fraction of
        the groups ...
      min_rel_spread: ... and its mean relative spread is at least this.

    Returns:
      One dict per feature: `feature`, `rel_spread` (mean over groups of the within-group
      std divided by the group's mean |Phi|; 0 where that is 0), `constant_fraction`
      (fraction of groups where the sums are constant), `identifiable` (bool), and
      `corr_length` when `lengths` is given (NaN where undefined).

    Raises:
      ValueError: no groups, or a group that is not `[M >= 2, F]`.
    """
    f = len(names)
    if not phis:
        raise ValueError("feature_spread needs at least one group")
    rel, const, corr = [], [], []
    for g, phi in enumerate(phis):
        phi = np.asarray(phi, np.float64)
        if phi.ndim != 2 or phi.shape[0] < 2 or phi.shape[1] != f:
            raise ValueError(f"group {g}: Phi must be [M >= 2, {f}], got {phi.shape}")
        scale = np.mean(np.abs(phi), axis=0)
        std = np.std(phi, axis=0)
        rel.append(np.where(scale > 0, std / np.where(scale > 0, scale, 1.0), 0.0))
        const.append(np.ptp(phi, axis=0) <= tol * np.maximum(1.0, np.max(np.abs(phi), axis=0)))
        if lengths is not None:
            corr.append(_corr_columns(phi, np.asarray(lengths[g], np.float64)))
    rel_spread, constant = np.mean(rel, axis=0), np.mean(const, axis=0)
    rows = []
    for k, name in enumerate(names):
        row = {"feature": name, "rel_spread": float(rel_spread[k]),
               "constant_fraction": float(constant[k]),
               "identifiable": bool(1.0 - constant[k] >= min_varying
                                    and rel_spread[k] >= min_rel_spread)}
        if lengths is not None:
            values = np.asarray([c[k] for c in corr])
            values = values[np.isfinite(values)]
            row["corr_length"] = float(values.mean()) if values.size else float("nan")
        rows.append(row)
    return rows


def _corr_columns(phi: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Pearson correlation of each column of `phi [M, F]` with `x [M]` (NaN if constant)."""
    a, b = phi - phi.mean(0), x - x.mean()
    denom = np.sqrt((a ** 2).sum(0) * (b ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (a * b[:, None]).sum(0) / denom, np.nan)


def unidentifiable(rows: Sequence[dict]) -> list[str]:
    """Names of the features `feature_spread` flags as not identifiable."""
    return [r["feature"] for r in rows if not r["identifiable"]]
