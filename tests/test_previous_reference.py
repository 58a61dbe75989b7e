"""Issue 49, item 3: groups whose reference games are played by the agent as it was before the
iteration's segment (`reference_policy="previous"`, PBRR's reference policy)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from test_fault_injection import assert_resume_after_update_kill
from test_mixed_groups import MIXED

from sailor_jax.agents import ppo
from sailor_jax.agents.rollout import make_collect
from sailor_jax.config import PAPER
from sailor_jax.run import hooks, loop, phases, runner
from sailor_jax.run.results import LoopState

PREVIOUS = dataclasses.replace(MIXED, reference_policy="previous")


def test_reference_games_are_played_by_the_reference_network():
    init = ppo.make_train(PREVIOUS.run_ppo)[0]
    agent = init(jax.random.PRNGKey(0)).params
    # scaled up: a freshly initialised actor is near uniform, whatever its weights
    before = jax.tree.map(lambda x: 30.0 * x, init(jax.random.PRNGKey(1)).params)
    key = jax.random.key(3)
    batch = jax.device_get(loop._collector(PREVIOUS)(agent, before, key))
    collect = make_collect(PREVIOUS.ppo.network, 2, PREVIOUS.max_len)
    mine = jax.device_get(collect(agent, key))
    theirs = jax.device_get(collect(before, jax.random.fold_in(key, 2)))
    for field in ("boards", "actions", "score", "Phi"):
        np.testing.assert_array_equal(getattr(batch, field)[:2], getattr(mine, field))
        np.testing.assert_array_equal(getattr(batch, field)[2:], getattr(theirs, field))
    same = jax.device_get(loop._collector(PREVIOUS)(agent, agent, key))
    assert not np.array_equal(same.actions[2:], batch.actions[2:])  # the network matters


def test_hooks_keep_the_agent_from_before_the_segment_though_the_segment_donates_it():
    cfg = dataclasses.replace(PREVIOUS, num_seeds=2)
    init, segment = ppo.make_train(cfg.run_ppo, num_seeds=cfg.num_seeds)
    state = init(jax.random.PRNGKey(0))
    expected = jax.device_get(runner.rows(state.params, 0, cfg.num_seeds))
    ctx = phases.Context(cfg, None, None, None, None, None, None, None)
    sailor = hooks.SailorHooks(ctx, LoopState.start(np.zeros(8, np.float32), 2))
    sailor.before_segment(0, state)
    after, _ = segment(state, np.zeros((2, 8), np.float32))
    kept = jax.device_get(sailor.reference_params)
    jax.tree.map(np.testing.assert_array_equal, kept, expected)
    changed = jax.tree.map(lambda a, b: not np.array_equal(a, b), kept,
                           jax.device_get(after.params))
    assert any(jax.tree.leaves(changed))  # the segment trained: the kept copy is the old agent
    expert = hooks.SailorHooks(dataclasses.replace(ctx, cfg=MIXED), sailor.state)
    expert.before_segment(0, after)
    assert expert.reference_params is None  # the expert reference keeps nothing


@pytest.mark.parametrize("kwargs, match", [
    (dict(reference_policy="best"), "reference_policy must be one of expert, previous"),
    (dict(reference_policy="previous", reference_games=0), "needs reference_games > 0"),
    (dict(reference_policy="previous", pipeline=True), "and no pipeline"),
])
def test_bad_reference_policy(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(PAPER, **{"trajectories": 4, "reference_games": 2, **kwargs})


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("previous") / "run")
    return out, loop.run(PREVIOUS, out)


def test_kill_then_resume_with_the_previous_agent_as_reference_equals_uninterrupted(
        reference, tmp_path, monkeypatch):
    assert_resume_after_update_kill(PREVIOUS, str(tmp_path / "run"), reference, monkeypatch, 2,
                                    frozenset({"metrics.jsonl"}))
