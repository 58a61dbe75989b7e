"""Pairwise judgements -> a ranking: pair sampling, order-debiasing and a Bradley-Terry fit.

Host-only, NumPy. A pairwise judge gives `P[i, j]`, the probability that trajectory `i` is
better than `j` (NaN where the pair was not judged). `fit_bradley_terry` finds log-strengths
`s` maximising the soft-label Bradley-Terry log-likelihood
`sum_ij P[i, j] * log sigmoid(s_i - s_j) - l2 / 2 * |s|^2` by damped Newton steps; the small
L2 prior keeps it defined when a trajectory wins (or loses) every comparison or is unjudged.
"""

from __future__ import annotations

import numpy as np

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


def _objective(s: np.ndarray, wins: np.ndarray, l2: float) -> float:
    diff = s[:, None] - s[None, :]
    return float(-np.sum(wins * np.logaddexp(0.0, -diff)) - 0.5 * l2 * np.dot(s, s))


def fit_bradley_terry(
    prob: np.ndarray, *, l2: float = 1e-2, max_iters: int = 100, tol: float = 1e-10
) -> np.ndarray:
    """Fit Bradley-Terry log-strengths to soft pairwise outcomes.

    Host-only. Damped Newton on a strictly concave objective: converges in a few dozen steps.

    Args:
      prob: `[M, M]` float; `prob[i, j]` = probability (soft win count) that `i` beats `j`;
        NaN (and the diagonal) = not judged.
      l2: strength of the Gaussian prior on the log-strengths (> 0).
      max_iters: most Newton steps.
      tol: stop when the Newton decrement falls below this.

    Returns:
      `float64[M]` log-strengths (higher is better), mean zero.

    Raises:
      ValueError: `prob` is not square or `l2 <= 0`.
    """
    prob = np.asarray(prob, dtype=np.float64)
    if prob.ndim != 2 or prob.shape[0] != prob.shape[1]:
        raise ValueError(f"prob must be square [M, M], got shape {prob.shape}")
    if not l2 > 0.0:
        raise ValueError(f"l2 must be > 0, got {l2}")
    m = prob.shape[0]
    if m == 0:
        return np.zeros(0)
    wins = np.where(np.isfinite(prob), np.clip(prob, 0.0, 1.0), 0.0)
    np.fill_diagonal(wins, 0.0)
    counts = wins + wins.T
    s = np.zeros(m)
    for _ in range(max_iters):
        sig = 1.0 / (1.0 + np.exp(-(s[:, None] - s[None, :])))  # sigmoid(s_i - s_j)
        grad = np.sum(wins * (1.0 - sig) - wins.T * sig, axis=1) - l2 * s
        weight = counts * sig * (1.0 - sig)
        hessian = np.diag(weight.sum(axis=1) + l2) - weight  # negative Hessian (pos. def.)
        step = np.linalg.solve(hessian, grad)
        decrement = float(grad @ step)
        if decrement < tol:
            break
        t, base = 1.0, _objective(s, wins, l2)
        while t > 1e-6 and _objective(s + t * step, wins, l2) < base + 0.25 * t * decrement:
            t *= 0.5
        s = s + t * step
    return s - s.mean()


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
