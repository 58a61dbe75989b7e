"""Turn a judge's ranking and the current reward's returns into preference pairs.

Host-only NumPy. SAILOR compares two orders of the same `M` trajectories: the judge's
(`Ranking`, e.g. from an LLM) and the one induced by the current reward, `r_theta = Phi @ theta`.
A judged pair is *discordant* (D_neg) when `r_theta` orders it the other way, *concordant*
(D_pos) when both agree. Every discordant pair is kept; a random subset of concordant pairs
anchors what the reward already gets right. In every output pair `i` is the trajectory the
judge prefers.

Ties. The judge ties a pair when `ranking.scores` is given and the two scores are exactly
equal (otherwise the higher-ranked trajectory of `ranking.order` wins). `r_theta` ties a pair
when `|r_a - r_b| <= TIE_TOL * max(1, |r_a|, |r_b|)` (absolute below 1, relative above).
Pairs tied by either side are neither discordant nor concordant.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.special

from sailor_jax.config import PreferenceConfig
from sailor_jax.types import Preferences, Ranking

SOURCE_PAIRWISE, SOURCE_PAIRWISE_REVERSED, SOURCE_SCORES, SOURCE_NONE = 0, 1, 2, 3
"""Codes returned by `judge_probability`: where the probability of a pair came from."""
TIE_TOL = 1e-6
"""`r_theta` ties a pair when its returns are within `TIE_TOL * max(1, |r_a|, |r_b|)`."""


class PreferenceFallbackWarning(UserWarning):
    """Confidence weighting had to fall back from `pairwise_prob` to scores or to weight 1."""


def _as_returns(r_theta, ranking: Ranking) -> np.ndarray:
    r = np.asarray(r_theta, dtype=np.float64)
    m = len(ranking.order)
    if r.shape != (m,):
        raise ValueError(f"r_theta must have shape ({m},) to match the ranking, got {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError(f"r_theta has non-finite entries at {np.flatnonzero(~np.isfinite(r))}")
    return r


def judged_pairs(ranking: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """All pairs the judge orders (no score tie) as (winner, loser) `int64[Q]` arrays."""
    a, b = np.triu_indices(len(ranking.order), k=1)
    rank = ranking.rank
    a_wins = rank[a] < rank[b]
    win, lose = np.where(a_wins, a, b), np.where(a_wins, b, a)
    if ranking.scores is not None:
        scores = np.asarray(ranking.scores, dtype=np.float64)
        keep = scores[win] != scores[lose]
        win, lose = win[keep], lose[keep]
    return win, lose


def all_judged_pairs(ranking: Ranking, weight: float = 1.0,
                     returns: np.ndarray | None = None) -> Preferences:
    """Every pair the judge orders (`judged_pairs`), winner first, each of weight `weight`;
    a pair is discordant where `returns` (`float[M]`, `R_theta`) reverse the judge's order
    (None: none marked)."""
    win, lose = judged_pairs(ranking)
    discordant = (theta_sign(returns, win, lose) < 0 if returns is not None
                  else np.zeros(win.shape, bool))
    return Preferences(i=win.astype(np.int32), j=lose.astype(np.int32),
                       w=np.full(win.shape, weight, np.float32), discordant=discordant)


def agent_preferred(ranking: Ranking, reference_games: int) -> float | None:
    """The share of (agent, reference player) pairs of a group in which the judge ranks the
    agent's trajectory higher: the last `reference_games` of the group are the reference
    player's (`SailorConfig.reference_games`). Host-only.

    With each player's skill measured on games of its own, this gives the judge's accuracy on
    the run's own windows: the share itself where the agent is the stronger player, one minus
    it where the reference player is. None without reference games or agent games.
    """
    m = len(ranking.order)
    if not 0 < reference_games < m:
        return None
    rank = ranking.rank
    return float(np.mean(rank[:m - reference_games, None] < rank[None, m - reference_games:]))


def theta_sign(r: np.ndarray, win: np.ndarray, lose: np.ndarray) -> np.ndarray:
    """`int8[Q]`: +1 where the returns `r` (`float[M]`) order pair (`win[q]`, `lose[q]`) as
    the judge does, -1 where they reverse it, 0 where tied (within `TIE_TOL`, relative)."""
    diff = r[win] - r[lose]
    tol = TIE_TOL * np.maximum(1.0, np.maximum(np.abs(r[win]), np.abs(r[lose])))
    return np.where(np.abs(diff) <= tol, 0, np.sign(diff)).astype(np.int8)


def judge_probability(ranking: Ranking, i, j) -> tuple[np.ndarray, np.ndarray]:
    """Look up the judge's probability that trajectory `i` beats `j`.

    Host-only. Uses `pairwise_prob[i, j]`; if NaN, `1 - pairwise_prob[j, i]`; if both are NaN
    (or there is no `pairwise_prob`), `sigmoid(scores[i] - scores[j])` when scores exist;
    otherwise NaN.

    Args:
      ranking: The judge's ranking of `M` trajectories.
      i: `int[P]` first trajectory of each pair.
      j: `int[P]` second trajectory of each pair.

    Returns:
      `p`: `float64[P]` probabilities in [0, 1] (NaN where unknown), and `source`: `int8[P]`
      codes `SOURCE_PAIRWISE`, `SOURCE_PAIRWISE_REVERSED`, `SOURCE_SCORES` or `SOURCE_NONE`.
    """
    i, j = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64)
    p = np.full(i.shape, np.nan)
    source = np.full(i.shape, SOURCE_NONE, dtype=np.int8)
    if ranking.pairwise_prob is not None:
        prob = np.asarray(ranking.pairwise_prob, dtype=np.float64)
        forward, backward = prob[i, j], 1.0 - prob[j, i]
        use_backward = np.isnan(forward) & ~np.isnan(backward)
        p = np.where(use_backward, backward, forward)
        source[~np.isnan(forward)] = SOURCE_PAIRWISE
        source[use_backward] = SOURCE_PAIRWISE_REVERSED
    if ranking.scores is not None:
        scores = np.asarray(ranking.scores, dtype=np.float64)
        from_scores = np.isnan(p) & np.isfinite(scores[i] - scores[j])
        p = np.where(from_scores, scipy.special.expit(scores[i] - scores[j]), p)
        source[from_scores] = SOURCE_SCORES
    return p, source


def _weights(ranking: Ranking, i: np.ndarray, j: np.ndarray, weighting: str) -> np.ndarray:
    if weighting == "none" or len(i) == 0:
        return np.ones(len(i), dtype=np.float32)
    if weighting == "discrepancy":
        distance = np.abs(ranking.rank[i] - ranking.rank[j]).astype(np.float64)
        return (distance / distance.mean()).astype(np.float32)
    p, source = judge_probability(ranking, i, j)
    fallback = source >= SOURCE_SCORES
    if np.any(fallback):
        warnings.warn(
            f"confidence weighting: {int(np.sum(source == SOURCE_SCORES))} pair(s) used "
            f"sigmoid(score difference) and {int(np.sum(source == SOURCE_NONE))} pair(s) got "
            "weight 1 because the judge gave no pairwise probability",
            PreferenceFallbackWarning,
            stacklevel=3,
        )
    margin = np.abs(2.0 * np.clip(p, 0.0, 1.0) - 1.0)
    return np.where(np.isnan(p), 1.0, margin).astype(np.float32)


def build_preferences(
    r_theta, ranking: Ranking, rng: np.random.Generator | int, cfg: PreferenceConfig
) -> Preferences:
    """Select discordant and sampled concordant pairs and weight them.

    Host-only; vectorised over all `M (M - 1) / 2` pairs.

    Weights (`cfg.weighting`):
      - "none": 1 for every pair.
      - "confidence" (option A): the judge's margin `|2p - 1|` in [0, 1], with `p` from
        `judge_probability(ranking, i, j)`; pairs with no probability get 1. The margin has no
        direction: the pair's direction always comes from `ranking.order`. Any fallback
        (scores or weight 1) emits one `PreferenceFallbackWarning` per call site (Python's
        default warning filter), giving the counts; `judge_probability` returns the per-pair
        source codes for logging. Not normalised (the objectives divide by the total weight).
      - "discrepancy" (option B): proportional to the judge's rank distance
        `|rank(i) - rank(j)|`, divided by its mean over the returned pairs (so the mean weight
        is 1). We use the judge's distance, not `|rank_theta - rank_judge|`: it measures how
        clearly the judge separates the two, is defined for concordant pairs too, does not move
        with the theta being fitted, and stays small for near-neighbour swaps, where LLM
        rankings are noisiest. A discordant pair far apart in the judge's order is a gross
        reward error and gets a large weight.

    Args:
      r_theta: `float[M]` returns `Phi @ theta` of the ranked trajectories (finite).
      ranking: The judge's ranking of the same `M` trajectories.
      rng: NumPy generator or int seed; used only to sample concordant pairs.
      cfg: Pair selection and weighting.

    Returns:
      `Preferences`: discordant pairs first (in `np.triu_indices` order), then the sampled
      concordant pairs (same order); `i` is the judge's preferred trajectory. Empty when there
      is no discordant pair.

    Raises:
      ValueError: `r_theta` has the wrong shape or a non-finite entry.
    """
    r = _as_returns(r_theta, ranking)
    win, lose = judged_pairs(ranking)
    keep, num_discordant = select_pairs(r, win, lose, rng, cfg)
    i, j = win[keep].astype(np.int32), lose[keep].astype(np.int32)
    return Preferences(
        i=i,
        j=j,
        w=_weights(ranking, i, j, cfg.weighting),
        discordant=np.arange(len(keep)) < num_discordant,
    )


def select_pairs(r: np.ndarray, win: np.ndarray, lose: np.ndarray,
                 rng: np.random.Generator | int, cfg: PreferenceConfig) -> tuple[np.ndarray, int]:
    """Which judged pairs become preferences: every discordant one, then
    `round(cfg.concordant_ratio * |D_neg|)` concordant ones sampled (capped by those there are).

    Host-only. Args: `r` `float64[N]` returns of the compared items; `win`, `lose` `int[Q]`
    the judge's (winner, loser) pairs over them; `rng` samples the concordant pairs.
    Returns `(keep int64[K] indices into the pairs, discordant first, each block in pair
    order; the number of discordant ones)`.
    """
    rng = np.random.default_rng(rng)
    sign = theta_sign(r, win, lose)
    discordant, concordant = np.flatnonzero(sign < 0), np.flatnonzero(sign > 0)
    num_pos = min(int(np.floor(cfg.concordant_ratio * len(discordant) + 0.5)), len(concordant))
    sampled = np.sort(rng.choice(len(concordant), size=num_pos, replace=False))
    return np.concatenate([discordant, concordant[sampled]]), len(discordant)


def _judge_key(ranking: Ranking) -> np.ndarray:
    """Higher is better: the judge's scores if all finite, else minus the rank."""
    if ranking.scores is not None and np.all(np.isfinite(ranking.scores)):
        return np.asarray(ranking.scores, dtype=np.float64)
    return -ranking.rank.astype(np.float64)


def kendall_tau(r_theta, ranking: Ranking) -> float:
    """Kendall's tau-b between the order of `r_theta` and the judge's order.

    Host-only. The judge's order is `ranking.scores` when given and all finite (so score ties
    count as ties), else `ranking.order`. Ties in `r_theta` are exact ties.

    Args:
      r_theta: `float[M]` returns of the ranked trajectories (finite).
      ranking: The judge's ranking.

    Returns:
      tau in [-1, 1] (1 = same order); NaN only when undefined (M < 2 or a constant side).

    Raises:
      ValueError: `r_theta` has the wrong shape or a non-finite entry.
    """
    import scipy.stats  # deferred: with scikit-optimize, a third of a script's start

    r = _as_returns(r_theta, ranking)
    key = _judge_key(ranking)
    if len(r) < 2 or np.ptp(r) == 0 or np.ptp(key) == 0:
        return float("nan")
    return float(scipy.stats.kendalltau(r, key).statistic)


def pair_agreement(r_theta, ranking: Ranking) -> float:
    """Fraction of judge-ordered pairs on which `r_theta` agrees with the judge.

    Host-only. Pairs the judge ties (equal scores) are skipped; pairs that `r_theta` ties
    (within `TIE_TOL`) count one half, so a constant reward scores 0.5.

    Args:
      r_theta: `float[M]` returns of the ranked trajectories (finite).
      ranking: The judge's ranking.

    Returns:
      Agreement in [0, 1] (1 = same order, 0 = reversed); NaN if the judge orders no pair.

    Raises:
      ValueError: `r_theta` has the wrong shape or a non-finite entry.
    """
    r = _as_returns(r_theta, ranking)
    win, lose = judged_pairs(ranking)
    if len(win) == 0:
        return float("nan")
    sign = theta_sign(r, win, lose)
    return float(np.mean((sign + 1) / 2.0))
