"""Groups that mix the agent's games with a reference policy's (the
epsilon-greedy expert): cross-policy pairs, held-out acceptance in the loop, kill + resume."""

from __future__ import annotations

import dataclasses
import types

import jax
import numpy as np
import pytest
from support import TINY, assert_resume_after_update_kill

from sailor_jax.agents import ppo
from sailor_jax.agents.rollout import make_act_collect
from sailor_jax.alignment.preferences import build_preferences
from sailor_jax.config import PAPER, PreferenceConfig
from sailor_jax.game.expert import expert_act
from sailor_jax.judges.oracles import OutcomeRanker
from sailor_jax.run import loop, phases

MIXED = dataclasses.replace(
    TINY, iterations=3, baseline=False, reference_games=2,
    alignment=dataclasses.replace(
        PAPER.alignment, method="bt_mcmc", mcmc_samples=200, mcmc_burn_in=50,
                              mcmc_trust_region=1.0, heldout=0.5, update_workers=1))
"""Groups of 2 agent and 2 reference games, half held out: the box of +-1 lets the one fitted
pair flip, so the held-out test runs on an accepted fit."""


def test_mixed_group_holds_the_reference_games_and_gives_cross_policy_pairs():
    key = jax.random.key(3)
    runner = ppo.make_train(MIXED.run_ppo)[0](jax.random.PRNGKey(0))
    batch = jax.device_get(loop._collector(*loop.collector_fields(MIXED))(runner.params, key))
    assert batch.Phi.shape == (4, 8) and batch.boards.shape == (4, MIXED.max_len + 1, 16)
    expert = jax.device_get(make_act_collect(expert_act(1, 0.5), 2, MIXED.max_len)(
        jax.random.fold_in(key, 2)))
    for field in ("boards", "actions", "score", "Phi"):
        np.testing.assert_array_equal(getattr(batch, field)[2:], getattr(expert, field))
    ranking = OutcomeRanker().rank(batch)
    prefs = build_preferences(batch.Phi @ np.eye(8)[5], ranking, 0,
                              PreferenceConfig(concordant_ratio=10.0))
    agent = np.arange(4) < 2
    assert len(prefs) > 0 and np.any(agent[prefs.i] != agent[prefs.j])


def test_windows_are_cut_from_both_policies():
    cfg = dataclasses.replace(MIXED, window=10)
    runner = ppo.make_train(cfg.run_ppo)[0](jax.random.PRNGKey(0))
    collect = jax.jit(loop._collector(*loop.collector_fields(cfg)))  # as the loop runs it
    batch = jax.device_get(collect(runner.params, jax.random.key(1)))
    assert batch.boards.shape == (4, 11, 16) and np.all(batch.lengths <= 10)


@pytest.mark.parametrize("kwargs, match", [
    (dict(reference_games=4), "reference_games must be in"),
    (dict(reference_games=-1), "reference_games must be in"),
])
def test_bad_reference_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(PAPER, trajectories=4, **kwargs)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("mixed") / "run")
    return out, loop.run(MIXED, out)


def test_heldout_messages_reach_the_results(reference):
    _, ref = reference
    messages = [u.message for r in ref.iterations for u in r.seeds]
    assert any("held-out" in m for m in messages)  # the test ran on an accepted fit


@pytest.mark.parametrize("t", [1, 2])
def test_kill_then_resume_with_mixed_groups_equals_uninterrupted(t, reference, tmp_path,
                                                                monkeypatch):
    assert_resume_after_update_kill(MIXED, str(tmp_path / "run"), reference, monkeypatch, t,
                                    frozenset({"metrics.jsonl"}))  # the outcome judge logs none


def test_ended_counts_split_the_agents_windows_from_the_reference_policys():
    phi = np.zeros((2, 5, 8), np.float32)  # 2 seeds, 5 trajectories, the last 2 reference
    phi[0, [0, 3, 4], 7] = 1.0  # seed 0: one agent window and both reference ones end
    phi[1, [1, 2], 7] = 1.0  # seed 1: two agent windows end
    phi[1, 0, 6] = 1.0  # another feature firing is not an end
    batch = types.SimpleNamespace(Phi=phi)
    assert phases.ended_counts(batch, 2) == {"agent": [1, 2], "reference": [2, 0]}
    assert phases.ended_counts(batch, 0) == {"agent": [3, 2], "reference": [0, 0]}
    assert phases.ended_counts(None, 2) is None


def test_results_count_the_judged_windows_that_end(reference):
    _, ref = reference
    for record in ref.iterations:
        ended = record.sampled_ended
        assert len(ended["agent"]) == MIXED.num_seeds == len(ended["reference"])
        assert all(0 <= n <= 2 for n in ended["agent"] + ended["reference"])
    assert ref.to_json()["iterations"][0]["sampled_ended"] == ref.iterations[0].sampled_ended
