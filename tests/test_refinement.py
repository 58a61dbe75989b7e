"""LLM-guided reward refinement: parsing, one-sided search box, update, loop integration."""

from __future__ import annotations

import dataclasses
import json
import os
import re

import numpy as np
import pytest
from scripted import ScriptedAdvisor, ScriptedRanker

from sailor_jax.alignment import refinement
from sailor_jax.alignment.refinement import Suggestion
from sailor_jax.alignment.updates import pair_error
from sailor_jax.config import (
    PAPER,
    EvalConfig,
    NetworkConfig,
    PPOConfig,
    RankerConfig,
    RefineConfig,
)
from sailor_jax.game.reward import THETA0, RewardSpec
from sailor_jax.judges import hf_backend
from sailor_jax.judges.llm import LLMRanker, LLMRankerConfig
from sailor_jax.run import loop
from sailor_jax.types import Ranking

SPEC = RewardSpec()
NAMES = list(SPEC.names)


def test_one_sided_box_raise_lower_and_bounds():
    cfg = RefineConfig(min_step=0.05, max_step=0.3)
    theta = np.asarray(SPEC.start, np.float64)
    k = NAMES.index("empty_cells")
    lo, hi = refinement.one_sided_box(theta, Suggestion("empty_cells", k, 1), SPEC, cfg)
    assert (lo[k], hi[k]) == pytest.approx((theta[k] + 0.05, theta[k] + 0.3))
    others = np.arange(8) != k
    np.testing.assert_array_equal(lo[others], theta[others])
    np.testing.assert_array_equal(hi[others], theta[others])
    lo, hi = refinement.one_sided_box(theta, Suggestion("empty_cells", k, -1), SPEC, cfg)
    assert (lo[k], hi[k]) == pytest.approx((theta[k] - 0.3, theta[k] - 0.05))
    # Within min_step of the upper bound: empty interval (lower > upper).
    theta[k] = SPEC.upper[k] - 0.01
    lo, hi = refinement.one_sided_box(theta, Suggestion("empty_cells", k, 1), SPEC, cfg)
    assert lo[k] > hi[k]
    theta[k] = SPEC.lower[k] + 0.2  # lowering is clipped at the bound
    lo, hi = refinement.one_sided_box(theta, Suggestion("empty_cells", k, -1), SPEC, cfg)
    assert lo[k] == SPEC.lower[k] and hi[k] == pytest.approx(theta[k] - 0.05)


def _agreeing_problem(seed=0, m=6):
    rng = np.random.default_rng(seed)
    Phi = rng.normal(size=(m, 8)) * 10
    theta = np.asarray(SPEC.start, np.float32)
    order = np.argsort(-(Phi @ theta))  # the judge agrees with R_theta
    return theta, Phi, Ranking(order=order.astype(np.int32))


def test_refine_theta_moves_only_the_suggested_weight_into_its_interval():
    theta, Phi, ranking = _agreeing_problem()
    Phi[:, NAMES.index("smoothness")] = 0.0  # smoothness cannot change any order
    cfg, k = RefineConfig(min_step=0.05, max_step=0.2), NAMES.index("smoothness")
    align = dataclasses.replace(PAPER.alignment, bo_calls=8, bo_initial_points=4)
    result = refinement.refine_theta(theta, Phi, ranking, Suggestion("smoothness", k, -1),
                                     SPEC, align, cfg, rng=0)
    assert result.accepted, result.message
    assert theta[k] - 0.2 - 1e-6 <= result.theta[k] <= theta[k] - 0.05 + 1e-6
    others = np.arange(8) != k
    np.testing.assert_array_equal(result.theta[others], theta[others])
    pairs = refinement.all_judged_pairs(ranking)
    assert len(pairs) == 15 and pairs.num_discordant == 0
    assert pair_error(result.theta, Phi, pairs) == 0.0


def test_refine_theta_rejects_a_move_that_breaks_agreement():
    # Two games: the judge prefers game 0; any raise of empty_cells by >= 0.02 flips R_theta.
    Phi = np.zeros((2, 8))
    Phi[0, 0], Phi[1, 0], Phi[1, 1] = 1.0, 0.99, 1.0
    theta = np.zeros(8, np.float32)
    theta[0] = 1.0
    ranking = Ranking(order=np.array([0, 1], np.int32))
    result = refinement.refine_theta(theta, Phi, ranking, Suggestion("empty_cells", 1, 1), SPEC,
                                     dataclasses.replace(
                                         PAPER.alignment, bo_calls=6, bo_initial_points=3),
                                     RefineConfig(min_step=0.02), rng=1)
    assert not result.accepted and "rejected" in result.message
    np.testing.assert_array_equal(result.theta, theta)


def test_refinement_prompt_lists_tunable_features_and_stats():
    spec = SPEC.with_tunable(("empty_cells", "monotonicity"))
    text = refinement.refinement_prompt(spec, spec.start, {
        "game_score_per_iteration": [1200.0, 1100.0],
        "mean_feature_per_move": {"empty_cells": 0.4}})
    assert "Choose one of: empty_cells, monotonicity." in text
    assert "score_gain: +1.000 (fixed)" in text and "1200, 1100" in text
    assert "raise <feature> or lower <feature>" in text


def test_refine_config_validation():
    with pytest.raises(ValueError, match="patience"):
        RefineConfig(patience=0)
    with pytest.raises(ValueError, match="min_step"):
        RefineConfig(min_step=0.3, max_step=0.2)


TINY = dataclasses.replace(
    PAPER, iterations=3, num_seeds=2, trajectories=4, max_len=60, baseline=False,
    # 128 moves per env and segment: random games end within the first segment.
    ppo=PPOConfig(num_envs=16, num_steps=128, updates_per_segment=1, lr_schedule="constant",
                  network=NetworkConfig(hidden_sizes=(16,))),
    # A linear oracle whose hidden reward is theta0 itself: never a discordant pair.
    ranker=RankerConfig(kind="linear_oracle", theta_star=THETA0),
    alignment=dataclasses.replace(
        PAPER.alignment, bo_calls=6, bo_initial_points=3, trust_region=0.3, update_workers=1),
    # min_improvement 1e9: the score never "improves" after iteration 0, so every seed stalls.
    refine=RefineConfig(enabled=True, patience=1, min_improvement=1e9, min_step=0.05),
    eval=EvalConfig(episodes=4, max_len=300), tensorboard=False)


def test_loop_refines_when_rankings_agree_and_score_stalls(tmp_path):
    out = str(tmp_path / "r")
    advisor = ScriptedAdvisor(["lower the smoothness weight", "no idea"],
                              log_path=os.path.join(out, "refine.jsonl"))
    os.makedirs(out)
    results = loop.run(TINY, out, advisor=advisor).to_json()
    k = NAMES.index("smoothness")
    history = np.asarray(results["theta_history"])
    seeds0 = results["iterations"][0]["seeds"]
    assert all("refine" not in s for s in seeds0)  # iteration 0: not stalled yet
    asked = [(t, s, info["refine"]) for t, r in enumerate(results["iterations"])
             for s, info in enumerate(r["seeds"]) if "refine" in info]
    assert {t for t, _, _ in asked} == {1, 2}  # patience 1, counter reset after each question
    assert len(asked) == 4
    for t, s, entry in asked:
        before, after = history[t, s], history[t + 1, s]
        if entry["suggestion"] is None:
            assert entry["invalid_reason"] and not entry["accepted"]
            np.testing.assert_array_equal(after, before)
        else:
            assert entry["suggestion"]["feature"] == "smoothness"
            others = np.arange(8) != k
            np.testing.assert_array_equal(after[others], before[others])
            if entry["accepted"]:
                assert before[k] - 0.25 - 1e-6 <= after[k] <= before[k] - 0.05 + 1e-6
            else:
                np.testing.assert_array_equal(after, before)
    assert any(e["suggestion"] is None for _, _, e in asked)
    assert any(e["suggestion"] is not None for _, _, e in asked)
    lines = [json.loads(x) for x in open(os.path.join(out, "refine.jsonl"))]
    assert len(lines) == 4 and {x["iteration"] for x in lines} == {1, 2}
    for x in lines:  # the prompt carries the last patience + 1 segment scores of its seed
        scores = re.search(r"game score per iteration: (.*)", x["prompt"]).group(1)
        assert len(scores.split(", ")) == 2, scores


def test_fixed_reward_run_builds_no_judge_and_keeps_theta(tmp_path, monkeypatch):
    def no_judge(*args, **kwargs):
        raise AssertionError("a fixed-reward run must not build a judge")

    monkeypatch.setattr(loop, "make_ranker", no_judge)
    theta0 = (1.0,) + (0.0,) * 7
    cfg = dataclasses.replace(TINY, iterations=2, self_align=False, start=theta0,
                              ranker=RankerConfig(kind="llm"))
    results = loop.run(cfg, str(tmp_path / "fixed")).to_json()
    history = np.asarray(results["theta_history"])
    np.testing.assert_array_equal(history, np.broadcast_to(np.float32(theta0), history.shape))
    assert all(len(r["train_score"]) == 2 for r in results["iterations"])
    assert results["timings"]["rank"] == 0.0


def test_llm_advisor_with_the_tiny_model_logs_every_answer(tmp_path, tiny_llm_dir):
    log = str(tmp_path / "refine.jsonl")
    advisor = refinement.LLMAdvisor(hf_backend.load_model(tiny_llm_dir, None, "auto", "cpu"),
                                    log_path=log)
    theta = np.asarray(SPEC.start)
    out = advisor.suggest(SPEC, [theta, theta], [{"game_score_per_iteration": [100.0]}] * 2)
    assert len(out) == 2
    for suggestion, record in out:
        assert record["answer"].startswith(refinement.ANSWER_PREFIX)
        # The random tiny model almost surely answers gibberish; either way it must be
        # consistent with the parser.
        assert (suggestion is None) == (record["invalid_reason"] is not None)
    assert len(open(log).read().splitlines()) == 2


def test_refine_theta_at_the_bound_says_so_and_keeps_theta():
    theta, Phi, ranking = _agreeing_problem(seed=3)
    assert theta[0] == SPEC.upper[0]  # theta0 puts score_gain on its upper bound
    result = refinement.refine_theta(theta, Phi, ranking, Suggestion("score_gain", 0, 1), SPEC,
                                     dataclasses.replace(
                                         PAPER.alignment, bo_calls=5, bo_initial_points=3),
                                     RefineConfig(), rng=0)
    assert not result.accepted and "cannot raise score_gain" in result.message
    np.testing.assert_array_equal(result.theta, theta)


def test_scripted_advisor_records_keep_the_refine_jsonl_format(tmp_path):
    log = tmp_path / "refine.jsonl"
    advisor = ScriptedAdvisor(["raise empty cells", "?", "lower game_over"],
                              log_path=str(log))
    assert isinstance(advisor, refinement.Advisor)
    theta = np.asarray(SPEC.start)
    out = advisor.suggest(SPEC, [theta, theta], [{"x": [1.0]}] * 2, context={"iteration": 4})
    out += advisor.suggest(SPEC, [theta, theta], [{"x": [2.0]}] * 2)  # the answers cycle
    assert [s and (s.feature, s.direction) for s, _ in out] == [
        ("empty_cells", 1), None, ("game_over", -1), ("empty_cells", 1)]
    keys = ["prompt", "answer", "suggestion", "invalid_reason", "seconds"]
    assert list(out[0][1]) == ["iteration", *keys] and list(out[2][1]) == keys
    assert out[0][1]["suggestion"] == {"feature": "empty_cells", "index": 1, "direction": 1}
    assert out[1][1]["invalid_reason"] == "no 'raise/lower <feature>' found"
    lines = [json.loads(x) for x in open(log)]
    assert lines == [r for _, r in out] == advisor.records


def test_make_advisor_shares_the_llm_judges_model_else_loads_the_one_ranker_llm_names(
        tiny_llm_dir, monkeypatch):
    judge = LLMRanker(LLMRankerConfig(model=tiny_llm_dir, max_prompt_tokens=1024))
    advisor = refinement.make_advisor(judge.config, judge)
    assert isinstance(advisor, refinement.LLMAdvisor) and isinstance(advisor, refinement.Advisor)
    assert advisor.backend is judge.backend
    loaded = []
    monkeypatch.setattr(hf_backend, "load_model", lambda *a: loaded.append(a) or judge.backend)
    refinement.make_advisor(LLMRankerConfig(model=tiny_llm_dir, gguf_file="x.gguf",
                                            dtype="float16", device="cpu"), ScriptedRanker([0]))
    refinement.make_advisor(LLMRankerConfig())  # no judge: the embedded model
    assert loaded == [(tiny_llm_dir, "x.gguf", "float16", "cpu"), (None, None, "auto", "auto")]
