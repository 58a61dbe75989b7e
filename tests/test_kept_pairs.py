"""Preference pairs kept across iterations (issue 24, item 4): the update sees them with their
weights, the loop state carries them through JSON, and kill + `--resume` stays exact."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_fault_injection import assert_resume_after_update_kill
from test_loop import TINY

from sailor_jax.alignment import kept_pairs
from sailor_jax.config import PAPER, AlignmentConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.run import loop, theta_update
from sailor_jax.run.results import LoopState
from sailor_jax.types import Preferences, Ranking

SPEC = RewardSpec()


def _prefs(i, j, w):
    return Preferences(i=np.asarray(i, np.int32), j=np.asarray(j, np.int32),
                       w=np.asarray(w, np.float32), discordant=np.ones(len(i), bool))


def test_merge_appends_live_entries_with_decayed_weights():
    rng = np.random.default_rng(0)
    phi0, phi1, phi2 = (rng.normal(size=(4, 8)).astype(np.float32) for _ in range(3))
    kept = kept_pairs.push([], phi0, _prefs([3], [1], [1.0]), 0, keep_iterations=2)
    kept = kept_pairs.push(kept, phi1, _prefs([0, 2], [2, 1], [1.0, 0.5]), 1, 2)
    assert [e["iteration"] for e in kept] == [0, 1]
    assert kept[0]["Phi"] == phi0[[1, 3]].astype(np.float64).tolist()  # only the rows used
    now = _prefs([0], [1], [1.0])
    phi, prefs, count = kept_pairs.merge(phi2, now, kept, 2, keep_iterations=2, decay=0.5)
    assert count == 3 and len(prefs) == 4 and phi.shape == (4 + 2 + 3, 8)
    np.testing.assert_array_equal(prefs.w, [1.0, 0.25, 0.5, 0.25])  # ages 2, 1, 1
    np.testing.assert_array_equal(prefs.discordant, [True, False, False, False])
    # the kept pairs point at the same feature sums as when they were judged
    np.testing.assert_array_equal(phi[prefs.i[1]] - phi[prefs.j[1]],
                                  phi0[3].astype(float) - phi0[1])
    np.testing.assert_array_equal(phi[prefs.i[3]] - phi[prefs.j[3]],
                                  phi1[2].astype(float) - phi1[1])
    # with keep_iterations = 1 the entry of iteration 0 is too old at iteration 2
    _, prefs, count = kept_pairs.merge(phi2, now, kept, 2, keep_iterations=1)
    assert count == 2 and len(prefs) == 3
    assert [e["iteration"] for e in kept_pairs.push(kept, phi2, now, 2, 1)] == [2]
    assert [e["iteration"] for e in kept_pairs.push(kept, phi2, now, 2, 2)] == [1, 2]


def test_align_step_update_sees_the_kept_pairs(monkeypatch):
    calls = []
    original = theta_update.update_many

    def spy(batch_calls, workers=0):
        calls.append(batch_calls)
        return original(batch_calls, workers)

    monkeypatch.setattr(theta_update, "update_many", spy)
    cfg = dataclasses.replace(PAPER, alignment=AlignmentConfig(method="bt_mcmc", mcmc_samples=100,
                                                 mcmc_burn_in=10, keep_iterations=1,
                                                 keep_decay=0.5, update_workers=1))
    rng = np.random.default_rng(1)
    batches = [rng.normal(size=(1, 6, 8)) for _ in range(2)]
    thetas = np.tile(np.asarray(SPEC.theta0, np.float32), (1, 1))
    kept = [[]]
    for t, phi in enumerate(batches):
        judge = Ranking(order=np.argsort(-phi[0, :, 1]))  # the judge likes empty cells only
        batch = type("B", (), {"Phi": phi, "lengths": np.full((1, 6), 10)})
        thetas, updates = theta_update.align_step(thetas, batch, [judge], SPEC, cfg, t,
                                                  kept=kept)
    first, second = calls[0][0], calls[1][0]
    fresh = updates[0].num_discordant + updates[0].num_concordant
    assert updates[0].num_kept == len(first[2]) > 0  # all of iteration 0's pairs
    assert len(second[2]) == fresh + len(first[2])
    np.testing.assert_array_equal(second[2].w[fresh:], 0.5 * np.asarray(first[2].w))
    old = second[1][second[2].i[fresh:]] - second[1][second[2].j[fresh:]]
    np.testing.assert_array_equal(old, first[1][first[2].i] - first[1][first[2].j])
    assert [e["iteration"] for e in kept[0]] == [1]


def test_loop_state_json_round_trip_keeps_pairs_bit_for_bit():
    state = LoopState.start(np.asarray(SPEC.theta0, np.float32), 2)
    phi = np.random.default_rng(2).normal(size=(5, 8)).astype(np.float32)
    state.kept_pairs[1] = kept_pairs.push([], phi, _prefs([4, 0], [1, 2], [0.3, 1.0]), 0, 3)
    back = LoopState.from_json(json.loads(json.dumps(state.to_json())))
    assert back.kept_pairs == state.kept_pairs and back.kept_pairs[0] == []
    np.testing.assert_array_equal(np.asarray(back.kept_pairs[1][0]["Phi"]),
                                  phi[[0, 1, 2, 4]].astype(np.float64))
    old = LoopState.from_json({k: v for k, v in state.to_json().items() if k != "kept_pairs"})
    assert old.kept_pairs == []  # a checkpoint from before kept pairs still loads


KEPT = dataclasses.replace(
    TINY, iterations=3, baseline=False,
    alignment=AlignmentConfig(method="bt_mcmc", mcmc_samples=200, mcmc_burn_in=50,
                              mcmc_chains=2, keep_iterations=2, keep_decay=0.7,
                              update_workers=1))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("kept") / "run")
    return out, loop.run(KEPT, out)


def test_kept_pairs_change_the_update(reference, tmp_path):
    _, ref = reference
    assert any((u.num_kept or 0) > 0 for r in ref.iterations[1:] for u in r.seeds)
    plain = loop.run(dataclasses.replace(KEPT, alignment=dataclasses.replace(
        KEPT.alignment, keep_iterations=0)), str(tmp_path / "plain"))
    assert not np.array_equal(np.asarray(plain.theta_history), np.asarray(ref.theta_history))


@pytest.mark.parametrize("t", [1, 2])
def test_kill_then_resume_with_kept_pairs_equals_uninterrupted(t, reference, tmp_path,
                                                              monkeypatch):
    assert_resume_after_update_kill(KEPT, str(tmp_path / "run"), reference, monkeypatch, t,
                                    frozenset({"metrics.jsonl"}))  # the outcome judge logs none
