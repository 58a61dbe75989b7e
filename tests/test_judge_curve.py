"""Issue 50: the judge curve's arithmetic on hand cases, and `benchmarks/judge_curve.py` end
to end on tiny arms (kept-fixed arms shared between levels, the curve read back)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os

import numpy as np
import pytest
from test_compare import TINY_BASE
from test_experiments import _load

from sailor_jax.config import RankerConfig
from sailor_jax.run import loop
from sailor_jax.types import Ranking
from sailor_lab import judge_eval
from sailor_lab.judge_curve import crossing, group_accuracy, predict, prediction_line


def test_group_accuracy_counts_pairs_of_different_skill_and_bootstraps_groups():
    eps = [np.array([0.0, 1.0, 0.5]), np.array([0.0, 0.0, 1.0])]
    rankings = [Ranking(order=np.array([0, 2, 1])), None]  # group 2 failed: its pairs wrong
    got = group_accuracy(rankings, eps, resamples=500)
    assert got["pairs"] == 5 and got["accuracy"] == pytest.approx(3 / 5)
    assert got["accuracy"] == judge_eval.judge_metrics(rankings, eps, {})["skill_order_accuracy"]
    low, high = got["accuracy_ci"]  # resampled groups: all-right (1.0) to all-wrong (0.0)
    assert low == 0.0 and high == 1.0
    assert group_accuracy([None], [np.zeros(3)])["pairs"] == 0


def test_crossing_is_the_lowest_accuracy_from_which_the_curve_stays_above():
    assert crossing([0.5, 0.6, 0.8], [0.1, 0.3, 0.9]) == pytest.approx(0.6 + 0.2 / 0.6 * 0.2)
    assert crossing([0.8, 0.5, 0.7, 0.6], [0.9, 0.1, 0.4, 0.6]) == pytest.approx(0.72)
    assert crossing([0.5, 0.8], [0.1, 0.4]) is None
    assert crossing([0.5, 0.8], [0.6, 0.9]) == 0.5


def _point(accuracy, low, high, queries=1):
    return {"accuracy": accuracy, "queries": queries, "starts": {
        "bad": {"metric": "recovery", "recovery": (low + high) / 2, "recovery_ci": [low, high]},
        "theta0": {"metric": "diff_to_fixed", "diff_to_fixed": 0.0,
                   "diff_to_fixed_ci": [-100 * low, 100 * high]}}}


def test_predict_spans_the_two_measured_levels_around_the_accuracy():
    curve = {"setting": "test", "points": [_point(0.5, -0.2, 0.1), _point(0.8, 0.6, 0.9),
                                           _point(0.7, 0.3, 0.7), _point(0.7, 0.9, 1.0, 2)]}
    band = predict(curve, 0.75)
    assert band["bad"] == {"metric": "recovery", "low": 0.3, "high": 0.9,
                           "between": [0.7, 0.8], "extrapolated": False}
    assert band["theta0"]["low"] == -60 and band["theta0"]["high"] == 90
    assert predict(curve, 0.9)["bad"]["extrapolated"] and predict(curve, 0.9)["bad"]["low"] == 0.6
    assert predict(curve, 0.4)["bad"]["between"] == [0.5, 0.5]
    line = prediction_line(curve, 0.6)
    assert "between the measured accuracies 0.500 and 0.700" in line
    assert "bad recovery [-0.20, +0.70]" in line


@pytest.mark.slow
def test_judge_curve_end_to_end_shares_the_fixed_arms(tmp_path, monkeypatch):
    bench = _load("benchmarks/judge_curve.py")
    args = bench.Args(levels=(0.0, 3.0), starts=("pays_for_dying",), query_levels=(),
                      pool=judge_eval.PoolArgs(epsilons=(0.0, 1.0), games_per_player=3,
                                               max_len=40, pool_depth=1, m=4, groups=3),
                      expert_depth=1, out=str(tmp_path / "curve"))
    real_run, calls = loop.run, []
    compare = _load("experiments/compare.py")
    monkeypatch.setattr(bench, "base_config", lambda _: (dataclasses.replace(
        TINY_BASE, ranker=RankerConfig(kind="expert"), warmup_updates=0), compare))

    def run(cfg, folder, resume=False, progress=None, devices=None, label="SAILOR"):
        calls.append((os.path.basename(os.path.dirname(os.path.dirname(folder))),
                      os.path.basename(folder), cfg.ranker.noise, cfg.trajectories))
        return real_run(cfg, folder, resume=resume, progress=progress)

    monkeypatch.setattr(loop, "run", run)
    curve = bench.main(args)
    assert calls == [("sigma0", "theta0.fixed", 0.0, 8),  # the paper's 8 games, never judged
                     ("sigma0", "pays_for_dying.fixed", 0.0, 8),
                     ("sigma0", "pays_for_dying.sailor_value", 0.0, 4),
                     ("sigma3", "pays_for_dying.sailor_value", 3.0, 4)]  # fixed arms copied
    assert [(p["label"], p["windows_per_update"]) for p in curve["points"]] == [
        ("sigma0", 4), ("sigma3", 4)]
    for p in curve["points"]:  # each number from that level's repair table
        row = next(r for r in json.load(open(tmp_path / "curve" / p["label"] / "compare.json"))
                   ["rows"] if r["arm"] == "pays_for_dying.sailor_value")
        cell = p["starts"]["pays_for_dying"]
        assert cell["recovery"] == row.get("recovery", {}).get("fraction")
        assert cell["diff_to_fixed"] == row["vs_fixed_start"]["mean"]
        assert 0.0 <= p["accuracy"] <= 1.0 and p["pairs"] > 0
    assert curve["points"][0]["tau_clean"] == 1.0  # sigma 0 is the expert
    assert not os.path.exists(tmp_path / "curve" / "sigma3" / "variants" / "theta0.fixed" /
                              "checkpoints")
    calls.clear()
    again = bench.main(bench.dataclasses.replace(args, finished_only=True))
    assert calls == [] and again["points"] == curve["points"]
    assert os.path.exists(tmp_path / "curve" / "judge_curve.png")
    assert "| expert, sigma 3 | 4 |" in open(tmp_path / "curve" / "curve.md").read()


def test_the_curves_runs_and_what_each_level_changes():
    bench = _load("benchmarks/judge_curve.py")
    args = bench.Args(levels=(0.0, float("inf"), 2.0), query_levels=(2.0,), query_factors=(2, 4),
                      starts=("pays_for_dying",), out="o")
    plan = bench.runs(args)
    assert [(r["label"], r["noise"], r["queries"], r["methods"][1]) for r in plan] == [
        ("sigma0", 0.0, 1, "sailor_value"), ("random", None, 1, "sailor_random_judge"),
        ("sigma2", 2.0, 1, "sailor_value"), ("sigma2_q2", 2.0, 2, "sailor_value"),
        ("sigma2_q4", 2.0, 4, "sailor_value")]
    base, compare = bench.base_config(args)  # the cpu preset: 16 windows, 8 reference games
    by = {r[0]: r[3] for r in bench.level_runs(compare, base, plan[4], args.starts)}
    judged = by["pays_for_dying.sailor_value"]
    assert (judged.ranker.noise, judged.trajectories, judged.reference_games) == (2.0, 64, 32)
    assert by["pays_for_dying.fixed"] == compare.arm_list(base, args.starts, ("fixed",))[1][3]
    random = {r[0]: r[3] for r in bench.level_runs(compare, base, plan[1], args.starts)}
    assert random["pays_for_dying.sailor_random_judge"].ranker.noise == 0.0


def test_judge_quality_prints_what_the_committed_curve_predicts(tmp_path, monkeypatch, capsys):
    from test_judge_quality import TINY_POOL
    bench = _load("benchmarks/judge_quality.py")
    curve = {"setting": "test", "pool": TINY_POOL["pool"].record(),
             "points": [_point(0.0, -0.5, 0.0), _point(1.0, 0.7, 1.0)]}
    path = tmp_path / "curve.json"  # committed gzipped: the reader finds curve.json.gz
    (tmp_path / "curve.json.gz").write_bytes(gzip.compress(json.dumps(curve).encode()))
    monkeypatch.setattr(bench, "CURVE", str(path))
    record = bench.main(bench.Args(judge="outcome", **TINY_POOL))
    assert record["curve_prediction"] == predict(curve, record["skill_order_accuracy"])
    assert "the judge curve (test) predicts, between the measured accuracies 0.000 and 1.000" \
        in capsys.readouterr().out
    reseeded = bench.dataclasses.replace(TINY_POOL["pool"], seed=TINY_POOL["pool"].seed + 1)
    assert "curve_prediction" in bench.main(bench.Args(judge="outcome", pool=reseeded))  # same
    other = bench.dataclasses.replace(TINY_POOL["pool"], max_len=41)  # another pool: no reading
    assert "curve_prediction" not in bench.main(bench.Args(judge="outcome", pool=other,
                                                           expert_depth=1))


def test_versus_random_pairs_each_level_with_the_random_judge_seed_by_seed():
    from sailor_lab.judge_curve import versus_random
    points = [{"noise": 0.0, "starts": {"a": {"scores": [10.0, 12.0, 9.0]}}},
              {"noise": None, "starts": {"a": {"scores": [8.0, 12.5, 7.0]}}}]
    versus_random(points)
    cell = points[0]["starts"]["a"]
    assert cell["diff_to_random"] == pytest.approx(np.mean([2.0, -0.5, 2.0]))
    assert cell["wins_over_random"] == 2 and cell["diff_to_random_ci"][0] < 0
    assert "diff_to_random" not in points[1]["starts"]["a"]  # not against itself
