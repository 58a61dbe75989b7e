"""Warm-up updates before the first segment (`SailorConfig.warmup_updates`): the
records and theta history they leave, that they train nothing, and kill-and-resume."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from support import TINY, DiesAfter

from sailor_jax import logging
from sailor_jax.config import SailorConfig
from sailor_jax.judges.oracles import OutcomeRanker
from sailor_jax.run import loop, phases
from sailor_jax.run.results import LoopState, SailorResults
from sailor_lab import variants

WARM = dataclasses.replace(TINY, iterations=2, warmup_updates=2)


def test_warmup_updates_must_not_be_negative():
    with pytest.raises(ValueError, match="warmup_updates must be >= 0, got -1"):
        dataclasses.replace(TINY, warmup_updates=-1)
    assert SailorConfig().warmup_updates == 8  # the default since 2026-11-28


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("warmup")
    return (loop.run(WARM, str(root / "warm")),
            loop.run(dataclasses.replace(WARM, warmup_updates=0), str(root / "cold")), root)


def test_warmup_thetas_follow_theta0_and_their_records_are_kept(runs):
    warm, cold, root = runs
    assert len(warm.theta_history) == 1 + 2 + 2 and len(cold.theta_history) == 1 + 2
    assert [r.iteration for r in warm.warmup] == [-2, -1]
    assert [r.env_steps for r in warm.warmup] == [0, 0]
    assert [r.sps for r in warm.warmup] == [0.0, 0.0]
    for k, record in enumerate(warm.warmup):
        assert record.theta == warm.theta_history[1 + k]
        assert record.train_score == [None, None]
        assert len(record.seeds) == WARM.num_seeds
    np.testing.assert_array_equal(warm.theta_history[0], cold.theta_history[0])
    assert not np.array_equal(warm.theta_history[2], warm.theta_history[0])  # it moved theta
    assert [r.iteration for r in warm.iterations] == [0, 1]
    saved = json.loads((root / "warm" / "results.json").read_text())
    assert len(saved["warmup"]) == 2 and "warmup" not in json.loads(
        (root / "cold" / "results.json").read_text())
    loaded = SailorResults.load(str(root / "warm"))
    assert [r.theta for r in loaded.warmup] == [r.theta for r in warm.warmup]


def test_warmup_trains_nothing(runs):
    """The baseline rows train on theta0 in the same program: with or without a warm-up they
    end the same, so the warm-up took no PPO update and no training randomness."""
    warm, cold, _ = runs
    assert warm.baseline_evaluation["per_seed"] == cold.baseline_evaluation["per_seed"]
    assert warm.env_steps_per_seed == cold.env_steps_per_seed


@pytest.mark.parametrize("calls", [1, 3])
def test_a_run_killed_in_or_after_its_warmup_resumes_as_the_uninterrupted_one(
        runs, tmp_path, calls):
    """Killed in the second warm-up round (no checkpoint yet: the run starts again) or in
    iteration 1's judging (after segment 0's checkpoint, which holds the warm-up records)."""
    warm = runs[0]
    out = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt):
        loop.run(WARM, out, ranker=DiesAfter(calls))
    resumed = loop.run(WARM, out, resume=True)
    np.testing.assert_array_equal(np.asarray(resumed.theta_history),
                                  np.asarray(warm.theta_history))
    assert [r.theta for r in resumed.warmup] == [r.theta for r in warm.warmup]


def test_a_pipelined_run_warms_up_the_same_way(runs, tmp_path):
    """The pipelined hooks inherit the warm-up: the same warm-up thetas as the plain run (the
    pipeline only delays when the iterations' judged thetas start to train)."""
    warm = runs[0]
    piped = loop.run(dataclasses.replace(WARM, pipeline=True), str(tmp_path / "piped"))
    assert len(piped.warmup) == 2 and len(piped.theta_history) == 1 + 2 + 2
    assert [r.theta for r in piped.warmup] == [r.theta for r in warm.warmup]


def test_commit_builds_iteration_and_warmup_records_alike():
    """`phases.commit`, the one record builder: a warm-up round (env_steps 0) records SPS 0 and
    all its phases as host time; an iteration its SPS from the segment's seconds and, when
    pipelined, the judge's wait but not its (overlapped) rank and update; both add their host
    phases (never `train`, which the runner times) to the timings and their thetas to the
    history. Hand-computed against TINY (2 seeds, no baseline rows)."""
    cfg = dataclasses.replace(WARM, baseline=False)
    ctx = phases.Context(cfg, None, None, None, None, None, None, None)
    state = LoopState.start(np.zeros(8, np.float32), 2)
    thetas = np.ones((2, 8), np.float32)
    before = dict(state.timings)
    warm = phases.commit(ctx, state, -2, [None, None], {"train": 0.0, "collect": 1.0,
                         "rank": 2.0, "update": 0.5}, None, thetas, [], env_steps=0)
    assert (warm.iteration, warm.env_steps, warm.sps, warm.host_overhead_s) == (-2, 0, 0.0, 3.5)
    steps = cfg.ppo.steps_per_segment
    piped = phases.commit(ctx, state, 1, [3.0, 4.0], {"train": 2.0, "collect": 1.0, "rank": 2.0,
                          "update": 0.5, "judge_wait": 0.25}, None, thetas, [])
    assert (piped.env_steps, piped.host_overhead_s) == (2 * steps, 1.25)
    assert piped.sps == pytest.approx(2 * steps / 2.0)
    assert state.timings["train"] == before["train"]
    assert state.timings["collect"] == before["collect"] + 2.0
    assert state.timings["judge_wait"] == 0.25
    assert len(state.theta_history) == 1 + 2 and state.theta_history[-1] == thetas.tolist()


class _Tagged(OutcomeRanker):
    """An outcome judge with a `log_context`, as the LLM judge has: records the tag of each
    call."""

    def __init__(self):
        self.log_context, self.tags = None, []

    def rank_groups(self, groups):
        self.tags.append(self.log_context["iteration"])
        return super().rank_groups(groups)


def test_warmup_log_records_are_tagged_below_every_iteration_and_survive_a_resume(tmp_path):
    """The judge's log records of warm-up round k carry iteration k - K (not its sampling
    key), so a resume, which drops the records of the iterations it judges again, keeps them."""
    ranker = _Tagged()
    loop.run(WARM, str(tmp_path / "run"), ranker=ranker)
    assert ranker.tags == [-2, -1, 0, 1]
    log = tmp_path / "llm.jsonl"
    log.write_text("".join(json.dumps({"iteration": t}) + "\n" for t in ranker.tags))
    logging.rewind_logs(str(tmp_path), segment=1, iteration=1)
    assert [json.loads(line)["iteration"] for line in log.read_text().splitlines()] == [-2, -1, 0]


def test_theta_rows_number_the_warmup_below_0(runs):
    """`variants.theta_rows` (theta_trajectories.csv): iteration t is the theta segment t
    trains on, so the warm-up's rows come before 0 and the final theta is the last iteration."""
    warm, cold, _ = runs
    assert [r["iteration"] for r in variants.theta_rows("w", warm) if r["seed"] == 0] == [
        -2, -1, 0, 1, 2]
    assert [r["iteration"] for r in variants.theta_rows("c", cold) if r["seed"] == 0] == [
        0, 1, 2]
