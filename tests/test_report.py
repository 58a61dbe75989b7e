"""Confidence intervals and result tables (sailor_lab.report) against scipy and hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from sailor_lab import report


def test_mean_ci_matches_scipy_t_interval():
    values = [7789.0, 6649.0, 7060.0, 5120.5]
    mean, lo, hi = report.mean_ci(values)
    ref_lo, ref_hi = scipy.stats.t.interval(0.95, len(values) - 1, loc=np.mean(values),
                                            scale=scipy.stats.sem(values))
    assert mean == pytest.approx(np.mean(values))
    assert (lo, hi) == pytest.approx((ref_lo, ref_hi), rel=1e-12)
    _, lo90, hi90 = report.mean_ci(values, confidence=0.9)
    assert lo < lo90 < mean < hi90 < hi


def test_mean_ci_hand_computed_two_seeds():
    # mean 2, sample sd sqrt(2), sem 1, t_{0.975, 1} = 12.7062047...
    mean, lo, hi = report.mean_ci([1.0, 3.0])
    assert mean == 2.0
    assert hi - mean == pytest.approx(12.706204736174698, rel=1e-9)
    assert mean - lo == pytest.approx(12.706204736174698, rel=1e-9)


def test_mean_ci_degenerate_and_bad_input():
    mean, lo, hi = report.mean_ci([5.0])
    assert mean == 5.0 and math.isnan(lo) and math.isnan(hi)
    assert report.mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="at least one"):
        report.mean_ci([])
    with pytest.raises(ValueError, match="finite"):
        report.mean_ci([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        report.mean_ci([1.0, 2.0], confidence=1.0)


def _evaluation(scores, wins):
    return {"per_seed": [{"score_mean": s, "win_rate": w,
                          "max_tile_rates": {"256": 1.0, "512": 0.5, "1024": 0.25, "2048": w,
                                             "4096": 0.0, "8192": 0.0}}
                         for s, w in zip(scores, wins, strict=True)]}


def test_summary_row_tables_round_trip(tmp_path):
    rows = [report.summary_row("baseline", _evaluation([100.0, 300.0, 200.0], [0.0, 0.1, 0.2]),
                               judge="-", env_steps_per_seed=1000, wall_clock_s=12.5),
            report.summary_row("one_seed", _evaluation([50.0], [0.0]), judge="outcome")]
    assert list(rows[0]) == list(report.COLUMNS)
    assert rows[0]["seeds"] == 3 and rows[0]["score_mean"] == pytest.approx(200.0)
    assert rows[0]["win_rate_mean"] == pytest.approx(0.1)
    csv_path, md_path = report.write_tables(rows, str(tmp_path), "table")
    back = report.read_csv(csv_path)
    assert [r["variant"] for r in back] == ["baseline", "one_seed"]
    for key in report.COLUMNS[2:]:
        a, b = rows[0][key], back[0][key]
        assert a == pytest.approx(b), key
    assert math.isnan(back[1]["score_ci_low"])
    md = open(md_path, encoding="utf-8").read().splitlines()
    assert len(md) == 4 and md[0].startswith("| variant | judge | seeds")
    assert "200 [" in md[2] and "| 50 |" in md[3]
    with pytest.raises(ValueError, match="per-seed"):
        report.summary_row("x", {"score_mean": 1.0})


def test_recovery_fraction_hand_computed():
    # method gains 2 on average over a start that is 8 below the reference: a quarter.
    start, ref = [1.0, 2.0, 3.0, 4.0], [9.0, 10.0, 11.0, 12.0]
    method = [3.0, 3.5, 5.5, 6.0]
    r = report.recovery_fraction(method, start, ref)
    assert r["fraction"] == pytest.approx(2.0 / 8.0)
    assert r["gap"]["mean"] == pytest.approx(8.0) and r["gap"]["wins"] == 4
    assert r["ci_low"] <= r["fraction"] <= r["ci_high"]
    # Every bootstrap resample has the same reference gap (8 on each seed), so the interval is
    # that of the method's mean gain, divided by 8: inside [min, max] per-seed gain / 8.
    gains = np.subtract(method, start) / 8.0
    assert gains.min() <= r["ci_low"] and r["ci_high"] <= gains.max()
    assert report.recovery_fraction(method, start, ref) == r  # seeded: same interval
    full = report.recovery_fraction(ref, start, ref)
    assert full["fraction"] == 1.0 and full["ci_low"] == full["ci_high"] == 1.0


def test_recovery_fraction_bad_input():
    with pytest.raises(ValueError, match="equal length >= 2"):
        report.recovery_fraction([1.0, 2.0], [1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="equal length >= 2"):
        report.recovery_fraction([1.0], [1.0], [3.0])
    with pytest.raises(ValueError, match="finite"):
        report.recovery_fraction([1.0, np.nan], [1.0, 2.0], [3.0, 4.0])
    with pytest.raises(ValueError, match="equal lengths"):
        report.paired_difference([1.0], [1.0, 2.0])
    # No gap between start and reference: the fraction is undefined, not a number.
    none = report.recovery_fraction([2.0, 3.0], [1.0, 2.0], [1.0, 2.0])
    assert all(math.isnan(none[k]) for k in ("fraction", "ci_low", "ci_high"))


def test_paired_difference_by_hand():
    d = report.paired_difference([10.0, 20.0, 35.0], [8.0, 21.0, 30.0])  # differences 2, -1, 5
    half = 4.302652729911275 * 3.0 / math.sqrt(3.0)  # t(0.975, 2) * sd 3 / sqrt(3)
    assert d["per_seed"] == [2.0, -1.0, 5.0] and d["mean"] == 2.0 and d["wins"] == 2
    assert d["ci_low"] == pytest.approx(2.0 - half) and d["ci_high"] == pytest.approx(2.0 + half)
    with pytest.raises(ValueError, match="equal lengths"):
        report.paired_difference([1.0], [1.0, 2.0])
