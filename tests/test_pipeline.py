"""Tests for `sailor_jax.run.pipeline`: stale-theta pipelining of the judge beside training."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from support import TINY

from sailor_jax.judges import OutcomeRanker
from sailor_jax.run import loop, pipeline

PIPELINED = dataclasses.replace(TINY, iterations=3, pipeline=True)


class _DiesOnSecondCall(OutcomeRanker):
    """The outcome judge, killed (KeyboardInterrupt) in its second call: in the worker, while
    segment 2 trains; the kill surfaces when the main thread waits for it."""

    def __init__(self):
        self.calls = 0

    def rank_groups(self, groups):
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt("simulated kill")
        return super().rank_groups(groups)


def test_pipelined_run_is_deterministic_and_trains_on_stale_thetas(tmp_path, monkeypatch):
    trained_on = []
    original = pipeline.PipelinedHooks.thetas

    def spy(self):
        thetas = original(self)
        trained_on.append(np.array(thetas))
        return thetas

    monkeypatch.setattr(pipeline.PipelinedHooks, "thetas", spy)
    a = loop.run(PIPELINED, str(tmp_path / "a"))
    b = loop.run(PIPELINED, str(tmp_path / "b"))
    history = np.asarray(a.theta_history)
    np.testing.assert_array_equal(history, np.asarray(b.theta_history))
    assert a.evaluation["score_mean"] == b.evaluation["score_mean"]
    assert history.shape == (4, TINY.num_seeds, 8)  # T + 1 entries: the last judgement too
    assert np.abs(history[2] - history[0]).max() > 0  # theta moved: the lag is observable
    s = TINY.num_seeds
    # Calls: the row count, compile, then segments 0, 1, 2 of run a (then run b's). Segments
    # 0 and 1 train on theta0; segment 2 on the theta judged after segment 0 (history[1]).
    assert len(trained_on) == 2 * (2 + 3)
    segments = [t[:s] for t in trained_on[2:5]]
    np.testing.assert_array_equal(segments[0], history[0])
    np.testing.assert_array_equal(segments[1], history[0])
    np.testing.assert_array_equal(segments[2], history[1])
    for row in trained_on[2:5]:  # the baseline rows stay at theta0
        np.testing.assert_array_equal(row[s:], history[0])
    assert len(a.iterations) == 3 and a.timings["judge_wait"] >= 0
    assert [r.iteration for r in a.iterations] == [0, 1, 2]
    records = [json.loads(line) for line in open(tmp_path / "a" / "metrics.jsonl")]
    assert sorted(r["iteration"] for r in records if "iteration" in r) == [0, 1, 2]


def test_one_iteration_judges_as_without_pipelining(tmp_path):
    """With one segment nothing is stale: the pipelined judgement equals the plain one."""
    plain = dataclasses.replace(TINY, iterations=1)
    a = loop.run(plain, str(tmp_path / "plain"))
    b = loop.run(dataclasses.replace(plain, pipeline=True), str(tmp_path / "pipelined"))
    np.testing.assert_array_equal(np.asarray(a.theta_history), np.asarray(b.theta_history))
    assert a.preferences == b.preferences


def test_kill_while_judging_then_resume_matches_uninterrupted(tmp_path):
    full = loop.run(PIPELINED, str(tmp_path / "full"))
    out = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt):
        loop.run(PIPELINED, out, ranker=_DiesOnSecondCall())
    steps = sorted(int(d) for d in os.listdir(os.path.join(out, "checkpoints")) if d.isdigit())
    assert steps == [1, 2]  # judge(1) was in flight at checkpoint 2
    resumed = loop.run(PIPELINED, out, resume=True)
    np.testing.assert_array_equal(np.asarray(resumed.theta_history),
                                  np.asarray(full.theta_history))
    assert resumed.preferences == full.preferences
    assert resumed.evaluation["score_mean"] == full.evaluation["score_mean"]


def test_periodic_evaluation_is_the_same_plain_and_pipelined(tmp_path):
    # eval_every=1 over 3 segments: segments 0 and 1 are evaluated, the last is left to the
    # final evaluation. Both hook kinds train segment 0 on theta0 (after it the plain run
    # trains on judge 0's theta, the pipelined one on theta0 again), so their agents, and
    # evaluations, after segment 0 agree.
    cfg = dataclasses.replace(PIPELINED, eval_every=1)
    piped = loop.run(cfg, str(tmp_path / "piped"))
    plain = loop.run(dataclasses.replace(cfg, pipeline=False), str(tmp_path / "plain"))
    for run in (piped, plain):
        assert [r.evaluation is not None for r in run.iterations] == [True, True, False]
        assert run.timings["eval"] > 0
    assert piped.iterations[0].evaluation == plain.iterations[0].evaluation
    assert set(piped.iterations[0].evaluation) >= {"score_mean", "episodes"}
