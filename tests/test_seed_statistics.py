"""sailor_lab.seed_statistics against independent references: rliable's IQM and probability
of improvement recomputed by hand, performance profiles against rliable's own, the power of a
paired t-test from the noncentral t distribution (scipy), and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from sailor_lab import comparison, seed_statistics

RNG = np.random.default_rng(0)
X = RNG.normal(11_000, 1_500, 40)
Y = RNG.normal(10_500, 1_500, 32)


def _power(difference: float, sd: float, n: int) -> float:
    """Power of a two-sided paired t-test at 5%, from the noncentral t (the reference)."""
    crit = scipy.stats.t.ppf(1 - seed_statistics.ALPHA / 2, n - 1)
    nc = difference / sd * math.sqrt(n)
    return float(scipy.stats.nct.sf(crit, n - 1, nc) + scipy.stats.nct.cdf(-crit, n - 1, nc))


def test_iqm_and_mean_with_bootstrap_intervals():
    got = seed_statistics.aggregate_intervals({"x": X, "y": Y}, reps=2000)
    for arm, v in (("x", X), ("y", Y)):
        s = np.sort(v)
        q = len(s) // 4  # 40 and 32 seeds: the middle half exactly
        assert got[arm]["iqm"][0] == pytest.approx(s[q:len(s) - q].mean())
        assert got[arm]["mean"][0] == pytest.approx(v.mean())
        for point, low, high in got[arm].values():
            assert low < point < high
        width = got[arm]["mean"][2] - got[arm]["mean"][1]
        t_width = 2 * 1.96 * v.std(ddof=1) / math.sqrt(len(v))
        assert 0.8 * t_width < width < 1.2 * t_width  # the bootstrap near the normal interval
    state = np.random.get_state()[1].copy()
    assert seed_statistics.aggregate_intervals({"x": X}, reps=2000) == {"x": got["x"]}
    assert (np.random.get_state()[1] == state).all()  # NumPy's global generator restored


def test_probability_of_improvement_counts_pairs_of_seeds():
    point, low, high = seed_statistics.probability_of_improvement(X, Y, reps=2000)
    assert seed_statistics.probability_of_improvement(X, Y, reps=2000) == [point, low, high]
    by_hand = np.mean([(a > b) + 0.5 * (a == b) for a in X for b in Y])
    assert point == pytest.approx(by_hand) and low < point < high
    assert seed_statistics.probability_of_improvement(Y, X, reps=2000)[0] == pytest.approx(
        1 - by_hand)
    assert seed_statistics.probability_of_improvement([1.0, 2.0], [1.0, 2.0], reps=200)[0] == 0.5


@pytest.mark.parametrize(("sd", "n"), [(909.0, 74), (955.0, 80), (100.0, 8)])
def test_the_detectable_difference_has_80_percent_power(sd, n):
    d = seed_statistics.detectable_difference(sd, n)
    assert _power(d, sd, n) == pytest.approx(0.8, abs=1e-3)
    needed = seed_statistics.seeds_needed(d * 1.0001, sd)
    assert needed == n  # the inverse of each other
    assert _power(300, sd, seed_statistics.seeds_needed(300, sd)) >= 0.8
    assert _power(300, sd, seed_statistics.seeds_needed(300, sd) - 1) < 0.8


def test_the_pilot_gives_the_stopping_rules_count():
    """docs/repair.md's rule: +300 at 80% power needs 75 seeds at SD 909 and 82 at 955."""
    assert seed_statistics.seeds_needed(300, 909) == 75
    assert seed_statistics.seeds_needed(300, 955) == 82


def test_power_summary_reads_the_paired_sd():
    d = X[:32] - Y
    got = seed_statistics.power_summary(d)
    assert got["seeds"] == 32 and got["paired_sd"] == pytest.approx(np.std(d, ddof=1))
    assert got["detectable_80"] == pytest.approx(
        seed_statistics.detectable_difference(got["paired_sd"], 32))


def test_profiles_are_rliables_score_distributions_with_their_bands():
    """The all-taus profile gives rliable's own profile and bootstrap bands (its default
    `score_distributions`, one tau at a time), draw for draw."""
    from rliable import library

    data = {"x": X.reshape(-1, 1), "y": Y.reshape(-1, 1)}
    taus = np.linspace(8_000, 14_000, 13)
    with seed_statistics._seeded(0):
        want = library.create_performance_profile(data, taus, reps=200)
    with seed_statistics._seeded(0):
        got = library.create_performance_profile(
            data, taus, custom_profile_func=seed_statistics.score_distribution, reps=200)
    for arm in data:
        np.testing.assert_array_equal(got[0][arm], want[0][arm])
        np.testing.assert_array_equal(got[1][arm], want[1][arm])
    assert got[0]["x"][0] == np.mean(X > 8_000) and got[0]["x"].shape == (13,)


def test_profiles_figure(tmp_path):
    path = str(tmp_path / "p.png")
    seed_statistics.plot_profiles({"x": X, "y": Y}, path, "two arms")
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_pool_keeps_pairs_and_refuses_other_arms():
    a = {"r": {"score": [1.0, 2.0], "final_theta": [[0.0], [1.0]]}, "s": {"score": [3.0, 4.0],
                                                                         "final_theta": [[2.0],
                                                                                         [3.0]]}}
    b = {"r": {"score": [5.0], "final_theta": [[4.0]]}, "s": {"score": [6.0],
                                                             "final_theta": [[5.0]]}}
    assert comparison.pool([a, b]) == {
        "r": {"score": [1.0, 2.0, 5.0], "final_theta": [[0.0], [1.0], [4.0]]},
        "s": {"score": [3.0, 4.0, 6.0], "final_theta": [[2.0], [3.0], [5.0]]}}
    with pytest.raises(ValueError, match="same arms"):
        comparison.pool([a, {"r": b["r"]}])
    with pytest.raises(ValueError, match="same arms"):
        comparison.pool([])


@pytest.mark.parametrize("call", [
    lambda: seed_statistics.aggregate_intervals({"x": [1.0]}),
    lambda: seed_statistics.aggregate_intervals({"x": [1.0, math.nan]}),
    lambda: seed_statistics.probability_of_improvement([1.0, 2.0], [math.inf, 1.0]),
    lambda: seed_statistics.detectable_difference(100.0, 1),
    lambda: seed_statistics.detectable_difference(math.nan, 10),
    lambda: seed_statistics.power_summary([1.0]),
])
def test_bad_input_is_refused(call):
    with pytest.raises(ValueError):
        call()


def test_seeds_needed_has_no_answer_rather_than_an_error():
    """A difference or SD that is not positive and finite has no seed count: None."""
    assert seed_statistics.seeds_needed(0.0, 100.0) is None
    assert seed_statistics.seeds_needed(300.0, -1.0) is None
    assert seed_statistics.seeds_needed(float("nan"), 100.0) is None
