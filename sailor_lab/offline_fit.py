"""The offline ceiling of a linear reward: fit theta to a judge's pairwise preferences.

Host-only NumPy + SciPy. Bradley-Terry logistic regression without intercept on the pairs'
feature-sum differences: `P(i beats j) = sigmoid(w . (Phi[i] - Phi[j]) / scale)`, fitted by
the project's one Bradley-Terry fit (`sailor_jax.judges.bradley_terry.fit_linear`) on the
weighted negative log-likelihood plus a small L2 penalty (`scale` is the mean L2 norm of the
differences, as in `pair_objectives`). Entries outside `free` stay at the given
theta and enter as a fixed offset. Fitted on many groups' pairs at once, this is the best
agreement a linear `R_theta` over these features can reach with the judge; comparing it with
theta0 and with what the in-loop updates reach says how much of the gap is the update's
(`benchmarks/results/agreement_ceiling/agreement_ceiling.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from sailor_jax.alignment.pair_objectives import check_phi, diff_scale, pair_diffs
from sailor_jax.alignment.preferences import kendall_tau
from sailor_jax.judges.bradley_terry import fit_linear
from sailor_jax.types import Preferences, Ranking


@dataclasses.dataclass(frozen=True)
class BTFit:
    """Result of `fit_bradley_terry`: `theta float64[F]` (fitted free entries, the given fixed
    ones; its scale is the likelihood's, not the reward bounds': rescale it, the order it
    induces does not change), the train NLL (penalty included) and whether the optimiser
    converged."""

    theta: np.ndarray
    nll: float
    converged: bool


def group_pairs(rankings: Sequence[Ranking | None], offsets: Sequence[int]) -> Preferences:
    """Every pair a judge orders in each group, as preferences over a pooled `Phi`. Host-only.

    Args:
      rankings: per group, the judge's ranking (None = skipped); score ties are left out.
      offsets: per group, the pooled index of its first trajectory.

    Returns:
      `Preferences` (weight 1, `discordant` all False) with `i` the preferred trajectory.
    """
    wins, loses = [], []
    for ranking, offset in zip(rankings, offsets, strict=True):
        if ranking is None:
            continue
        a, b = np.triu_indices(len(ranking.order), k=1)
        rank = ranking.rank
        a_wins = rank[a] < rank[b]
        win, lose = np.where(a_wins, a, b), np.where(a_wins, b, a)
        if ranking.scores is not None:
            scores = np.asarray(ranking.scores, np.float64)
            keep = scores[win] != scores[lose]
            win, lose = win[keep], lose[keep]
        wins.append(win + offset)
        loses.append(lose + offset)
    i = np.concatenate(wins).astype(np.int32) if wins else np.zeros(0, np.int32)
    j = np.concatenate(loses).astype(np.int32) if loses else np.zeros(0, np.int32)
    return Preferences(i=i, j=j, w=np.ones(len(i), np.float32),
                       discordant=np.zeros(len(i), bool))


def fit_bradley_terry(Phi, prefs: Preferences, theta: np.ndarray | None = None,
                      free: np.ndarray | None = None, l2: float = 1e-3) -> BTFit:
    """Fit the free entries of theta to the pairs by Bradley-Terry logistic regression.

    Host-only. Minimises `sum_p w_p softplus(-(dphi_p . theta) / scale) / sum_p w_p +
    l2 * ||theta_free||^2` over the free entries of theta; the fixed entries' part of
    `dphi_p . theta` is a constant offset per pair. That is `fit_linear` with the weights
    normalised to sum 1 and prior precision `2 * l2`.

    Args:
      Phi: `float[N, F]` feature sums of the pooled trajectories.
      prefs: pairs over them, `i` preferred, weights `w`.
      theta: `float[F]` values of the fixed entries (default zeros).
      free: `bool[F]` entries to fit (default all).
      l2: ridge penalty (> 0 keeps the fit finite on separable data).

    Returns:
      `BTFit`.

    Raises:
      ValueError: bad shapes, pairs or weights (as `pair_objectives.pair_diffs`), no pairs,
        or l2 <= 0.
    """
    phi = check_phi(Phi)
    f = phi.shape[1]
    dphi, w = pair_diffs(phi, prefs)
    if len(w) == 0 or w.sum() <= 0:
        raise ValueError("fit_bradley_terry needs pairs with positive total weight")
    if not l2 > 0:
        raise ValueError(f"l2 must be > 0, got {l2}")
    base = np.zeros(f) if theta is None else np.asarray(theta, np.float64)
    free = np.ones(f, bool) if free is None else np.asarray(free, bool)
    scale = diff_scale(dphi)
    fit = fit_linear(dphi[:, free] / scale, w / w.sum(), l2=2 * l2,
                     offset=dphi[:, ~free] @ base[~free] / scale)
    out = base.copy()
    out[free] = fit.coef
    return BTFit(theta=out, nll=fit.loss, converged=fit.converged)

def agreement(theta, Phi, prefs: Preferences) -> float:
    """Weighted fraction of pairs `R_theta = Phi @ theta` orders as preferred (ties 1/2)."""
    phi = check_phi(Phi)
    dphi, w = pair_diffs(phi, prefs)
    margin = dphi @ np.asarray(theta, np.float64)
    right = (margin > 0) + 0.5 * (margin == 0)
    return float(right @ w / w.sum()) if w.sum() > 0 else float("nan")


def mean_group_tau(theta, phis: Sequence[np.ndarray],
                   rankings: Sequence[Ranking | None]) -> float:
    """Mean over groups of Kendall's tau-b between `phi @ theta` and the judge (NaN skipped)."""
    taus = [kendall_tau(np.asarray(p, np.float64) @ np.asarray(theta, np.float64), r)
            for p, r in zip(phis, rankings, strict=True) if r is not None]
    taus = [t for t in taus if np.isfinite(t)]
    return float(np.mean(taus)) if taus else float("nan")
