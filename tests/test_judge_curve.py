"""The judge curve (`sailor_lab.judge_curve`, `benchmarks/judge_curve.py`) on made-up
comparison folders whose numbers are worked out by hand."""

from __future__ import annotations

import gzip
import json
import math
import os

import pytest
from support import load_script

from sailor_jax.errors import UserError
from sailor_lab.judge_curve import crossing, point, series_crossing, window_accuracy

bench = load_script("benchmarks/judge_curve.py")


def _write(folder, arm: str, scores: list[float], shares: list[list[float | None]] = (),
           train: list[list[float]] = (), gz: bool = False) -> None:
    """A results.json with final scores `scores` (one per seed) and, per update after one
    warm-up update, each seed's `agent_preferred` share and training score."""
    path = folder / "variants" / arm
    os.makedirs(path)
    iterations = [{"seeds": [{"agent_preferred": s} for s in row], "train_score": t}
                  for row, t in zip(shares, train, strict=True)]
    warmup = [{"seeds": [{"agent_preferred": 0.0} for _ in scores]}]
    results = {"warmup": warmup, "iterations": iterations,
               "evaluation": {"per_seed": [{"score_mean": s, "win_rate": 0.0, "max_tile_rates":
                                            {str(2 ** k): 0.0 for k in range(1, 18)}}
                                           for s in scores]}}
    text = json.dumps(results)
    if gz:
        with gzip.open(path / "results.json.gz", "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        (path / "results.json").write_text(text)


def test_window_accuracy_scores_each_update_by_who_was_stronger():
    updates = [{"agent_preferred": 0.75, "train_score": 900.0},  # agent stronger: 0.75 right
               {"agent_preferred": 0.25, "train_score": 100.0},  # agent weaker: 0.75 right
               {"agent_preferred": 0.9, "train_score": 500.0},   # equal skill: left out
               {"agent_preferred": None, "train_score": 900.0},  # no reference games
               {"agent_preferred": 0.1, "train_score": None}]    # the warm-up
    assert window_accuracy(updates, 500.0) == pytest.approx(0.75)
    assert window_accuracy(updates[2:], 500.0) is None


def test_crossing_is_the_lowest_accuracy_from_which_the_curve_stays_above():
    assert crossing([0.5, 0.6, 0.8], [-3, -1, 5]) == pytest.approx(0.6 + 1 / 6 * 0.2)
    assert crossing([0.8, 0.5, 0.7, 0.6], [0.9, 0.1, 0.4, 0.6], 0.5) == pytest.approx(0.72)
    assert crossing([0.5, 0.8], [-2, -1]) is None
    assert crossing([0.5, 0.8], [1, 2]) == 0.5
    assert series_crossing([]) == {"mean": None, "from_ci_high": None, "from_ci_low": None}


def test_point_pairs_seeds_block_by_block(tmp_path):
    """Block 1: seeds 1000 / 500 against twins 800 / 1000; block 2 (gzipped): 900 against 900;
    block 3 has no fixed arm and is left out."""
    _write(tmp_path / "seed1", "theta0.fixed", [800.0, 1000.0])
    _write(tmp_path / "seed1", "theta0.arm", [1000.0, 500.0], shares=[[1.0, 0.0], [0.5, 0.5]],
           train=[[900.0, 100.0], [900.0, 900.0]])
    _write(tmp_path / "seed2", "theta0.fixed", [900.0], gz=True)
    _write(tmp_path / "seed2", "theta0.arm", [900.0], gz=True)
    _write(tmp_path / "seed3", "theta0.arm", [1.0])
    p = point(str(tmp_path), "theta0.arm", "theta0.fixed", 500.0)
    assert p["seeds"] == 3 and p["scores"] == [1000.0, 500.0, 900.0]
    assert p["gain"] == pytest.approx((200 - 500 + 0) / 3)
    assert p["worst_ratio"] == pytest.approx(0.5) and p["below_floor"] == 1
    # seed 1: (1.0 + 0.5) / 2; seed 2: ((1 - 0.0) + 0.5) / 2; block 2 recorded nothing
    assert p["window_accuracy"] == pytest.approx(0.75) and p["accuracy_seeds"] == 2
    assert p["window_accuracy_ci"] == [pytest.approx(0.75), pytest.approx(0.75)]
    assert point(str(tmp_path), "theta0.other", "theta0.fixed", 500.0) is None


def test_the_script_writes_the_curve_and_leaves_unfinished_arms_out(tmp_path, capsys):
    _write(tmp_path, "theta0.fixed", [1000.0, 1000.0])
    for arm, gain, share in (("random", -300.0, 0.5), ("noisy", 0.0, 0.6), ("clean", 200.0, 0.9)):
        _write(tmp_path, f"theta0.{arm}", [1000.0 + gain - 50, 1000.0 + gain + 50],
               shares=[[share, 1 - share]], train=[[900.0, 100.0]])
    out = tmp_path / "out"
    c = bench.main(["--run", str(tmp_path), "--reference-skill", "500", "--out", str(out),
                    "--series", "before=random,noisy,clean,missing"])
    points = {p["arm"]: p for p in c["series"]["before"]["points"]}
    assert points["theta0.clean"]["window_accuracy"] == pytest.approx(0.9)
    assert points["theta0.random"]["gain"] == pytest.approx(-300.0)
    assert c["not_finished"] == ["missing"]
    # the mean gain reaches 0 at 0.6 and stays there
    assert c["series"]["before"]["no_loss_at"]["mean"] == pytest.approx(0.6)
    printed = capsys.readouterr().out
    assert "| before | theta0.clean | 2 | 0.900 [0.900, 0.900] | +200 [" in printed
    assert "window accuracy 0.600" in printed and "Not finished, left out: missing" in printed
    assert {"curve.json.gz", "curve.md", "judge_curve.png"} <= set(os.listdir(out))
    with gzip.open(out / "curve.json.gz", "rt", encoding="utf-8") as f:
        assert json.load(f)["series"]["before"]["points"][0]["seeds"] == 2


def test_an_arm_without_recorded_windows_has_no_accuracy(tmp_path, capsys):
    _write(tmp_path, "theta0.fixed", [1000.0, 900.0])
    _write(tmp_path, "theta0.old", [1100.0, 800.0])
    c = bench.main(["--run", str(tmp_path), "--reference-skill", "500",
                    "--series", "after=old"])
    p = c["series"]["after"]["points"][0]
    assert math.isnan(p["window_accuracy"]) and p["gain"] == pytest.approx(0.0)
    printed = capsys.readouterr().out
    assert "| after | theta0.old | 2 | - |" in printed and "no accuracy" in printed


@pytest.mark.parametrize("series, match", [
    ("before", "is not NAME=ARM"), ("before=", "is not NAME=ARM"), ("=a", "is not NAME=ARM")])
def test_bad_series(tmp_path, series, match):
    _write(tmp_path, "theta0.fixed", [1.0])
    with pytest.raises(UserError, match=match):
        bench.main(["--run", str(tmp_path), "--reference-skill", "1", "--series", series])


def test_a_repeated_series_name_a_bad_folder_and_nothing_finished(tmp_path):
    _write(tmp_path, "theta0.fixed", [1.0])
    with pytest.raises(UserError, match="given twice"):
        bench.main(["--run", str(tmp_path), "--reference-skill", "1",
                    "--series", "a=x", "a=y"])
    with pytest.raises(UserError, match="no arm of --series has finished"):
        bench.main(["--run", str(tmp_path), "--reference-skill", "1", "--series", "a=x"])
    with pytest.raises(UserError, match="no variants/ folder"):
        bench.main(["--run", str(tmp_path / "nowhere"), "--reference-skill", "1",
                    "--series", "a=x"])
