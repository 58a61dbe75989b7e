"""benchmarks/results/repair_named_starts/compare_repairs.py: two repair folders compared start
by start, on made-up runs whose numbers are worked out by hand."""

from __future__ import annotations

import dataclasses
import gzip
import json

import numpy as np
import pytest
from support import iteration_record, load_script

from sailor_jax.errors import UserError
from sailor_jax.game.reward import THETA0 as BASELINE
from sailor_jax.game.reward import RewardSpec
from sailor_jax.run.results import PHASES, SailorResults, SeedUpdate
from sailor_lab import report

THETA0 = list(BASELINE)
TILES = [str(t) for t in report.TILES]


def _write(folder, arm: str, scores: list[float], game_over: float = -1.0,
           ended: list[list[int]] | None = None) -> None:
    theta = [THETA0[:-1] + [game_over]] * len(scores)
    iterations = []
    for t, counts in enumerate(ended or [None]):
        record = iteration_record(t)
        record.sampled_ended = None if counts is None else {"agent": counts,
                                                            "reference": [0] * len(counts)}
        iterations.append(record)
    per_seed = [{"score_mean": s, "win_rate": 0.0, "max_tile_rates": dict.fromkeys(TILES, 0.0)}
                for s in scores]
    results = SailorResults(config={"self_align": True, "trajectories": 8, "reference_games": 2},
                            ranker={}, feature_names=list(RewardSpec().names),
                            theta_history=[theta] * 2, iterations=iterations,
                            env_steps_per_seed=100, evaluation={"per_seed": per_seed},
                            baseline_evaluation=None, timings=dict.fromkeys(PHASES, 0.0))
    path = folder / "variants" / arm
    path.mkdir(parents=True)
    results.write(str(path))


def test_update_outcomes_counts_the_recorded_outcomes():
    """Counted from `SeedUpdate.outcome` (set where the update is decided), not its message."""
    bench = load_script("benchmarks/results/repair_named_starts/compare_repairs.py")
    record = iteration_record(0)
    record.seeds = [SeedUpdate(accepted=True, outcome="moved"),
                    SeedUpdate(accepted=False, outcome="held out"),
                    SeedUpdate(accepted=False, outcome="guard",
                               message="held-out rejected: the words do not count"),
                    SeedUpdate(accepted=False, outcome="no gain")]
    results = SailorResults(config={}, ranker={}, feature_names=[], theta_history=[],
                            iterations=[record, record], env_steps_per_seed=1, evaluation={},
                            baseline_evaluation=None, timings={})
    assert bench.update_outcomes(results) == {"accepted": 2, "heldout": 2, "guard": 2,
                                              "other": 2, "total": 8}
    warm = dataclasses.replace(record, iteration=-1, seeds=record.seeds[:2])
    results.warmup = [warm]  # the warm-up's updates count with the iterations'
    assert bench.update_outcomes(results) == {"accepted": 3, "heldout": 3, "guard": 2,
                                              "other": 2, "total": 10}


def test_compare_repairs_pairs_seeds_and_reads_recovery_and_the_end_windows(tmp_path, capsys):
    bench = load_script("benchmarks/results/repair_named_starts/compare_repairs.py")
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        _write(folder, "theta0.fixed", [100.0, 110.0, 90.0])
        _write(folder, "pays.fixed", [10.0, 20.0, 0.0])
    _write(a, "pays.sailor", [50.0, 60.0, 40.0], game_over=0.8, ended=[[3, 0, 3], [0, 0, 6]])
    _write(b, "pays.sailor", [70.0, 60.0, 50.0], game_over=0.2, ended=[[6, 6, 6]])
    _write(a, "theta0.sailor", [100.0, 100.0, 100.0])
    _write(b, "theta0.sailor", [101.0, 112.0, 93.0])
    _write(a, "other.sailor", [1.0, 2.0, 3.0])  # not in b: left out
    rows = bench.main(["--a", str(a), "--b", str(b), "--label-a", "base", "--label-b", "end",
                       "--out", str(tmp_path / "out")])
    assert [r["start"] for r in rows] == ["pays", "theta0"]
    pays, theta0 = rows
    assert pays["b_minus_a"]["per_seed"] == [20.0, 0.0, 10.0] and pays["b_minus_a"]["wins"] == 2
    assert pays["recovery"]["base"]["fraction"] == pytest.approx((50 - 10) / (100 - 10))
    assert pays["recovery"]["end"]["fraction"] == pytest.approx((60 - 10) / (100 - 10))
    assert pays["game_over"] == pytest.approx({"base": 0.8, "end": 0.2})
    assert pays["ended_share"] == pytest.approx({"base": 2 / 6, "end": 1.0})
    assert theta0["vs_fixed"]["end"]["per_seed"] == [1.0, 2.0, 3.0] and "recovery" not in theta0
    assert theta0["worst_to_fixed"] == pytest.approx({"base": 100 / 110, "end": 101 / 100})
    assert theta0["ended_share"] == {"base": None, "end": None}
    # iteration_record's two seeds per iteration: one accepted, one judge failure.
    assert pays["updates"]["base"] == {"accepted": 2, "heldout": 0, "guard": 0, "other": 2,
                                       "total": 4}
    table = capsys.readouterr().out
    assert "| pays | +10 [" in table and "(2/3) | 0.44 [" in table and "| 0.33 / 1.00 |" in table
    assert "| 0.33 / 1.00 | 2 / 0 / 0 of 4; 1 / 0 / 0 of 2 |" in table
    assert "(to fixed; worst seed 0.91) | +2 [" in table
    assert open(tmp_path / "out" / "compare.md").read() in table
    with gzip.open(tmp_path / "out" / "compare.json.gz", "rt") as f:
        saved = json.load(f)
    assert saved["rows"][0]["score"]["end"] == [70.0, 60.0, 50.0]
    assert np.isclose(saved["rows"][0]["b_minus_a"]["mean"], 10.0)
    # Another arm in both folders: --method names it.
    _write(a, "pays.sailor_value", [20.0, 30.0, 40.0])
    _write(b, "pays.sailor_value", [30.0, 20.0, 40.0])
    rows = bench.main(["--a", str(a), "--b", str(b), "--method", "sailor_value"])
    assert [r["start"] for r in rows] == ["pays"]
    assert rows[0]["b_minus_a"]["per_seed"] == [10.0, -10.0, 0.0]
    with pytest.raises(UserError, match="--a/--b: no sailor arm has finished in both"):
        bench.main(["--a", str(a), "--b", str(tmp_path / "none")])


def test_compare_repairs_pools_seed_sets_pair_by_pair(tmp_path, capsys):
    """`--more-a` / `--more-b`: a second seed set's seeds follow the first's, each B seed
    paired with the A seed of its own set; the recovery is over all seeds at once."""
    bench = load_script("benchmarks/results/repair_named_starts/compare_repairs.py")
    a, b, a1 = tmp_path / "a", tmp_path / "b", tmp_path / "a1"
    for folder, ref, fixed in ((a, [100.0, 110.0], [10.0, 20.0]), (a1, [90.0], [0.0])):
        _write(folder, "theta0.fixed", ref)
        _write(folder, "pays.fixed", fixed)
    _write(a, "pays.sailor", [50.0, 60.0], game_over=0.8)
    _write(b, "pays.sailor", [70.0, 80.0], game_over=0.2)
    _write(a1, "pays.sailor", [40.0], game_over=0.5)
    b1 = tmp_path / "b1"
    _write(b1, "pays.sailor", [45.0], game_over=-0.4)  # B's second set
    argv = ["--a", str(a), "--b", str(b), "--more-a", str(a1), "--more-b", str(b1)]
    (pays,) = bench.main(argv)
    assert pays["score"] == {"A": [50.0, 60.0, 40.0], "B": [70.0, 80.0, 45.0]}
    assert pays["b_minus_a"]["per_seed"] == [20.0, 20.0, 5.0]
    assert pays["fixed"] == [10.0, 20.0, 0.0]
    # recovery: mean(arm - fixed) / mean(theta0 - fixed) over the three seeds
    assert pays["recovery"]["B"]["fraction"] == pytest.approx((60 + 60 + 45) / (90 + 90 + 90))
    assert pays["game_over"] == pytest.approx({"A": (0.8 * 2 + 0.5) / 3, "B": (0.2 * 2 - 0.4) / 3})
    assert pays["updates"]["A"]["total"] == 2 * 2  # 2 runs, iteration_record's 2 updates each
    with pytest.raises(UserError, match="no sailor arm has finished"):
        bench.main([*argv[:-1], str(tmp_path / "none")])  # a seed set without the arms
    with pytest.raises(SystemExit):
        bench.main([*argv, "--more-b", str(a1), str(b)])
    assert "error: --more-b: 2 folders for 1 in --more-a" in capsys.readouterr().err
