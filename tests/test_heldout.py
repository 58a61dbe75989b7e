"""Like-with-like comparisons, the expert's value verdict, held-out acceptance."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from reference.numpy_2048 import legal_mask, move
from reference.numpy_expert import board_score

from sailor_jax.alignment import heldout
from sailor_jax.alignment.preferences import build_preferences, judged_pairs, pair_agreement
from sailor_jax.config import PAPER, AlignmentConfig, PreferenceConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges import ExpertRanker
from sailor_jax.judges.oracles import order_by_scores
from sailor_jax.run.theta_update import align_step
from sailor_jax.types import Ranking, TrajectoryBatch
from sailor_lab.offline_fit import fit_bradley_terry

SPEC = RewardSpec()


def _cosine(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _per_move_games(m: int, seed: int):
    """`m` synthetic trajectories: per-move features around a per-game mean, lengths 20-1000
    (the sums vary mostly with length, as in 2048).

    Returns `(Phi [m, 8] sums, lengths [m], per-move mean verdict of theta_star [m],
    theta_star)`."""
    rng = np.random.default_rng(seed)
    theta_star = np.array([1.0, 0.5, -0.3, 0.0, 0.4, -0.6, 0.2, 0.0])
    lengths = rng.integers(20, 1000, size=m)
    centre = rng.uniform(0.45, 0.55, size=(m, 8))  # positive features, as in 2048
    Phi, verdict = np.zeros((m, 8)), np.zeros(m)
    for k in range(m):
        phi = centre[k] + 0.1 * rng.normal(size=(lengths[k], 8))
        Phi[k], verdict[k] = phi.sum(0), (phi @ theta_star).mean()
    return Phi, lengths, verdict, theta_star


def _all_pairs(scores) -> object:
    ranking = Ranking(order=order_by_scores(scores), scores=scores.astype(np.float32))
    # r_theta = 0 ties every pair: no discordant pair. Use reversed scores as R_theta so that
    # every judged pair is discordant, i.e. all pairs are kept.
    return build_preferences(-scores, ranking, 0, PreferenceConfig())


def test_matched_comparison_recovers_a_per_move_theta_star_and_the_sum_does_not():
    """Fit a Bradley-Terry theta to every pair of 60 games judged by a per-move verdict,
    comparing `R_theta` per move (matched) or by whole-game sums, and score each fitted
    reward on 60 fresh games, ranked the way it was fitted."""
    Phi, lengths, verdict, theta_star = _per_move_games(60, seed=0)
    fresh_phi, fresh_len, fresh_verdict, _ = _per_move_games(60, seed=100)
    fresh = Ranking(order=order_by_scores(fresh_verdict), scores=fresh_verdict)
    prefs = _all_pairs(verdict)
    agreement, cosine = {}, {}
    for comparison in ("mean", "sum"):
        theta = fit_bradley_terry(heldout.comparison_phi(Phi, lengths, comparison), prefs).theta
        cosine[comparison] = _cosine(theta, theta_star)
        agreement[comparison] = pair_agreement(
            heldout.comparison_phi(fresh_phi, fresh_len, comparison) @ theta, fresh)
    assert cosine["mean"] > 0.99 and agreement["mean"] > 0.95
    assert cosine["sum"] < 0.95 and agreement["sum"] < 0.85


def test_comparison_resolution_and_bad_input():
    assert heldout.resolve_comparison("auto", "mean") == "mean"
    assert heldout.resolve_comparison("sum", "mean") == "sum"
    with pytest.raises(ValueError, match="compare must be one of"):
        heldout.resolve_comparison("median", "sum")
    with pytest.raises(ValueError, match="aggregate must be"):
        heldout.resolve_comparison("auto", "max")
    with pytest.raises(ValueError, match="lengths must have shape"):
        heldout.comparison_phi(np.ones((3, 8)), np.ones(2), "mean")
    np.testing.assert_allclose(heldout.comparison_phi(np.full((2, 8), 6.0), [3, 0], "mean"),
                               [[2.0] * 8, [6.0] * 8])  # a 0 length counts as 1


def _value(board) -> float:
    """Hand-computed depth-1 value: the best legal afterstate's heuristic, 0 if none."""
    legal = legal_mask(board)
    return max((board_score(move(board, a)[0]) for a in range(4) if legal[a]), default=0.0)


def test_value_verdict_against_a_hand_computed_window():
    first = np.array([1, 1, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], np.int8)
    after, gain1 = move(first, 0)  # left: 2+2 merge
    second = after.copy()
    second[np.flatnonzero(second == 0)[0]] = 1  # a spawn
    last, gain2 = move(second, 0)
    last[np.flatnonzero(last == 0)[-1]] = 2
    lost = np.array([1, 2, 1, 2, 2, 1, 2, 1, 1, 2, 1, 2, 2, 1, 2, 1], np.int8)  # no move
    boards = np.stack([np.stack([first, second, last]), np.stack([first, second, lost])])
    batch = TrajectoryBatch(
        boards=boards, actions=np.zeros((2, 2), np.int8),
        score_gains=np.array([[gain1, gain2], [gain1, 0.0]], np.float32),
        lengths=np.array([2, 2]), truncated=np.array([True, False]),
        score=np.zeros(2, np.float32), max_tile=np.zeros(2, np.int32), Phi=np.zeros((2, 8)))
    ranking = ExpertRanker(depth=1, verdict="value").rank(batch)
    expected = [gain1 + gain2 + _value(last) - _value(first), gain1 + 0.0 - _value(first)]
    assert _value(lost) == 0.0 and gain1 == 4
    # float32 heuristic tables: values near 1.6M carry 0.125-point steps
    np.testing.assert_allclose(ranking.scores, expected, rtol=1e-6, atol=0.5)
    assert ranking.order.tolist() == [0, 1]
    assert ExpertRanker(verdict="value").aggregate == "sum"
    assert ExpertRanker(verdict="regret").aggregate == "mean"


def test_pairs_test_rejects_a_step_that_only_fits_its_own_pairs():
    # Held-out judge: prefers feature 0. Candidate moves towards feature 1 (which fitted some
    # other pairs): it loses every held-out pair the current theta got right.
    phi = np.array([[3.0, 0.0] + [0] * 6, [2.0, 1.0] + [0] * 6, [1.0, 2.0] + [0] * 6,
                    [0.0, 3.0] + [0] * 6])
    ranking = Ranking(order=np.array([0, 1, 2, 3]))
    theta, candidate = np.eye(8)[0], np.eye(8)[1]
    test = heldout.pairs_test(theta, candidate, phi, *judged_pairs(ranking))
    assert not test.accepted and test.lost == 6 and test.gained == 0
    good = heldout.pairs_test(candidate, theta, phi, *judged_pairs(ranking))
    assert good.accepted and good.agreement_after == 1.0 and good.agreement_before == 0.0
    same = heldout.pairs_test(theta, theta, phi, *judged_pairs(ranking))  # nothing gained
    assert not same.accepted
    with pytest.raises(ValueError, match="z must be finite"):
        heldout.pairs_test(theta, candidate, phi, *judged_pairs(ranking), z=-1.0)


def test_split_group_and_subset_ranking():
    fit, out = heldout.split_group(8, 0.5, np.random.default_rng(0))
    assert len(fit) == 4 and len(out) == 4 and set(fit) | set(out) == set(range(8))
    fit, out = heldout.split_group(5, 0.1, np.random.default_rng(0))
    assert len(out) == 2 and len(fit) == 3
    with pytest.raises(ValueError, match="at least 4"):
        heldout.split_group(3, 0.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"in \(0, 1\)"):
        heldout.split_group(8, 1.0, np.random.default_rng(0))
    scores = np.array([0.1, 0.9, 0.5, 0.3])
    prob = np.arange(16, dtype=np.float32).reshape(4, 4)
    sub = heldout.subset_ranking(Ranking(order=order_by_scores(scores), scores=scores,
                                         pairwise_prob=prob), np.array([0, 2, 3]))
    assert sub.order.tolist() == [1, 2, 0]  # 0.5 > 0.3 > 0.1
    np.testing.assert_array_equal(sub.pairwise_prob, prob[np.ix_([0, 2, 3], [0, 2, 3])])


class _Batch:
    def __init__(self, phi, lengths):
        self.Phi, self.lengths = phi, lengths


def test_align_step_with_heldout_keeps_theta_under_a_judge_the_fit_cannot_generalise():
    """Fit and held-out halves disagree by construction (the judge's order of the fitted half
    rewards feature 1, of the held-out half feature 0): no accepted step may hurt the held-out
    half, and the theta stays."""
    cfg = dataclasses.replace(PAPER, trajectories=8, alignment=dataclasses.replace(PAPER.alignment,
        method="bt_mcmc", heldout=0.5, mcmc_samples=300, mcmc_burn_in=100, update_workers=1,
        mcmc_trust_region=1.0))
    rng = np.random.default_rng([cfg.seed, 0, 0])
    fit, out = heldout.split_group(8, 0.5, rng)  # the split align_step will draw
    phi = np.zeros((1, 8, 8))
    phi[0, :, 0] = np.arange(8.0)
    phi[0, :, 1] = np.arange(8.0)[::-1]
    score = np.zeros(8)
    score[fit] = phi[0, fit, 1]  # the fitted half: more feature 1 is better
    score[out] = phi[0, out, 0] + 100  # the held-out half: more feature 0 is better
    theta0 = np.asarray(SPEC.with_weights({"score_gain": 0.05}).start, np.float32)
    ranking = Ranking(order=order_by_scores(score), scores=score.astype(np.float32))
    new, updates = align_step(theta0[None], _Batch(phi, np.full((1, 8), 10)), [ranking],
                              SPEC, cfg, iteration=0)
    assert updates[0].num_discordant > 0
    assert "held-out rejected" in updates[0].message and updates[0].accepted is False
    assert updates[0].outcome == "held out"
    np.testing.assert_array_equal(new[0], theta0)
    # The same update on the fitted half alone, accepted on its own pairs, takes the step.
    plain = dataclasses.replace(cfg, trajectories=4, alignment=dataclasses.replace(
        cfg.alignment, heldout=0.0))
    own = heldout.subset_ranking(ranking, fit)
    moved, own_updates = align_step(theta0[None], _Batch(phi[:, fit], np.full((1, 4), 10)),
                                    [own], SPEC, plain, iteration=0)
    assert own_updates[0].accepted and not np.array_equal(moved[0], theta0)
    assert own_updates[0].outcome == "moved"


@pytest.mark.parametrize("build, match", [
    (lambda: AlignmentConfig(heldout=1.0), "heldout must be in"),
    (lambda: AlignmentConfig(heldout=float("nan")), "heldout must be in"),
    (lambda: AlignmentConfig(survival_floor=-0.1), "survival_floor must be"),
    (lambda: AlignmentConfig(survival_floor=float("nan")), "survival_floor must be"),
    (lambda: PreferenceConfig(compare="median"), "compare must be one of"),
    (lambda: dataclasses.replace(PAPER, trajectories=3, alignment=dataclasses.replace(
        PAPER.alignment, heldout=0.5)), "trajectories >= 4"),
])
def test_bad_heldout_and_comparison_config(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_survival_level_against_a_hand_computation():
    names = ("a", "b", "game_over")
    phi = np.array([[2.0, 10.0, 1.0], [4.0, 6.0, 0.0]])  # two windows, 10 + 30 moves
    theta = np.array([0.5, -0.1, -1.0])
    # (2 + 4) * 0.5 + (10 + 6) * -0.1 over 40 moves; game_over left out
    assert heldout.survival_level(theta, phi, [10, 30], names) == pytest.approx(
        (3.0 - 1.6) / 40)
    assert heldout.survival_level([0, 0, 5.0], phi, [10, 30], names) == 0.0
    with pytest.raises(ValueError, match="Phi"):
        heldout.survival_level(theta, phi[:, :2], [10, 30], names)
    with pytest.raises(ValueError, match="Phi"):
        heldout.survival_level(theta, phi, [10], names)
    with pytest.raises(ValueError, match="at least one move"):
        heldout.survival_level(theta, phi, [0, 0], names)


@pytest.mark.parametrize("before, after, ok", [
    (0.3, 0.4, True),     # raising it
    (0.3, 0.3, True),
    (0.3, 0.1, False),    # lower, even if still > 0: the agent cares less about living
    (0.3, -0.01, False),  # living would cost
    (-0.2, -0.1, True),   # raising a negative level
    (-0.2, -0.3, False),
])
def test_survival_check_never_lowers_the_per_move_reward(before, after, ok):
    names = ("a", "game_over")
    phi, lengths = np.array([[10.0, 1.0]]), [10]  # level = weight of "a"
    accepted, message = heldout.survival_check([before, -1.0], [after, 5.0], phi, lengths,
                                               names)
    assert accepted is ok
    assert message.startswith("survival guard " + ("kept" if ok else "rejected"))
    assert f"{before:+.3f} -> {after:+.3f}" in message


@pytest.mark.parametrize("before, after, floor, ok", [
    (1.0, 0.6, 0.5, True),    # lowered, still above the floor
    (1.0, 0.5, 0.5, True),    # down to the floor
    (1.0, 0.4, 0.5, False),   # below it
    (0.3, 0.2, 0.5, False),   # a level at or below the floor is never lowered
    (0.3, 0.4, 0.5, True),
    (0.3, 0.0, 0.0, True),    # floor 0: any level >= 0
    (0.3, -0.01, 0.0, False),
    (-0.2, -0.1, 0.5, True),
])
def test_survival_check_with_a_floor(before, after, floor, ok):
    names = ("a", "game_over")
    phi, lengths = np.array([[10.0, 1.0]]), [10]  # level = weight of "a"
    accepted, message = heldout.survival_check([before, -1.0], [after, 5.0], phi, lengths,
                                               names, floor)
    assert accepted is ok
    assert message.startswith("survival guard " + ("kept" if ok else "rejected"))
    assert f"{before:+.3f} -> {after:+.3f} (floor {floor:+.3f})" in message


def test_align_step_survival_guard_rejects_a_step_that_makes_living_cost():
    """The judge prefers windows whose (negative) feature 1 is closer to zero and whose
    feature 0 is smaller: the fitted step lowers the weight of feature 0 and raises that of
    feature 1, which makes the per-move reward negative; the guard keeps theta."""
    cfg = dataclasses.replace(PAPER, trajectories=4, alignment=dataclasses.replace(PAPER.alignment,
        method="bt_mcmc", mcmc_samples=300, mcmc_burn_in=100, update_workers=1,
        mcmc_trust_region=1.0))
    phi = np.zeros((1, 4, 8))
    phi[0, :, 0] = np.arange(4.0)[::-1] + 1
    phi[0, :, 1] = np.arange(4.0) - 10
    score = np.arange(4.0)
    ranking = Ranking(order=order_by_scores(score), scores=score.astype(np.float32))
    theta0 = np.asarray(SPEC.with_weights({"score_gain": 0.05}).start, np.float32)
    batch, lengths = _Batch(phi, np.full((1, 4), 10)), np.full(4, 10)
    moved, updates = align_step(theta0[None], batch, [ranking], SPEC, cfg, iteration=0)
    assert updates[0].accepted and not np.array_equal(moved[0], theta0)
    assert updates[0].outcome == "moved"
    assert heldout.survival_level(moved[0], phi[0], lengths, SPEC.names) < 0 \
        < heldout.survival_level(theta0, phi[0], lengths, SPEC.names)
    guarded = dataclasses.replace(cfg, alignment=dataclasses.replace(
        cfg.alignment, survival_guard=True))
    kept, updates = align_step(theta0[None], batch, [ranking], SPEC, guarded, iteration=0)
    np.testing.assert_array_equal(kept[0], theta0)
    assert updates[0].accepted is False and "survival guard rejected" in updates[0].message
    assert updates[0].outcome == "guard"
    # A floor reaches the guard from the config; living that costs stays refused at floor 0.
    floored = dataclasses.replace(guarded, alignment=dataclasses.replace(
        guarded.alignment, survival_floor=0.0))
    kept, updates = align_step(theta0[None], batch, [ranking], SPEC, floored, iteration=0)
    np.testing.assert_array_equal(kept[0], theta0)
    assert updates[0].accepted is False and "(floor +0.000)" in updates[0].message
