"""Tests for `sailor_jax.run.theta_update`: per-seed updates, judge failures, stall counters."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

from sailor_jax.config import PAPER
from sailor_jax.game.reward import RewardSpec
from sailor_jax.run.results import LoopState
from sailor_jax.run.theta_update import align_step, segment_scores, update_stall
from sailor_jax.types import Ranking

SPEC = RewardSpec()
CFG = dataclasses.replace(PAPER, alignment=dataclasses.replace(
    PAPER.alignment, bo_calls=6, bo_initial_points=3))


class _Batch:
    """A host batch with only what `align_step` reads: `Phi [S, M, F]`, `lengths [S, M]`."""

    def __init__(self, phi):
        self.Phi, self.lengths = phi, np.full(phi.shape[:2], 10)


def test_align_step_updates_disagreeing_seeds_and_skips_failed_judges():
    rng = np.random.default_rng(0)
    phi = rng.normal(size=(2, 6, 8))
    thetas = np.tile(np.asarray(SPEC.start, np.float32), (2, 1))
    judge = Ranking(order=np.argsort(-phi[0, :, 1]))  # the judge likes empty cells only
    new, updates = align_step(thetas, _Batch(phi), [judge, None], SPEC, CFG, iteration=0)
    assert new.shape == (2, 8) and new.dtype == np.float32
    pairs = 6 * 5 // 2  # as many concordant pairs as discordant ones, where there are enough
    d = updates[0].num_discordant
    assert d > 0 and updates[0].num_concordant == min(d, pairs - d)
    assert updates[0].kendall_tau_after >= updates[0].kendall_tau_before
    assert updates[1].judge_failed and updates[1].kendall_tau_before is None
    assert updates[1].outcome == "no judge" and updates[0].outcome in ("moved", "no gain")
    assert (updates[0].outcome == "moved") == updates[0].accepted
    np.testing.assert_array_equal(new[1], thetas[1])  # a failed judge leaves theta alone
    assert np.all(new[0] >= SPEC.lower) and np.all(new[0] <= SPEC.upper)
    again, _ = align_step(thetas, _Batch(phi), [judge, None], SPEC, CFG, iteration=0)
    np.testing.assert_array_equal(again, new)  # host generators seeded by (seed, t, s)


def test_a_judge_that_agrees_with_theta_gains_nothing():
    """Ranked as `R_theta` ranks them, the windows give no discordant pair: theta stays and the
    update's outcome is "no gain"."""
    phi = np.random.default_rng(1).normal(size=(1, 6, 8))
    thetas = np.asarray(SPEC.start, np.float32)[None]
    agrees = Ranking(order=np.argsort(-(phi[0] @ thetas[0])))
    new, updates = align_step(thetas, _Batch(phi), [agrees], SPEC, CFG, iteration=0)
    assert updates[0].num_discordant == 0 and updates[0].outcome == "no gain"
    assert updates[0].accepted is False
    np.testing.assert_array_equal(new, thetas)


def test_segment_scores_and_stall_counters():
    nan = float("nan")
    metrics = SimpleNamespace(episode_score=np.asarray([[nan, 10.0], [nan, nan], [5.0, 7.0]]))
    assert segment_scores(metrics, 2) == [10.0, None]  # row 2 is a baseline row
    state = LoopState.start(np.asarray(SPEC.start, np.float32), 2)
    update_stall(state, [10.0, None], min_improvement=1.0)
    assert state.best_score == [10.0, None] and state.stall == [0, 0]
    update_stall(state, [10.5, 3.0], min_improvement=1.0)  # +0.5 is no improvement
    assert state.best_score == [10.0, 3.0] and state.stall == [1, 0]
    update_stall(state, [12.0, None], min_improvement=1.0)
    assert state.best_score == [12.0, 3.0] and state.stall == [0, 1]
