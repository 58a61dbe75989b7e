"""End-to-end tests of the SAILOR loop: tiny LLM judge, results.json contract, resume."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from support import TINY, DiesAfter

from sailor_jax.config import LLMRankerConfig, RankerConfig
from sailor_jax.judges import OutcomeRanker
from sailor_jax.run import loop

RESULT_KEYS = {"config", "ranker", "theta_history", "feature_names", "preferences",
               "evaluation", "baseline_evaluation", "timings"}
EVAL_KEYS = {"score_mean", "score_std", "max_tile_rates", "win_rate", "episodes"}


def test_config_validation():
    with pytest.raises(ValueError, match="trajectories"):
        dataclasses.replace(TINY, trajectories=1)
    with pytest.raises(ValueError, match="iterations"):
        dataclasses.replace(TINY, iterations=0)
    with pytest.raises(ValueError, match="theta_star"):
        RankerConfig(kind="linear_oracle")
    with pytest.raises(ValueError, match="game_over"):
        dataclasses.replace(TINY, start=(0.0,) * 7 + (float("nan"),))
    with pytest.raises(ValueError, match="unknown feature"):
        dataclasses.replace(TINY, tunable=("score_gain", "not_a_feature"))


def test_run_with_tiny_llm_writes_results(tmp_path, tiny_llm_dir):
    cfg = dataclasses.replace(
        TINY, tunable=("empty_cells", "monotonicity", "smoothness"),
        ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(
            model=tiny_llm_dir, batch_size=4, max_prompt_tokens=1024, device="cpu")))
    out = str(tmp_path / "run")
    results = loop.run(cfg, out)
    with open(os.path.join(out, "results.json")) as f:
        on_disk = json.load(f)
    assert RESULT_KEYS <= set(on_disk)
    assert EVAL_KEYS <= set(on_disk["evaluation"]) and EVAL_KEYS <= set(
        on_disk["baseline_evaluation"])
    history = np.asarray(results.theta_history)
    assert history.shape == (cfg.iterations + 1, cfg.num_seeds, 8)
    fixed = [k for k, n in enumerate(results.feature_names) if n not in cfg.tunable]
    fixed_history = history[:, :, fixed]
    np.testing.assert_array_equal(fixed_history,
                                  np.broadcast_to(fixed_history[:1], fixed_history.shape))
    assert len(on_disk["preferences"]) == cfg.iterations
    with open(os.path.join(out, "llm.jsonl")) as f:
        llm_records = [json.loads(line) for line in f]
    assert llm_records, "every LLM call must be logged"
    assert sorted({r["iteration"] for r in llm_records}) == [0, 1]  # resume truncates by it
    metrics = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    assert any("sailor/alignment" in m for m in metrics)
    for phase in loop.PHASES:
        assert on_disk["timings"][phase] >= 0


def test_resume_matches_uninterrupted_run(tmp_path):
    cfg = dataclasses.replace(TINY, iterations=3)
    full = loop.run(cfg, str(tmp_path / "full"))
    out = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt):
        loop.run(cfg, out, ranker=DiesAfter(1))
    with pytest.raises(ValueError, match="already holds a run"):
        loop.run(cfg, out)
    with pytest.raises(ValueError, match="config differs"):
        loop.run(dataclasses.replace(cfg, seed=1), out, resume=True)
    resumed = loop.run(cfg, out, resume=True)
    np.testing.assert_array_equal(np.asarray(resumed.theta_history),
                                  np.asarray(full.theta_history))
    assert resumed.preferences == full.preferences
    assert resumed.evaluation["score_mean"] == full.evaluation["score_mean"]


def test_judge_failure_leaves_theta_unchanged(tmp_path):
    class Fails(OutcomeRanker):
        def rank_groups(self, groups):
            return [None] * len(groups)

    results = loop.run(dataclasses.replace(TINY, iterations=1, baseline=False),
                       str(tmp_path / "r"), ranker=Fails())
    history = np.asarray(results.theta_history)
    np.testing.assert_array_equal(history[1], history[0])
    assert results.baseline_evaluation is None
    assert all(s.judge_failed for s in results.iterations[0].seeds)


def test_windowed_judging_hands_the_judge_fixed_length_windows(tmp_path):
    """`window` ranks W-move windows of the sampled games, not whole games."""
    seen = []

    class Recording(OutcomeRanker):
        def rank_groups(self, groups):
            seen.extend(groups)
            return super().rank_groups(groups)

    cfg = dataclasses.replace(TINY, iterations=1, baseline=False, window=10)
    results = loop.run(cfg, str(tmp_path / "w"), ranker=Recording())
    assert len(seen) == 2 and results.config["window"] == 10
    for group in seen:
        assert np.asarray(group.boards).shape == (4, 11, 16)
        assert np.all(np.asarray(group.lengths) <= 10)
    with pytest.raises(ValueError, match=r"window must be in \[0, max_len=60\]"):
        dataclasses.replace(TINY, window=61)
