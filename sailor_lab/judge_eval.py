"""Judge quality: a reproducible pool of graded-skill trajectories and how well a judge orders it.

Host side (the pool is played by compiled JAX code). The pool holds games of players whose
skill is known by construction: the expectimax expert taking a uniformly random legal move
with probability epsilon (`expert.expert_act`; epsilon 1 is the uniform random player). A
good judge prefers the player with the lower epsilon. Groups of `M` trajectories are drawn
from the pool (seeded), each judge ranks every group, and the rankings are scored:

- `skill_order_accuracy`: over the pairs of a group whose players' epsilons differ, the
  fraction the judge orders lower-epsilon first;
- `agreement_<reference>`: over all pairs of a group, the fraction ordered as a reference
  judge orders them (the expert judge, the outcome judge);
- `kendall_tau`: mean over groups of Kendall's tau-b between the judge's rank and the
  epsilon (positive = the judge agrees with skill).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence

import jax
import numpy as np
import scipy.stats

from sailor_jax.agents.rollout import make_act_collect
from sailor_jax.errors import UserError
from sailor_jax.game.expert import expert_act
from sailor_jax.types import Ranking, TrajectoryBatch

DEFAULT_EPSILONS = (0.0, 0.1, 0.3, 0.6, 1.0)


@dataclasses.dataclass(frozen=True)
class Pool:
    """Graded-skill trajectories (host arrays): `batch` holds `P` games, `epsilon[P]` the
    exploration rate of the player of each (0 = the expert, 1 = uniformly random)."""

    batch: TrajectoryBatch
    epsilon: np.ndarray


@dataclasses.dataclass(frozen=True, kw_only=True)
class PoolArgs:
    """The graded-skill pool and the group draw of a judge benchmark (`benchmarks/judge_*`)."""

    epsilons: tuple[float, ...] = DEFAULT_EPSILONS
    """Exploration rates of the pool's players (0 = the expert, 1 = uniformly random)."""
    games_per_player: int = 8
    """Games per player in the pool."""
    max_len: int = 200
    """Moves per game at most (games still running are cut there)."""
    pool_depth: int = 2
    """Expectimax depth of the pool's players."""
    m: int = 8
    """Trajectories per group."""
    groups: int = 8
    """Groups judged."""
    seed: int = 0
    """Seed of the pool's games and of the group draw."""

    def draw(self) -> tuple[Pool, list[np.ndarray]]:
        """Play the pool (`build_pool`) and draw its groups (`sample_groups`). Host-only.

        Raises:
          UserError: as `build_pool` and `sample_groups`.
        """
        pool = build_pool(self.epsilons, self.games_per_player, self.max_len,
                          self.pool_depth, self.seed)
        return pool, sample_groups(len(pool.epsilon), self.m, self.groups, self.seed)

    def record(self) -> dict:
        """The settings as a benchmark record's fields (`epsilons` as a list)."""
        return {**dataclasses.asdict(self), "epsilons": list(self.epsilons)}


def build_pool(epsilons: Sequence[float] = DEFAULT_EPSILONS, games_per_player: int = 8,
               max_len: int = 200, depth: int = 2, seed: int = 0) -> Pool:
    """Play `games_per_player` games for each epsilon-greedy expert, at most `max_len` moves.

    Deterministic in `seed` (player `k` plays with key `fold_in(key(seed), k)`).

    Raises:
      UserError: no epsilons, or non-positive counts.
    """
    if games_per_player <= 0 or max_len <= 0 or not epsilons:
        raise UserError(f"need epsilons and positive games_per_player and max_len, got "
                        f"{list(epsilons)}, {games_per_player}, {max_len}")
    parts = []
    for k, eps in enumerate(epsilons):
        collect = make_act_collect(expert_act(depth, eps), games_per_player, max_len)
        parts.append(jax.device_get(collect(jax.random.fold_in(jax.random.key(seed), k))))
    batch = jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
    return Pool(batch=batch, epsilon=np.repeat(np.asarray(epsilons, float), games_per_player))


def sample_groups(pool_size: int, m: int, num_groups: int, seed: int = 0) -> list[np.ndarray]:
    """`num_groups` index arrays of `m` distinct pool trajectories each (seeded). Host-only.

    Each group lists its trajectories in a seeded random order: pools are stored player by
    player, the most skilled first, so a judge that breaks ties by position (a constant
    rating, a pairwise judge at 0.5) would otherwise be scored as ordering them by skill.

    Raises:
      UserError: `m` < 2 or larger than the pool, or `num_groups` < 1.
    """
    if not 2 <= m <= pool_size or num_groups < 1:
        raise UserError(f"need 2 <= m <= pool size ({pool_size}) and groups >= 1, got m={m}, "
                        f"groups={num_groups}")
    rng = np.random.default_rng(seed)
    return [rng.choice(pool_size, m, replace=False) for _ in range(num_groups)]


def group_batches(pool: Pool, groups: Sequence[np.ndarray]) -> list[TrajectoryBatch]:
    """The `TrajectoryBatch` of each group (host arrays, in the group's index order)."""
    return [jax.tree.map(lambda x, idx=idx: np.asarray(x)[idx], pool.batch) for idx in groups]


def _pair_signs(ranking: Ranking) -> np.ndarray:
    """`[M, M]` +1 where the ranking puts i before j, -1 after, 0 on the diagonal."""
    rank = ranking.rank
    return np.sign(rank[None, :] - rank[:, None])


def skill_truth(epsilons: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per group, `[M, M]` +1 where trajectory i's player is the more skilled (lower epsilon,
    so i should come first), -1 where less, 0 where equal: `pair_counts`' truth."""
    return [np.sign(e[None, :] - e[:, None]) for e in epsilons]


def pair_counts(rankings: Sequence[Ranking | None], truth: Sequence[np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per group, `(pairs i < j ordered as truth orders them, pairs counted)`, `int [G]` each.

    Host-only. `truth[g]` is `[M, M]`: +1 where i should come before j, -1 after, 0 = no
    preference (such pairs are not counted). A group with no ranking has every pair wrong.
    """
    right, total = [], []
    for ranking, t in zip(rankings, truth, strict=True):
        upper = np.triu(t != 0, k=1)
        total.append(int(upper.sum()))
        right.append(0 if ranking is None else int(np.sum(upper & (_pair_signs(ranking) == t))))
    return np.array(right, np.int64), np.array(total, np.int64)


def pair_accuracy(rankings: Sequence[Ranking | None], truth: Sequence[np.ndarray]) -> float:
    """Fraction of pairs `i < j` the rankings order as `truth` does, over all groups
    (`pair_counts`); NaN when no pair is counted. Host-only."""
    right, total = pair_counts(rankings, truth)
    return int(right.sum()) / int(total.sum()) if total.sum() else float("nan")


def accuracy_interval(rankings: Sequence[Ranking | None], truth: Sequence[np.ndarray],
                      confidence: float = 0.95, resamples: int = 4000, seed: int = 0
                      ) -> tuple[float, float]:
    """Percentile bootstrap interval of `pair_accuracy`, resampling whole groups. Host-only.

    Groups are the unit (pairs of one group share trajectories; groups of one pool may share
    games too, so with few games the interval is, if anything, too narrow). `(nan, nan)`
    when no pair is counted.
    """
    return ratio_interval(*pair_counts(rankings, truth), confidence, resamples, seed)


def ratio_interval(right: np.ndarray, total: np.ndarray, confidence: float = 0.95,
                   resamples: int = 4000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of `sum(right) / sum(total)`, resampling whole groups.

    Host-only. `scipy.stats.bootstrap(paired=True, method="percentile")` (Efron & Tibshirani
    1993, ch. 13) with `numpy.random.default_rng(seed)`: the same inputs give the same interval.
    A resample of groups that count no pair has no ratio; the percentiles are those of the
    other resamples (possible only with a few groups).

    Args:
      right: `float[G]` pairs each group got right (ties counted 1/2).
      total: `float[G]` pairs each group counted (>= 0).
      confidence: coverage in (0, 1); resamples: bootstrap resamples (>= 1).

    Returns:
      `(low, high)` accuracies in [0, 1]; `(nan, nan)` when no pair is counted, the accuracy
      twice when `G == 1`.
    """
    right, total = np.asarray(right, np.float64), np.asarray(total, np.float64)
    if total.sum() == 0:
        return float("nan"), float("nan")
    if len(total) == 1:  # every resample is the one group
        return float(right[0] / total[0]), float(right[0] / total[0])

    def ratio(r: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return r.sum(axis=axis) / t.sum(axis=axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.stats.DegenerateDataWarning)  # NaN: handled below
        res = scipy.stats.bootstrap((right, total), ratio, paired=True, vectorized=True,
                                    confidence_level=confidence, n_resamples=resamples,
                                    method="percentile", rng=np.random.default_rng(seed))
    low, high = res.confidence_interval
    if np.isnan(low) or np.isnan(high):  # some resample counted no pair
        low, high = np.nanquantile(res.bootstrap_distribution,
                                   [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def judge_metrics(rankings: Sequence[Ranking | None], epsilons: Sequence[np.ndarray],
                  references: dict[str, Sequence[Ranking | None]]) -> dict:
    """Score a judge's rankings of groups (see the module docstring). Host-only.

    Args:
      rankings: the judge's ranking of each group (None = the judge failed on it).
      epsilons: per group, `[M]` epsilons of its trajectories' players.
      references: name -> rankings of the same groups by a reference judge.

    Returns:
      dict with `skill_order_accuracy`, its 95% interval `skill_order_accuracy_ci`
      (`accuracy_interval`), `skill_pairs`, `agreement_<name>` per reference,
      `kendall_tau` (mean over judged groups), `kendall_tau_per_group`, `failed_groups`.
    """
    skill = skill_truth(epsilons)
    out = {"skill_order_accuracy": pair_accuracy(rankings, skill),
           "skill_order_accuracy_ci": list(accuracy_interval(rankings, skill)),
           "skill_pairs": int(sum(np.triu(s != 0, k=1).sum() for s in skill))}
    for name, ref in references.items():
        truth = [_pair_signs(r) if r is not None else np.zeros((len(e), len(e)))
                 for r, e in zip(ref, epsilons, strict=True)]
        out[f"agreement_{name}"] = pair_accuracy(rankings, truth)
    taus = [float(scipy.stats.kendalltau(r.rank, e).statistic)
            for r, e in zip(rankings, epsilons, strict=True) if r is not None]
    taus = [t for t in taus if np.isfinite(t)]
    out["kendall_tau"] = float(np.mean(taus)) if taus else float("nan")
    out["kendall_tau_per_group"] = taus
    out["failed_groups"] = sum(r is None for r in rankings)
    return out


def tau_with(rankings: Sequence[Ranking | None], references: Sequence[Ranking | None]) -> float:
    """Mean over groups of Kendall's tau-b between two judges' ranks of the same groups (1 =
    the same order); groups either failed, or with a constant side, are skipped (NaN if all
    are). Host-only."""
    taus = [float(scipy.stats.kendalltau(r.rank, q.rank).statistic)
            for r, q in zip(rankings, references, strict=True) if r is not None and q is not None]
    taus = [t for t in taus if np.isfinite(t)]
    return float(np.mean(taus)) if taus else float("nan")


def llm_prompt_stats(records: Sequence[dict]) -> dict:
    """Cost and bias of an LLM judge from its log records. Host-only.

    A prompt repeated in several groups (the same game drawn twice from a pool) runs once; its
    repeats are logged with 0 seconds (`LLMRanker._logprobs`), so the cost is per prompt the
    model ran (`distinct_prompts`), not per prompt logged.

    Pointwise prompts (one window each) give `label_mass` (mean probability of the rating
    labels), `prompts`, `distinct_prompts`, `seconds_per_window` and `tokens_per_window` (per
    prompt run). Pairwise prompts give `position_bias` (fraction of prompts whose first-shown
    trajectory got `p_first > 0.5`, before the two orders are combined), `label_mass` (mean
    probability of the two label tokens), `prompts`, `distinct_prompts`, `seconds_per_pair`
    and `tokens_per_pair` (a pair is judged in both orders: two prompts run). Empty when
    neither was logged.
    """
    rated = [r for r in records if r.get("event") == "pointwise_prompt"]
    if rated:
        ran = [r for r in rated if r["seconds"] > 0] or rated
        return {"label_mass": float(np.nanmean([np.nan if r["label_mass"] is None
                                                else r["label_mass"] for r in rated])),
                "prompts": len(rated), "distinct_prompts": len(ran),
                "seconds_per_window": float(sum(r["seconds"] for r in ran) / len(ran)),
                "tokens_per_window": float(sum(r["prompt_tokens"] for r in ran) / len(ran))}
    prompts = [r for r in records if r.get("event") == "pairwise_prompt"]
    if not prompts:
        return {}
    ran = [r for r in prompts if r["seconds"] > 0] or prompts
    pairs = len(ran) / 2
    return {"position_bias": float(np.mean([r["p_first"] > 0.5 for r in prompts])),
            "label_mass": float(np.mean([r["label_mass"] for r in prompts])),
            "prompts": len(prompts), "distinct_prompts": len(ran),
            "seconds_per_pair": float(sum(r["seconds"] for r in ran) / pairs),
            "tokens_per_pair": float(sum(r["prompt_tokens"] for r in ran) / pairs)}
