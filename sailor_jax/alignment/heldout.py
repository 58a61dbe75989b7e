"""Like-with-like comparisons and held-out acceptance of a theta update.

Host-only NumPy.

Like with like. A judge states what its verdict on a trajectory is about (`Ranker.aggregate`):
a sum over its moves (a score, a return, a whole-game impression) or a per-move mean (the
expert's regret). `R_theta`'s side must be ranked the same way: `comparison_phi` turns the
feature sums `Phi` into per-move means for a "mean" judge, so the update fits `theta . Phi /
length` to a length-blind verdict instead of a length-driven sum. A per-move comparison cannot
see a constant added to every move's reward; there is no constant feature in `phi`, and the
per-move level of `R_theta` (whether the agent wants to live) moves only through the features'
own per-move means. On equal-length windows a sum and a mean order alike.

Held-out acceptance. An update fitted to the pairs of a few games always fits them better:
accepting on those same pairs lets the update re-draw theta from noise (the random-judge
control). `split_group` holds out part of the iteration's trajectories; the update is fitted
on the rest, and `pairs_test` accepts the candidate only when it orders the held-out pairs
(every pair the judge orders among them) better than the current theta by a sign-test margin:
with `g` pairs it newly gets right and `l` it newly gets wrong, accept iff
`g - l >= max(1, z * sqrt(g + l))`. Under a judge with no information `g` and `l` are
exchangeable, so the update stays put except by chance (at z = 1, by the normal
approximation, in P(Z > 1) of the updates that change some held-out pairs).

Judge evidence. The sign test asks whether one update orders one iteration's held-out pairs
better; at z = 1 a judge with no information passes it now and then, and over 40 updates its
accepted steps add up to a drift (the random-judge control). `heldout_p` asks, per update,
whether the fitted theta orders the held-out trajectories as the judge does better than chance
(a one-sided Kendall tau test); `judge_evidence` combines a seed's earlier updates' tests
(Stouffer's z). With `AlignmentConfig.evidence_z > 0` an update is accepted only while that z
reaches the threshold: a judge that knows nothing keeps its p-values uniform (the fitted theta
never saw the held-out verdicts, so their order is independent of it) and rarely opens the gate,
while a judge a theta can follow opens it after a few updates.

Survival guard. The per-move level of `R_theta` (its mean per move, the terminal feature
left out) decides how much the agent wants to live: below zero every move costs and the agent
learns to end the game; near zero it barely cares. Features such as smoothness and
monotonicity take nearly the same value on every move, so small weights on them act as a
constant, and comparisons of equal-length windows cannot see it (the seeds whose level a
random judge's step lowered collapsed or stalled). `survival_check` therefore
lets an update raise the level but never lower it: in 2048 points are made only while the
game goes on, so this project sets the level by that rule, not by the judge.
With a floor (`AlignmentConfig.survival_floor`) an update may also lower a level that lies
above the floor, down to the floor: a start that pays too much per move (a heuristic weighted
1.0 on every move) can then be moved by the judge, while a level at or below the floor keeps
the rule above.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sailor_jax.alignment.preferences import theta_sign
from sailor_jax.config.judge import COMPARISONS
from sailor_jax.game.features import TERMINAL_FEATURES
from sailor_jax.types import Ranking


def resolve_comparison(compare: str, aggregate: str) -> str:
    """The comparison to use: `compare`, or the judge's `aggregate` when `compare` is "auto".

    Raises:
      ValueError: `compare` not in `COMPARISONS`, or the resolved value not "sum" / "mean".
    """
    if compare not in COMPARISONS:
        raise ValueError(f"compare must be one of {COMPARISONS}, got {compare!r}")
    out = aggregate if compare == "auto" else compare
    if out not in ("sum", "mean"):
        raise ValueError(f"a judge's aggregate must be 'sum' or 'mean', got {out!r}")
    return out


def comparison_phi(Phi, lengths, comparison: str) -> np.ndarray:
    """`R_theta`'s side of the comparison as features: `float64[M, F]`.

    Args:
      Phi: `float[M, F]` feature sums over each trajectory.
      lengths: `int[M]` moves of each trajectory (a 0 counts as 1).
      comparison: "sum" (return `Phi`) or "mean" (`Phi / length`, the per-move mean).

    Raises:
      ValueError: unknown comparison, or `lengths` not of shape `[M]`.
    """
    phi = np.asarray(Phi, np.float64)
    if comparison == "sum":
        return phi
    if comparison != "mean":
        raise ValueError(f"comparison must be 'sum' or 'mean', got {comparison!r}")
    lengths = np.asarray(lengths, np.float64)
    if lengths.shape != phi.shape[:1]:
        raise ValueError(f"lengths must have shape ({phi.shape[0]},), got {lengths.shape}")
    return phi / np.maximum(lengths, 1.0)[:, None]


def split_group(m: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Split `m` trajectories into fitted and held-out index sets (`int64`, sorted).

    `round(fraction * m)` are held out, at least 2 and leaving at least 2 to fit.

    Raises:
      ValueError: `fraction` not in (0, 1), or `m < 4` (too few to form pairs on both sides).
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"held-out fraction must be in (0, 1), got {fraction}")
    if m < 4:
        raise ValueError(f"holding out needs at least 4 trajectories per group, got {m}")
    n_out = min(max(int(np.floor(fraction * m + 0.5)), 2), m - 2)
    perm = rng.permutation(m)
    return np.sort(perm[n_out:]), np.sort(perm[:n_out])


def subset_ranking(ranking: Ranking, index: np.ndarray) -> Ranking:
    """The judge's ranking restricted to the trajectories `index` (renumbered `0..len-1`)."""
    index = np.asarray(index, np.int64)
    position = np.full(len(ranking.order), -1, np.int64)
    position[index] = np.arange(len(index))
    order = position[np.asarray(ranking.order)]
    prob = None if ranking.pairwise_prob is None else \
        np.asarray(ranking.pairwise_prob)[np.ix_(index, index)]
    scores = None if ranking.scores is None else np.asarray(ranking.scores)[index]
    return Ranking(order=order[order >= 0].astype(np.int32), scores=scores, pairwise_prob=prob)


@dataclasses.dataclass(frozen=True)
class HeldoutResult:
    """Outcome of `pairs_test` (host-only)."""

    accepted: bool
    gained: float
    """Held-out pairs the candidate orders as the judge does and the current theta did not."""
    lost: float
    """Held-out pairs the current theta ordered as the judge does and the candidate does not."""
    agreement_before: float
    """Fraction of held-out pairs ordered as the judge does (ties 1/2), current theta."""
    agreement_after: float
    """The same for the candidate."""
    message: str


def pairs_test(theta, candidate, phi, win, lose, z: float = 1.0) -> HeldoutResult:
    """Accept `candidate` only if it orders the held-out pairs better than `theta`. Host-only.

    Accept iff `g - l >= max(1, z * sqrt(g + l))` (module docstring); an unchanged theta is not
    accepted. A tie of `R_theta` (`preferences.TIE_TOL`) counts half a pair.

    Args:
      theta, candidate: `float[F]` current and proposed weights.
      phi: `float[N, F]` comparison features of the held-out trajectories.
      win, lose: `int[P]` rows of `phi`: the judge prefers `win[p]` over `lose[p]`
        (`preferences.judged_pairs` of the `subset_ranking`).
      z: sign-test margin (>= 0).

    Raises:
      ValueError: `z` negative or not finite.
    """
    if not (np.isfinite(z) and z >= 0):
        raise ValueError(f"held-out z must be finite and >= 0, got {z}")
    phi = np.asarray(phi, np.float64)
    old = theta_sign(phi @ np.asarray(theta, np.float64), win, lose) / 2.0 + 0.5
    new = theta_sign(phi @ np.asarray(candidate, np.float64), win, lose) / 2.0 + 0.5
    gained = float(np.sum(np.maximum(new - old, 0.0)))
    lost = float(np.sum(np.maximum(old - new, 0.0)))
    accepted = bool(gained - lost >= max(1.0, z * np.sqrt(gained + lost)))
    before = float(old.mean()) if len(win) else float("nan")
    after = float(new.mean()) if len(win) else float("nan")
    verdict = "accepted" if accepted else "rejected (theta unchanged)"
    message = (f"held-out {verdict}: {len(win)} pairs, agreement {before:.3f} -> {after:.3f} "
               f"(+{gained:g} -{lost:g}, need a net >= max(1, {z:g} sqrt(n)))")
    return HeldoutResult(accepted, gained, lost, before, after, message)


def heldout_p(theta, phi, ranking: Ranking) -> float:
    """One-sided p-value that `R_theta` orders the held-out trajectories as the judge does.

    Kendall's tau-b between `phi @ theta` and the judge's order (its score ties kept as ties),
    tested against "no association" with the alternative "positive", by the normal
    approximation with the tie-corrected variance (`scipy.stats.kendalltau`). Host-only.

    Args:
      theta: `float[F]` weights fitted without these trajectories' verdicts.
      phi: `float[N, F]` comparison features of the held-out trajectories.
      ranking: the judge's `Ranking` of those N trajectories (`subset_ranking`).

    Returns:
      The p-value in (0, 1), or NaN when there is nothing to test (fewer than 3 trajectories,
      below which the tie-corrected variance is not defined, or `R_theta` or the judge ties
      all of them).

    Raises:
      ValueError: `phi` and `ranking` of different lengths.
    """
    from scipy import stats  # deferred: scipy.stats is a large import

    r = np.asarray(phi, np.float64) @ np.asarray(theta, np.float64)
    if len(r) != len(ranking.order):
        raise ValueError(f"phi has {len(r)} rows, the ranking {len(ranking.order)} entries")
    key = -ranking.rank.astype(np.float64)
    if ranking.scores is not None:  # equal scores: a tie, as `judged_pairs` counts it
        _, group = np.unique(np.asarray(ranking.scores, np.float64), return_inverse=True)
        best = np.full(group.max() + 1, -np.inf)
        np.maximum.at(best, group, key)
        key = best[group]
    if len(r) < 3 or np.ptp(r) == 0 or np.ptp(key) == 0:
        return float("nan")
    test = stats.kendalltau(r, key, alternative="greater", method="asymptotic")
    return float(test.pvalue)


def judge_evidence(pvalues) -> float:
    """Stouffer's z of a seed's earlier `heldout_p` values (`scipy.stats.combine_pvalues`).

    None and NaN entries (nothing tested) are left out; 0.0 when none is left. Each p is
    clipped into [1e-12, 1 - 1e-12] so that one extreme update cannot give an infinite z.
    Under a judge with no information the z is standard normal (the p-values are uniform).
    """
    from scipy import stats

    p = np.asarray([v for v in pvalues if v is not None and np.isfinite(v)], np.float64)
    if p.size == 0:
        return 0.0
    return float(stats.combine_pvalues(np.clip(p, 1e-12, 1 - 1e-12),
                                       method="stouffer").statistic)


def survival_level(theta, Phi, lengths, names) -> float:
    """Mean per-move `R_theta` of a group of trajectories, terminal features left out.

    Args:
      theta: `float[F]` weights.
      Phi: `float[M, F]` feature sums of the group's trajectories (whole games or windows).
      lengths: `int[M]` their moves.
      names: the `F` feature names; those in `game.features.TERMINAL_FEATURES` (they fire
        once, when the game ends) are left out.

    Returns:
      `sum_m Phi_m . theta' / sum_m length_m` (reward units per move), `theta'` = `theta` with
      the terminal entries zeroed.

    Raises:
      ValueError: shapes that do not match, or no moves at all.
    """
    phi, theta = np.asarray(Phi, np.float64), np.asarray(theta, np.float64).copy()
    lengths = np.asarray(lengths, np.float64)
    if phi.ndim != 2 or phi.shape[1] != theta.shape[0] or lengths.shape != phi.shape[:1] \
            or len(names) != theta.shape[0]:
        raise ValueError(f"Phi [M, F], theta [F], lengths [M] and F names expected, got "
                         f"{phi.shape}, {theta.shape}, {lengths.shape}, {len(names)}")
    if lengths.sum() <= 0:
        raise ValueError("survival_level needs at least one move")
    theta[[i for i, n in enumerate(names) if n in TERMINAL_FEATURES]] = 0.0
    return float(phi.sum(0) @ theta / lengths.sum())


def survival_check(theta, candidate, Phi, lengths, names,
                   floor: float | None = None) -> tuple[bool, str]:
    """`(accepted, message)`: the survival guard (module docstring) on one update.

    Accepted iff `survival_level(candidate) >= min(survival_level(theta), floor)` (within
    1e-9): the level may fall only while it stays at or above `floor` (reward units per move;
    `AlignmentConfig.survival_floor`), and with `floor=None` never. Other arguments as
    `survival_level`.
    """
    before = survival_level(theta, Phi, lengths, names)
    after = survival_level(candidate, Phi, lengths, names)
    need = before if floor is None else min(before, floor)
    ok = after >= need - 1e-9
    verdict = "kept" if ok else "rejected (theta unchanged)"
    bound = "" if floor is None else f" (floor {floor:+.3f})"
    return ok, f"survival guard {verdict}: per-move reward {before:+.3f} -> {after:+.3f}{bound}"
