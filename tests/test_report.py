"""Confidence intervals and result tables (sailor_jax.report) against scipy and hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from sailor_jax import report


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
