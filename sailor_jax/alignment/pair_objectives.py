"""Objectives of preference pairs under a linear return: pair error and Bradley-Terry NLL.

Host-only NumPy. A trajectory's return is `R_theta = theta . Phi`, so every objective is a
matrix product over the pairs' feature differences `dPhi = Phi[i] - Phi[j]`; nothing is
re-simulated. `sailor_jax.alignment.updates` minimises these and re-exports the public three
(`pair_error`, `bt_nll`, `bt_scale`).

Bradley-Terry scale. `Phi` sums features over 100-2000 moves, so return differences are large.
The likelihood uses `sigmoid(beta * (R_i - R_j) / scale)` with one positive scalar
`scale = bt_scale(Phi, prefs)`: the mean L2 norm of `dPhi` over the pairs (1 if that is 0).
Then `|R_i - R_j| / scale <= ||theta|| * ||dPhi|| / scale` is O(||theta||), and a single
scalar leaves the order induced by every theta unchanged.
"""

from __future__ import annotations

import numpy as np

from sailor_jax.types import Preferences


def check_phi(Phi, num_features: int | None = None) -> np.ndarray:
    """Return `Phi` as `float64[M, F]` (M >= 1, F = `num_features` when given).

    Raises:
      ValueError: another shape, or non-finite entries (naming their rows).
    """
    phi = np.asarray(Phi, dtype=np.float64)
    num_features = phi.shape[-1] if num_features is None and phi.ndim else num_features
    if phi.ndim != 2 or phi.shape[1] != num_features or phi.shape[0] == 0:
        raise ValueError(f"Phi must have shape [M, {num_features}] with M >= 1, got {phi.shape}")
    rows = np.flatnonzero(~np.all(np.isfinite(phi), axis=-1))
    if rows.size:
        raise ValueError(f"Phi has non-finite entries in rows {rows}")
    return phi


def pair_diffs(phi: np.ndarray, prefs: Preferences) -> tuple[np.ndarray, np.ndarray]:
    """Validate `prefs` against `M = len(phi)`; return `dPhi float64[P, F]` and `w float64[P]`.

    Raises:
      ValueError: fields of unequal length, non-integer, out-of-range or self pair indices,
        or negative / non-finite weights.
    """
    i, j, w = (np.asarray(a) for a in (prefs.i, prefs.j, prefs.w))
    p = len(prefs)
    if i.shape != (p,) or j.shape != (p,) or w.shape != (p,) or np.shape(prefs.discordant) != (p,):
        raise ValueError(f"Preferences fields must all have shape ({p},)")
    if p and not (np.issubdtype(i.dtype, np.integer) and np.issubdtype(j.dtype, np.integer)):
        raise ValueError(f"pair indices must be integers, got {i.dtype} and {j.dtype}")
    m = phi.shape[0]
    bad = np.flatnonzero((i < 0) | (i >= m) | (j < 0) | (j >= m) | (i == j))
    if bad.size:
        raise ValueError(f"pair indices must be distinct and in [0, {m}); bad pairs at {bad}")
    w = w.astype(np.float64)
    ok = np.isfinite(w) & (w >= 0)
    if not np.all(ok):
        raise ValueError(f"pair weights must be finite and >= 0, got {w[~ok]}")
    return phi[i] - phi[j], w


def _over_thetas(objective, thetas, Phi, prefs: Preferences, *extra):
    """Validate, then `objective(float64[K, F] thetas, dPhi, w, *extra)`; a float for `[F]`."""
    phi = check_phi(Phi)
    arr = np.asarray(thetas, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.shape[-1] != phi.shape[1]:
        raise ValueError(
            f"thetas must have shape [F] or [K, F] with F = {phi.shape[1]}, got {arr.shape}"
        )
    out = objective(np.atleast_2d(arr), *pair_diffs(phi, prefs), *extra)
    return float(out[0]) if arr.ndim == 1 else out


def weighted_error(thetas: np.ndarray, dphi: np.ndarray, w: np.ndarray) -> np.ndarray:
    """`float64[K]` weighted fraction of pairs ordered wrongly (ties 1/2); NaN if no weight.

    Args: `thetas float64[K, F]`, `dphi float64[P, F]`, `w float64[P]` (unchecked).
    """
    margin = thetas @ dphi.T
    wrong = (margin < 0) + 0.5 * (margin == 0)
    return wrong @ w / w.sum() if w.sum() > 0 else np.full(len(thetas), np.nan)


def weighted_nll(thetas: np.ndarray, dphi: np.ndarray, w: np.ndarray, beta: float,
                 scale: float) -> np.ndarray:
    """`float64[K]` weighted mean of `-log sigmoid(beta * margin / scale)`; NaN if no weight.

    Arguments as `weighted_error`. Uses the stable softplus form
    `max(-z, 0) + log1p(exp(-|z|))`, equal to `np.logaddexp(0, -z)` but several times faster
    (it runs at every MCMC step).
    """
    z = (thetas * (beta / scale)) @ dphi.T
    loss = np.maximum(-z, 0.0) + np.log1p(np.exp(-np.abs(z)))
    return loss @ w / w.sum() if w.sum() > 0 else np.full(len(thetas), np.nan)


def diff_scale(dphi: np.ndarray) -> float:
    """Mean L2 norm of the rows of `dphi float64[P, F]`, or 1 if there are none or it is 0."""
    scale = float(np.mean(np.linalg.norm(dphi, axis=1))) if len(dphi) else 0.0
    return scale if scale > 0 else 1.0


def pair_error(thetas, Phi, prefs: Preferences):
    """Weighted fraction of preference pairs that `R_theta` orders wrongly.

    Host-only; vectorised over thetas. A pair counts 1 if `R_i < R_j`, 1/2 if `R_i == R_j`.

    Args:
      thetas: `float[K, F]` candidate weights (or `float[F]` for one).
      Phi: `float[M, F]` per-trajectory feature sums.
      prefs: Pairs over the `M` trajectories, `i` preferred.

    Returns:
      `float64[K]` errors in [0, 1] (a float for `[F]` input); NaN if the total weight is 0.

    Raises:
      ValueError: bad shapes, non-finite `Phi`, or pair indices out of range.
    """
    return _over_thetas(weighted_error, thetas, Phi, prefs)


def bt_scale(Phi, prefs: Preferences) -> float:
    """Return the Bradley-Terry scale: mean L2 norm of `Phi[i] - Phi[j]` over pairs, or 1.

    Host-only. Raises ValueError like `pair_error`.
    """
    dphi, _ = pair_diffs(check_phi(Phi), prefs)
    return diff_scale(dphi)


def bt_nll(thetas, Phi, prefs: Preferences, beta: float, scale: float):
    """Weighted mean Bradley-Terry negative log-likelihood of the pairs.

    Host-only; vectorised over thetas; numerically stable for any margin.

    Args:
      thetas: `float[K, F]` candidate weights (or `float[F]` for one).
      Phi: `float[M, F]` per-trajectory feature sums.
      prefs: Pairs over the `M` trajectories, `i` preferred.
      beta: Boltzmann rationality (> 0).
      scale: Positive return scale, e.g. `bt_scale(Phi, prefs)`.

    Returns:
      `float64[K]` of `sum_p w_p * -log sigmoid(beta * (R_i - R_j) / scale) / sum_p w_p`
      (a float for `[F]` input); NaN if the total weight is 0.

    Raises:
      ValueError: bad shapes, non-finite `Phi`, or pair indices out of range.
    """
    return _over_thetas(weighted_nll, thetas, Phi, prefs, beta, scale)


def pad_pairs(a: np.ndarray, b: np.ndarray, w: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The linear pair terms `a [P, D]`, `b [P]` and weights `w [P]` padded with weight-0
    pairs to the next power of two of P, at least 64 (float64): a jitted sampler then compiles
    one program per bucket, not one per pair count."""
    n = len(w)
    pairs = max(64, 1 << max(0, n - 1).bit_length())
    pa, pb, pw = np.zeros((pairs, a.shape[1])), np.zeros(pairs), np.zeros(pairs)
    pa[:n], pb[:n], pw[:n] = a, b, w
    return pa, pb, pw
