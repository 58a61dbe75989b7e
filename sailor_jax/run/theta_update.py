"""One SAILOR iteration's theta update for every seed: preferences -> alignment -> refinement.

Host-only. `align_step` turns each seed's judge ranking and `R_theta` ranking into preference
pairs (`preferences.build_preferences`) and moves theta to agree (`alignment.updates.update_theta`);
`refine_stalled` asks the refinement advisor for the seeds whose rankings already agree but
whose game score stalls. `segment_scores` and `update_stall` keep the stall counters of the
`LoopState`. After Zeng et al. 2024, "Learning Reward for Robot Skills Using Large Language
Models via Self-Alignment" (the update, and the "active" refinement step).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sailor_jax.alignment import heldout, refinement
from sailor_jax.alignment.parallel import update_many
from sailor_jax.alignment.preferences import (
    agent_preferred,
    all_judged_pairs,
    build_preferences,
    judged_pairs,
    kendall_tau,
)
from sailor_jax.alignment.updates import UpdateResult
from sailor_jax.config import AlignmentConfig, SailorConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.run.results import LoopState, Outcome, SeedUpdate
from sailor_jax.types import Ranking


def align_step(thetas: np.ndarray, batch: Any, rankings: list[Ranking | None],
               spec: RewardSpec, cfg: SailorConfig, iteration: int,
               advisor: refinement.Advisor | None = None, stalled: list[bool] | None = None,
               score_history: list[list[float | None]] | None = None, aggregate: str = "sum",
               evidence: list[list[float | None]] | None = None,
               beliefs: list[dict | None] | None = None
               ) -> tuple[np.ndarray, list[SeedUpdate]]:
    """Build preferences and update theta for every seed; refine where asked. Host-only.

    `R_theta` ranks each trajectory as `cfg.preferences.compare` says (with "auto", as the
    judge's `aggregate`: sums of `Phi`, or per-move means); with `cfg.alignment.heldout > 0`
    the update is fitted on part of each group and accepted only if it orders the held-out
    part better (`alignment.heldout`); with `cfg.alignment.survival_guard` an update that
    lowers the group's per-move reward is rejected (`heldout.survival_check`); with
    `cfg.alignment.evidence_z > 0` an update is accepted only while the seed's judge evidence
    (`heldout.judge_evidence` of its earlier updates' held-out p-values) reaches it.

    Args:
      thetas: `float32[S, F]` current weights.
      batch: host `TrajectoryBatch` with a leading seed axis (`Phi` is `[S, M, F]`).
      rankings: `S` judge results (`Ranking`, or None where the judge failed for that seed).
      spec: reward spec (bounds, tunable mask).
      cfg: run config (preference, alignment and refinement settings, seed).
      iteration: SAILOR iteration (seeds the host generators `[seed, iteration, s]`).
      advisor: the refinement advisor (`cfg.refine.enabled`); None = no refinement.
      stalled: per seed, whether its game score has not improved for `cfg.refine.patience`
        iterations; the advisor is asked only for seeds that stalled and have no discordant
        pair this iteration.
      score_history: per iteration, the `[S]` segment game scores (for the advisor's prompt).
      aggregate: what the judge's verdict is about, "sum" or "mean" (`Ranker.aggregate`).
      evidence: per seed, the `heldout_p` of its earlier updates (None: none yet).
      beliefs: per seed, what its last update left for the next (`SeedUpdate.belief`, the
        bt_reliability update's prior; None: none yet).

    Returns:
      `(new thetas float32[S, F], S SeedUpdate)`; a refined seed's update has `refine` set;
      with a held-out part each update records its `heldout_p` and the `evidence_z` before it.

    Raises:
      ValueError: an unknown comparison or aggregate.
    """
    comparison = heldout.resolve_comparison(cfg.preferences.compare, aggregate)
    new_thetas, updates = thetas.copy(), [None] * len(rankings)
    judged, calls, fresh, tests = [], [], {}, {}
    for s, ranking in enumerate(rankings):
        if ranking is None:
            updates[s] = SeedUpdate(judge_failed=True, outcome=Outcome.NO_JUDGE,
                                    message="judge gave no ranking; theta unchanged")
            continue
        rng = np.random.default_rng([cfg.seed, iteration, s])
        phi_sum, prefs, tau, test = _window_fit(thetas[s], batch, s, ranking, comparison, rng,
                                                cfg)
        if test is not None:
            tests[s] = test
        judged.append(s)
        fresh[s] = prefs, tau
        calls.append((thetas[s], phi_sum, prefs, spec, cfg.alignment, rng,
                      beliefs[s] if beliefs is not None else None))
    # The seeds' updates are independent: side by side in worker processes, same results.
    results = update_many(calls, cfg.alignment.update_workers)
    for s, result in zip(judged, results, strict=True):
        prefs, tau = fresh[s]
        decision = decide(DecisionContext(
            thetas[s], result, tests.get(s), batch.Phi[s], batch.lengths[s], spec,
            cfg.alignment, evidence[s] if evidence is not None else []))
        theta = decision.theta
        new_thetas[s] = theta
        updates[s] = SeedUpdate(
            num_discordant=prefs.num_discordant, num_concordant=prefs.num_concordant,
            kendall_tau_before=tau(thetas[s]), kendall_tau_after=tau(theta),
            error_before=result.error_before,
            error_after=result.error_after if decision.accepted else result.error_before,
            accepted=decision.accepted, outcome=decision.outcome,
            evaluations=result.num_evaluations, message=decision.message,
            heldout_p=decision.heldout_p, evidence_z=decision.evidence_z,
            mcmc=result.diagnostics,
            belief=result.belief if result.belief is not None else (
                beliefs[s] if beliefs else None),
            agent_preferred=agent_preferred(rankings[s], cfg.reference_games))
    if advisor is not None and stalled is not None:
        refine_stalled(new_thetas, updates, batch, rankings, spec, cfg, iteration, advisor,
                       stalled, score_history or [])
    return new_thetas, updates


@dataclasses.dataclass(frozen=True)
class HeldoutWindows:
    """The held-out part of a seed's group: its windows' features and the judge's order."""

    phi: np.ndarray
    """`float64[H, F]` the held-out windows' features (as the comparison ranks them)."""
    win: np.ndarray
    """`int64[Q]` index (into `phi`) of the window the judge prefers in each judged pair."""
    lose: np.ndarray
    """`int64[Q]` the other window of each pair."""
    ranking: Ranking
    """The judge's ranking of the held-out windows."""


@dataclasses.dataclass(frozen=True)
class DecisionContext:
    """Everything one seed's update decision reads (host-only)."""

    theta: np.ndarray
    """`float32[F]` the seed's current theta."""
    result: UpdateResult
    """The fit (`alignment.updates.update_theta`)."""
    heldout: HeldoutWindows | None
    """The group's held-out windows (None: `alignment.heldout` is 0)."""
    Phi: np.ndarray
    """`float[M, F]` the group's feature sums (the survival guard's)."""
    lengths: np.ndarray
    """`int[M]` the group's window lengths in moves."""
    spec: RewardSpec
    alignment: AlignmentConfig
    earlier_p: list[float | None]
    """The seed's earlier updates' `heldout_p` (the judge-evidence gate's input)."""


@dataclasses.dataclass(frozen=True)
class Decision:
    """One seed's update decision: the theta it keeps and why."""

    theta: np.ndarray
    """`float32[F]` the candidate if accepted, else the current theta."""
    outcome: Outcome
    message: str
    heldout_p: float | None = None
    """The held-out test's one-sided p-value (`alignment.heldout.heldout_p`; None: none)."""
    evidence_z: float | None = None
    """The seed's judge evidence before this update (None: no held-out part)."""

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.MOVED


def decide(ctx: DecisionContext) -> Decision:
    """Take or refuse one seed's fitted theta: the fit's own acceptance, then the held-out sign
    test, the judge-evidence gate and the survival guard, in that order; the first that refuses
    names the outcome. Host-only; raises nothing for valid inputs."""
    result, cfg = ctx.result, ctx.alignment
    outcome = Outcome.MOVED if result.accepted else Outcome.NO_GAIN
    message, p, z = result.message, None, None
    if ctx.heldout is not None:
        held = ctx.heldout
        fitted = result.proposal if result.proposal is not None else ctx.theta
        p = heldout.heldout_p(fitted, held.phi, held.ranking)
        z = heldout.judge_evidence(ctx.earlier_p)
        if outcome is Outcome.MOVED:
            check = heldout.pairs_test(ctx.theta, result.theta, held.phi, held.win, held.lose)
            message = f"{message}; {check.message}"
            outcome = Outcome.MOVED if check.accepted else Outcome.HELD_OUT
        if outcome is Outcome.MOVED and cfg.evidence_z > 0 and z < cfg.evidence_z:
            outcome = Outcome.NO_EVIDENCE
            message = (f"{message}; judge evidence z {z:+.2f} below {cfg.evidence_z:g} "
                       f"(theta unchanged)")
    if cfg.survival_guard and outcome is Outcome.MOVED:
        kept, guard = heldout.survival_check(ctx.theta, result.theta, ctx.Phi, ctx.lengths,
                                             ctx.spec.names, cfg.survival_floor)
        message, outcome = f"{message}; {guard}", Outcome.MOVED if kept else Outcome.GUARD
    theta = result.theta if outcome is Outcome.MOVED else ctx.theta
    return Decision(theta, outcome, message, p, z)


def _window_fit(theta: np.ndarray, batch: Any, s: int, ranking: Ranking, comparison: str,
                rng: np.random.Generator, cfg: SailorConfig) -> tuple:
    """Seed `s`'s windows: `(phi [N, F] of the fitted windows, their preferences, tau(theta)
    on them, the held-out windows (`HeldoutWindows`) or None)`."""
    phi_all = heldout.comparison_phi(batch.Phi[s], batch.lengths[s], comparison)
    phi_sum, fit_ranking, test = phi_all, ranking, None
    if cfg.alignment.heldout > 0:
        fit, out = heldout.split_group(len(phi_all), cfg.alignment.heldout, rng)
        phi_sum, fit_ranking = phi_all[fit], heldout.subset_ranking(ranking, fit)
        out_ranking = heldout.subset_ranking(ranking, out)
        test = HeldoutWindows(phi_all[out], *judged_pairs(out_ranking), out_ranking)
    if cfg.alignment.method == "bt_reliability":
        # every judged pair, weight 2 / M: a group's M (M - 1) / 2 pairs then weigh as its
        # M - 1 comparisons, a ranking's choices (one ranking's pairs are not independent)
        prefs = all_judged_pairs(fit_ranking, 2.0 / len(fit_ranking.order), phi_sum @ theta)
    else:
        prefs = build_preferences(phi_sum @ theta, fit_ranking, rng, cfg.preferences)
    return phi_sum, prefs, lambda th: kendall_tau(phi_sum @ th, fit_ranking), test


def refine_stalled(thetas: np.ndarray, updates: list[SeedUpdate], batch: Any,
                   rankings: list[Ranking | None], spec: RewardSpec, cfg: SailorConfig,
                   iteration: int, advisor: refinement.Advisor, stalled: list[bool],
                   score_history: list[list[float | None]]) -> None:
    """Ask the advisor about the seeds that agree with the judge but stalled. Host-only.

    Updates `thetas` (`float32[S, F]`) and the asked seeds' `updates` in place: `refine`
    holds the advisor's answer, the parsed suggestion or why it was invalid, and whether the
    refined theta was accepted (`refinement.refine_theta`).
    """
    seeds = [s for s, (ranking, update) in enumerate(zip(rankings, updates, strict=True))
             if ranking is not None and update.num_discordant == 0 and stalled[s]]
    if not seeds:
        return
    stats = [_advisor_stats(batch, spec, score_history, cfg.refine.patience, s) for s in seeds]
    answers = advisor.suggest(spec, [thetas[s] for s in seeds], stats,
                              context={"iteration": iteration})
    for s, (suggestion, record) in zip(seeds, answers, strict=True):
        entry = {"answer": record["answer"], "suggestion": record["suggestion"],
                 "invalid_reason": record["invalid_reason"], "accepted": False}
        if suggestion is not None:
            phi_sum = np.asarray(batch.Phi[s], np.float64)
            rng = np.random.default_rng([cfg.seed, iteration, s, 1])
            result = refinement.refine_theta(thetas[s], phi_sum, rankings[s], suggestion, spec,
                                  cfg.alignment, cfg.refine, rng)
            thetas[s] = result.theta
            entry.update(accepted=result.accepted, message=result.message,
                         error_before=result.error_before, error_after=result.error_after)
            updates[s].kendall_tau_after = kendall_tau(phi_sum @ result.theta, rankings[s])
        updates[s].refine = entry


def _advisor_stats(batch: Any, spec: RewardSpec, score_history: list, patience: int,
                   s: int) -> dict:
    """What the advisor is shown about seed `s`: recent scores, mean feature per move."""
    per_move = np.asarray(batch.Phi[s], np.float64).sum(0) / max(
        1.0, float(np.sum(batch.lengths[s])))
    recent = [h[s] for h in score_history[-(patience + 1):]]
    return {"game_score_per_iteration": [float(v) for v in recent if v is not None],
            "mean_feature_per_move": dict(zip(spec.names, per_move.tolist(), strict=True)),
            "discordant_pairs": 0}


def segment_scores(metrics: Any, num_seeds: int) -> list[float | None]:
    """Per-seed mean game score of the episodes that ended during a segment (None: none).

    `metrics.episode_score` is `[R, U]` (rows x updates; NaN where no episode ended); the
    first `num_seeds` rows are the SAILOR seeds.
    """
    score = np.asarray(metrics.episode_score, np.float64)[:num_seeds]
    return [float(np.nanmean(row)) if np.isfinite(row).any() else None for row in score]


def update_stall(state: LoopState, scores: list[float | None], min_improvement: float) -> None:
    """Track each seed's best game score and the iterations since it last improved."""
    for k, score in enumerate(scores):
        best = state.best_score[k]
        if score is not None and (best is None or score > best + min_improvement):
            state.best_score[k], state.stall[k] = score, 0
        elif best is not None:  # no stall is counted before the first finished episode
            state.stall[k] += 1
