"""benchmarks/compare_recipes.py: pooled seeds and Welch's interval against scipy and report."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats
from support import curve_line, load_script

from sailor_jax.errors import UserError
from sailor_lab import report

compare = load_script("benchmarks/compare_recipes.py")


@pytest.mark.parametrize("per_seed", [False, True])
def test_pooled_groups_equal_the_concatenated_seeds(per_seed):
    rng = np.random.default_rng(0)
    x = rng.normal(15_000, 1_500, size=8)
    groups = [compare.from_curve_line(curve_line("r", 1, x[i:j], x[i:j] / 1e5, per_seed), "score")
              for i, j in ((0, 3), (3, 8))]
    pooled = compare.pool(groups)
    assert pooled.n == 8
    assert pooled.mean == pytest.approx(x.mean())
    assert pooled.sd == pytest.approx(x.std(ddof=1))
    mean, low, high = report.mean_ci(x)
    assert compare.t_interval(pooled) == pytest.approx((low, high))


def test_welch_difference_matches_scipy_ttest_ind():
    rng = np.random.default_rng(1)
    a, b = rng.normal(16_000, 900, size=8), rng.normal(14_000, 500, size=5)
    got = compare.welch_difference(compare.Sample(8, a.mean(), a.std(ddof=1)),
                                   compare.Sample(5, b.mean(), b.std(ddof=1)))
    ref = scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert got["diff"] == pytest.approx(a.mean() - b.mean())
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((ref.low, ref.high))


def test_welch_difference_of_two_constant_samples_is_the_difference():
    """Both recipes at a 2048 rate of 0 on every seed (seen with DQN at 1M steps): no
    ZeroDivisionError; the interval is the difference, and one spread seed widens it."""
    zero, half = compare.Sample(3, 0.0, 0.0), compare.Sample(3, 0.5, 0.0)
    got = compare.welch_difference(half, zero)
    assert (got["diff"], got["ci_low"], got["ci_high"], got["df"]) == (0.5, 0.5, 0.5, math.inf)
    wide = compare.welch_difference(compare.Sample(3, 0.5, 0.1), zero)
    assert wide["ci_low"] < 0.5 < wide["ci_high"] and wide["df"] == pytest.approx(2)


def test_cli_pools_files_and_prints_json(tmp_path, capsys):
    rng = np.random.default_rng(2)
    a, b = rng.normal(16_000, 900, size=8), rng.normal(14_000, 700, size=8)
    wa, wb = rng.uniform(0.2, 0.3, size=8), rng.uniform(0.1, 0.2, size=8)
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text(json.dumps(curve_line("best", 10, a[:3], wa[:3], False)) + "\n"
                   + json.dumps(curve_line("default", 10, b[:3], wb[:3], False)) + "\n")
    new.write_text(json.dumps(curve_line("best", 10, a[3:], wa[3:], True)) + "\n"
                   + json.dumps(curve_line("default", 10, b[3:], wb[3:], True)) + "\n")
    result = compare.main(compare.Args(a=(f"{old}:best:10", f"{new}:best:10"),
                                       b=(f"{old}:default:10", f"{new}:default:10"),
                                       json=True))
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(result))
    for metric, (xa, xb) in (("score", (a, b)), ("win_rate", (wa, wb))):
        ref = scipy.stats.ttest_ind(xa, xb, equal_var=False).confidence_interval(0.95)
        r = result[metric]
        assert (r["a"]["seeds"], r["b"]["seeds"]) == (8, 8)
        assert r["a"]["mean"] == pytest.approx(xa.mean())
        assert (r["a_minus_b"]["ci_low"], r["a_minus_b"]["ci_high"]) == \
            pytest.approx((ref.low, ref.high))


def test_bad_input_is_a_clear_error(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(curve_line("r", 10, [1.0], [0.0], False)) + "\n")
    with pytest.raises(UserError, match="expected FILE:RECIPE:ENV_STEPS"):
        compare.read_line(f"{path}:r")
    with pytest.raises(UserError, match="no evaluation of 'r' at 20 env steps"):
        compare.read_line(f"{path}:r:20")
    with pytest.raises(UserError, match="cannot read"):
        compare.read_line(f"{tmp_path}/missing.jsonl:r:10")
    for per_seed in (False, True):
        path.write_text(json.dumps(curve_line("r", 10, [1.0], [0.0], per_seed)) + "\n")
        with pytest.raises(UserError, match="one seed"):
            compare.from_curve_line(compare.read_line(f"{path}:r:10"), "score")
