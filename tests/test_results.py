"""Tests for `run.results`: JSON round trips, the results.json schema, clear load errors."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from support import iteration_record, load_script

from sailor_jax.game.reward import RewardSpec
from sailor_jax.run.results import (
    PHASES,
    LoopState,
    SailorResults,
    SeedUpdate,
)

SPEC = RewardSpec()


def test_seed_update_json_leaves_out_what_did_not_apply():
    failed = SeedUpdate(judge_failed=True, message="no ranking").to_json()
    assert failed == {"judge_failed": True, "num_discordant": 0, "num_concordant": 0,
                      "message": "no ranking"}
    full = iteration_record(0).seeds[0].to_json()
    assert full["error_after"] is None and "refine" not in full  # NaN -> null, None -> absent
    assert SeedUpdate.from_json(full).kendall_tau_after == 0.6
    assert full["outcome"] == "moved" and SeedUpdate.from_json(full).outcome == "moved"


def test_loop_state_round_trip_through_json():
    state = LoopState.start(np.asarray(SPEC.start, np.float32), num_seeds=2)
    assert state.iteration == 0 and state.thetas.shape == (2, 8)
    assert state.thetas.dtype == np.float32 and set(state.timings) == set(PHASES)
    state.iterations.append(iteration_record(0))
    state.theta_history.append((state.thetas * 0.5).tolist())
    state.stall[1] = 3
    back = LoopState.from_json(json.loads(json.dumps(state.to_json())))
    assert back.iteration == 1 and back.stall == [0, 3] and back.best_score == [None, None]
    np.testing.assert_array_equal(back.thetas, state.thetas)
    assert back.iterations[0].seeds[1].judge_failed
    assert back.to_json() == state.to_json()
    # A checkpoint saved while kept pairs existed holds an empty `kept_pairs` per seed (the
    # option off; a run with it on is refused first, `run_dir.RETIRED`): it loads the same.
    old = json.loads(json.dumps(state.to_json())) | {"kept_pairs": [[], []]}
    old["iterations"][0]["seeds"][0]["num_kept"] = 0
    assert LoopState.from_json(old).to_json() == state.to_json()


def _results() -> SailorResults:
    iterations = [iteration_record(0), iteration_record(1)]
    return SailorResults(config={"self_align": True}, ranker={"kind": "outcome"},
                         feature_names=list(SPEC.names),
                         theta_history=[[list(SPEC.start)] * 2] * 3, iterations=iterations,
                         env_steps_per_seed=200, evaluation={"score_mean": 1.0},
                         baseline_evaluation=None, timings=dict.fromkeys(PHASES, 0.0))


def test_results_json_views_and_round_trip(tmp_path):
    results = _results()
    assert results.preferences == [{"num_discordant": [2, 0], "num_concordant": [2, 0]}] * 2
    assert results.agreement[0] == {"kendall_tau_before": [0.2, None],
                                    "kendall_tau_after": [0.6, None]}
    path = results.write(str(tmp_path))
    on_disk = json.load(open(path))
    assert list(on_disk) == ["config", "ranker", "feature_names", "theta_history",
                             "preferences", "agreement", "judge_tokens", "iterations",
                             "env_steps_per_seed", "evaluation", "baseline_evaluation", "timings"]
    assert on_disk["judge_tokens"] is None and "judge_tokens" not in on_disk["iterations"][0]
    loaded = SailorResults.load(str(tmp_path))
    assert loaded.to_json() == results.to_json() and loaded.self_align


def test_endpoint_tokens_per_iteration_and_per_run(tmp_path):
    results = _results()
    results.iterations[0].judge_tokens = {"prompt": 100, "completion": 4}
    results.iterations[1].judge_tokens = {"prompt": 90, "completion": 3}
    assert results.judge_tokens == {"prompt": 190, "completion": 7, "total": 197}
    loaded = SailorResults.load(os.path.dirname(results.write(str(tmp_path))))
    assert loaded.iterations[1].judge_tokens == {"prompt": 90, "completion": 3}
    assert loaded.judge_tokens == results.judge_tokens


def test_load_errors_name_the_file_and_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no SAILOR results.json"):
        SailorResults.load(str(tmp_path / "missing"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        SailorResults.load(str(tmp_path / "bad.json"))
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        SailorResults.load(str(tmp_path / "list.json"))
    partial = _results().to_json()
    del partial["iterations"], partial["timings"]
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    with pytest.raises(ValueError, match=r"missing \['iterations', 'timings'\]"):
        SailorResults.load(str(tmp_path / "partial.json"))


def test_transfer_reads_a_runs_last_thetas(tmp_path):
    results = _results()
    results.theta_history = [*results.theta_history, [[0.5] + [0.0] * 6 + [-1.0]] * 2]
    results.write(str(tmp_path))
    thetas, judge = load_script("experiments/transfer_dqn.py").load_sailor_thetas(str(tmp_path))
    assert thetas.shape == (2, 8) and judge == "outcome"
    np.testing.assert_array_equal(thetas[:, 0], [0.5, 0.5])
