"""Candidate selection (`sailor_lab.selection`): the judged group, the winner, and the runs.

The incumbent row trains exactly as an agent alone would (same network, keys and games as the
fixed-reward run of the same seed) while the judge keeps it; a winner's theta becomes the
incumbent; a killed run resumes to the uninterrupted run's thetas and scores."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_loop import TINY

from sailor_jax.config.arms import arm_config
from sailor_jax.judges import OutcomeRanker
from sailor_jax.run import loop
from sailor_jax.types import Ranking, TrajectoryBatch
from sailor_lab import selection

CFG = dataclasses.replace(TINY, iterations=3, baseline=False, trajectories=6,
                          reference_games=2, candidates=2)


class Prefers(OutcomeRanker):
    """Ranks a group's items in index order (`first`: candidate 0's games first) or in
    reverse; counts its calls."""

    def __init__(self, first: bool = True):
        self.first, self.calls = first, 0

    def rank_groups(self, groups):
        self.calls += 1
        out = []
        for g in groups:
            order = np.arange(len(g.lengths))
            out.append(Ranking(order=order if self.first else order[::-1]))
        return out


def _batch(rows: int, m: int) -> TrajectoryBatch:
    ids = np.arange(rows * m, dtype=np.float32).reshape(rows, m)
    return TrajectoryBatch(boards=np.zeros((rows, m, 3, 16), np.int8),
                           actions=np.zeros((rows, m, 2), np.int8),
                           score_gains=np.zeros((rows, m, 2), np.float32),
                           lengths=np.full((rows, m), 2, np.int32),
                           truncated=np.zeros((rows, m), bool), score=ids,
                           max_tile=np.zeros((rows, m), np.int32),
                           Phi=np.repeat(ids[..., None], 8, -1))


def test_merge_groups_puts_each_candidates_games_then_the_reference():
    s, k, m, ref = 3, 2, 5, 2  # rows candidate-major: row k * S + s
    group = selection.merge_groups(_batch(k * s, m), s, k, ref)
    assert group.score.shape == (s, k * (m - ref) + ref) and group.Phi.shape[:2] == (s, 8)
    for seed in range(s):
        own = [(c * s + seed) * m + i for c in range(k) for i in range(m - ref)]
        reference = [seed * m + i for i in range(m - ref, m)]
        assert group.score[seed].tolist() == own + reference


def test_the_winner_is_the_candidate_ranked_best_on_average():
    best_second = Ranking(order=np.array([2, 3, 0, 4, 1]))  # candidate 1: items 2, 3
    tie = Ranking(order=np.array([0, 2, 1, 3, 4]))  # positions 0+2 against 1+3: candidate 0
    level = Ranking(order=np.array([0, 3, 2, 1, 4]))  # 0+3 against 2+1: level, the incumbent
    winners = selection.select_winners([best_second, tie, level, None], 2, 2)
    assert winners.tolist() == [1, 0, 0, 0]


def test_the_incumbent_kept_trains_as_an_agent_alone(tmp_path):
    frozen = arm_config("select_frozen", CFG)
    assert frozen.candidates == 2 and frozen.tunable == ()
    kept = selection.run(frozen, str(tmp_path / "kept"), ranker=Prefers(first=True))
    alone = loop.run(dataclasses.replace(CFG, candidates=1, self_align=False),
                     str(tmp_path / "alone"))
    assert kept.evaluation["score_mean"] == alone.evaluation["score_mean"]
    assert [s["score_mean"] for s in kept.evaluation["per_seed"]] == \
        [s["score_mean"] for s in alone.evaluation["per_seed"]]
    assert np.all(np.asarray(kept.theta_history) == np.asarray(alone.theta_history)[0])


def test_a_winning_proposal_becomes_the_incumbent_and_a_killed_run_resumes(tmp_path):
    cfg = CFG
    full = selection.run(cfg, str(tmp_path / "full"), ranker=Prefers(first=False))
    history = np.asarray(full.theta_history)
    assert history.shape == (4, 2, 8)
    assert all("winner candidate 1" in u.message for r in full.iterations for u in r.seeds)
    assert not np.all(history[-1] == history[0])  # the proposals it kept moved theta

    class DiesAfter(Prefers):
        def rank_groups(self, groups):
            if self.calls == 1:
                raise KeyboardInterrupt
            return super().rank_groups(groups)

    out = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt):
        selection.run(cfg, out, ranker=DiesAfter(first=False))
    resumed = selection.run(cfg, out, resume=True, ranker=Prefers(first=False))
    np.testing.assert_array_equal(np.asarray(resumed.theta_history), history)
    assert resumed.evaluation["score_mean"] == full.evaluation["score_mean"]


def test_the_package_loop_refuses_candidates(tmp_path):
    with pytest.raises(ValueError, match="sailor_lab.selection"):
        loop.run(CFG, str(tmp_path / "r"))
