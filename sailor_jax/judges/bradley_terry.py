"""Pairwise judgements -> a ranking: pair sampling, order-debiasing and a Bradley-Terry fit.

Host-only, NumPy + SciPy. `fit_linear` is the project's one Bradley-Terry fit: a linear model
`P(first of pair p wins) = sigmoid(x_p . v + offset_p)` over per-pair feature differences with
an L2 prior, fitted by SciPy's trust-region Newton method. A pairwise judge gives `P[i, j]`, the
probability that trajectory `i` is better than `j` (NaN where the pair was not judged);
`fit_bradley_terry` is its special case of one-hot features: log-strengths `s` maximising the
soft-label log-likelihood `sum_ij P[i, j] * log sigmoid(s_i - s_j) - l2 / 2 * |s|^2`; the small
L2 prior keeps it defined when a trajectory wins (or loses) every comparison or is unjudged.
`sailor_lab.offline_fit` fits a linear reward's theta with the same `fit_linear`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.special

from sailor_jax.types import Ranking


def sample_pairs(m: int, max_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """Choose the unordered pairs to judge among `m` trajectories.

    Host-only. All `m (m - 1) / 2` pairs when that is at most `max_pairs`; otherwise a random
    subset of `max_pairs` pairs that contains a random path through all trajectories (when
    `max_pairs >= m - 1`), so every trajectory is compared and the comparison graph is
    connected.

    Args:
      m: number of trajectories (>= 0).
      max_pairs: most pairs to return (>= 1).
      rng: NumPy generator (the only source of randomness).

    Returns:
      `int64[P, 2]` pairs `(a, b)` with `a < b`, sorted lexicographically.
    """
    all_pairs = np.array([(a, b) for a in range(m) for b in range(a + 1, m)], dtype=np.int64)
    if len(all_pairs) <= max_pairs:
        return all_pairs.reshape(-1, 2)
    chosen: set[tuple[int, int]] = set()
    if max_pairs >= m - 1:
        path = rng.permutation(m)
        steps = zip(path[:-1].tolist(), path[1:].tolist(), strict=True)
        chosen.update((min(a, b), max(a, b)) for a, b in steps)
    rest = [p for p in map(tuple, all_pairs.tolist()) if p not in chosen]
    extra = rng.choice(len(rest), size=max_pairs - len(chosen), replace=False)
    chosen.update(rest[k] for k in extra.tolist())
    return np.array(sorted(chosen), dtype=np.int64)


def debiased_prob(p_first_ab: np.ndarray, p_first_ba: np.ndarray) -> np.ndarray:
    """Combine both presentation orders into `P(a better than b)`.

    Host-only. `p_first_ab` is the judge's normalised probability that the first-shown
    trajectory wins when `a` is shown first, `p_first_ba` the same with `b` shown first, so
    `P(a > b) = 0.5 * (p_first_ab + (1 - p_first_ba))`; a constant position bias cancels.

    Args:
      p_first_ab: `[P]` floats in [0, 1].
      p_first_ba: `[P]` floats in [0, 1].

    Returns:
      `float64[P]` in [0, 1].
    """
    return 0.5 * (np.asarray(p_first_ab, np.float64) + 1.0 - np.asarray(p_first_ba, np.float64))


def prob_matrix(m: int, pairs: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """Build `float32[m, m]` with `[a, b] = prob`, `[b, a] = 1 - prob`, NaN elsewhere. Host-only.

    Non-finite `prob` entries leave the pair unjudged (NaN).
    """
    out = np.full((m, m), np.nan, dtype=np.float64)
    pairs, prob = np.asarray(pairs).reshape(-1, 2).tolist(), np.asarray(prob).tolist()
    for (a, b), p in zip(pairs, prob, strict=True):
        if np.isfinite(p):
            out[a, b], out[b, a] = p, 1.0 - p
    return out.astype(np.float32)


GTOL = 1e-7
"""`fit_linear` stops when the norm of the objective's gradient is below this (SciPy's `gtol`,
in the objective's units): small against the prior's curvature, yet above the rounding floor
of objectives of up to a few hundred pairs, where SciPy would report non-convergence."""


@dataclasses.dataclass(frozen=True)
class LinearFit:
    """Result of `fit_linear`: `coef float64[D]`, the minimised objective `loss` (float) and
    whether SciPy's optimiser reported convergence (`converged`)."""

    coef: np.ndarray
    loss: float
    converged: bool


def fit_linear(x, weights, *, l2: float, offset=None) -> LinearFit:
    """Fit a linear Bradley-Terry model to weighted pairwise outcomes (MAP, Gaussian prior).

    Host-only. Bradley & Terry (1952) with the log-strength of an item linear in its features:
    `P(first of pair p wins) = sigmoid(x_p . v + offset_p)`, `x_p` the first item's features
    minus the second's. Minimises the strictly convex
    `sum_p w_p softplus(-(x_p . v + offset_p)) + l2 / 2 * |v|^2` (a win with weight `w_p`, i.e.
    logistic regression without intercept whose every label is "first wins") by
    `scipy.optimize.minimize(method="trust-exact")` with its gradient and Hessian, from
    `v = 0`, to a gradient norm below `GTOL`. Item strengths are the case `x_p = e_i - e_j`
    (`fit_bradley_terry`).

    Args:
      x: `float[P, D]` feature differences (first minus second) of the `P` pairs.
      weights: `float[P]` soft win counts of the first item, >= 0 (0 = pair left out).
      l2: precision of the Gaussian prior on `v` (> 0; keeps separable data finite).
      offset: `float[P]` fixed part of each pair's logit (default zeros).

    Returns:
      `LinearFit` with `coef float64[D]` (zeros, loss 0, when no pair has a positive weight).

    Raises:
      ValueError: `x` not 2-D or not finite, `weights` / `offset` not `[P]` or not finite,
        a negative weight, or `l2 <= 0`.
    """
    from scipy import optimize  # deferred: a fifth of a second of every script's start

    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    offset = np.zeros(len(w)) if offset is None else np.asarray(offset, dtype=np.float64)
    if x.ndim != 2 or w.shape != (x.shape[0],) or offset.shape != w.shape:
        raise ValueError(f"need x [P, D], weights [P], offset [P]; got {x.shape}, {w.shape}, "
                         f"{offset.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(offset)) and np.all(w >= 0)
            and np.all(np.isfinite(w))):
        raise ValueError("x and offset must be finite and weights finite and >= 0")
    if not l2 > 0.0:
        raise ValueError(f"l2 must be > 0, got {l2}")
    if x.shape[1] == 0 or not np.any(w > 0):  # nothing to fit: the prior's mode
        return LinearFit(coef=np.zeros(x.shape[1]), loss=0.0, converged=True)

    def loss(v: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ v + offset
        value = w @ np.logaddexp(0.0, -z) + 0.5 * l2 * v @ v
        return float(value), -(w * scipy.special.expit(-z)) @ x + l2 * v

    def hessian(v: np.ndarray) -> np.ndarray:
        p = scipy.special.expit(x @ v + offset)
        return (x.T * (w * p * (1.0 - p))) @ x + l2 * np.eye(x.shape[1])

    res = optimize.minimize(loss, np.zeros(x.shape[1]), jac=True, hess=hessian,
                            method="trust-exact", options={"gtol": GTOL})
    return LinearFit(coef=res.x, loss=float(res.fun), converged=bool(res.success))


def fit_bradley_terry(prob: np.ndarray, *, l2: float = 1e-2) -> np.ndarray:
    """Fit Bradley-Terry log-strengths to soft pairwise outcomes.

    Host-only. `fit_linear` on one row per ordered pair `(i, j)` with `prob[i, j] > 0`:
    features `e_i - e_j`, weight `prob[i, j]`; maximises
    `sum_ij prob[i, j] * log sigmoid(s_i - s_j) - l2 / 2 * |s|^2`.

    Args:
      prob: `[M, M]` float; `prob[i, j]` = probability (soft win count) that `i` beats `j`,
        clipped to [0, 1]; NaN (and the diagonal) = not judged.
      l2: strength of the Gaussian prior on the log-strengths (> 0).

    Returns:
      `float64[M]` log-strengths (higher is better), mean zero.

    Raises:
      ValueError: `prob` is not square or `l2 <= 0`.
    """
    prob = np.asarray(prob, dtype=np.float64)
    if prob.ndim != 2 or prob.shape[0] != prob.shape[1]:
        raise ValueError(f"prob must be square [M, M], got shape {prob.shape}")
    m = prob.shape[0]
    wins = np.where(np.isfinite(prob), np.clip(prob, 0.0, 1.0), 0.0)
    np.fill_diagonal(wins, 0.0)
    i, j = np.nonzero(wins)
    x = np.zeros((len(i), m))
    x[np.arange(len(i)), i], x[np.arange(len(i)), j] = 1.0, -1.0
    s = fit_linear(x, wins[i, j], l2=l2).coef
    return s - s.mean() if m else s


def rank_from_pairs(
    m: int, pairs: np.ndarray, prob: np.ndarray, *, l2: float = 1e-2
) -> Ranking | None:
    """Turn judged pairs into a `Ranking` via a Bradley-Terry fit.

    Host-only.

    Args:
      m: number of trajectories.
      pairs: `[P, 2]` int pairs `(a, b)`.
      prob: `[P]` float `P(a better than b)`; non-finite = the pair could not be judged.
      l2: Bradley-Terry prior strength.

    Returns:
      `Ranking(order, scores=float32[m] log-strengths, pairwise_prob=float32[m, m])`, or None
      when `m >= 2` and no pair could be judged. Ties in strength keep the lower index first.
    """
    matrix = prob_matrix(m, pairs, prob)
    if m >= 2 and not np.isfinite(np.asarray(prob, dtype=np.float64)).any():
        return None
    strengths = fit_bradley_terry(matrix, l2=l2)
    order = np.argsort(-strengths, kind="stable").astype(np.int32)
    return Ranking(order=order, scores=strengths.astype(np.float32), pairwise_prob=matrix)
