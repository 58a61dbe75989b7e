"""The field's statistics over seeds, from its libraries: what an experiment of S seeds can
say and what it could have detected. Host-only.

- `rliable` (Agarwal et al. 2021, "Deep Reinforcement Learning at the Edge of the
  Statistical Precipice"): the interquartile mean (IQM) and the mean of the per-seed scores
  with stratified percentile-bootstrap intervals, the probability of improvement of one arm
  over another (P(X > Y), the Mann-Whitney statistic over runs, with its bootstrap interval),
  and performance profiles (the fraction of seeds scoring above tau, with bands).
- `statsmodels` (`TTestPower`): the power of a two-sided paired t-test over S paired seeds,
  given the SD of the per-seed differences: the smallest paired difference it detects at 80%
  power, and the seeds a target difference needs.

2048 is one task, so rliable's score matrices here are `[S, 1]` of raw game scores (no
normalisation; stratification over one task is plain resampling of seeds).
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

POWER = 0.8
"""The power at which `detectable_difference` is stated."""
ALPHA = 0.05
"""The two-sided level of every test and the 95% of every interval."""
REPS = 10_000
"""Bootstrap resamples of every rliable interval."""
PROFILE_REPS = 2_000
"""Bootstrap resamples of a performance profile's bands (`plot_profiles`)."""


def _matrix(values: Sequence[float], what: str) -> np.ndarray:
    x = np.asarray(values, np.float64).reshape(-1, 1)
    if x.shape[0] < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"{what} needs >= 2 finite per-seed values, got {x.ravel().tolist()}")
    return x


@contextlib.contextmanager
def _seeded(seed: int):
    """rliable's stratified bootstrap draws from NumPy's global generator (its
    `random_state` reaches only arch's): seed it for the call and restore it after. arch's
    warning that `random_state` is deprecated, which rliable triggers, is silenced."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="random_state is deprecated",
                                    category=FutureWarning)
            yield np.random.RandomState(seed)
    finally:
        np.random.set_state(state)


def aggregate_intervals(scores: Mapping[str, Sequence[float]], reps: int | None = None,
                        seed: int = 0) -> dict[str, dict[str, list[float]]]:
    """IQM and mean of each arm's per-seed scores, with rliable's stratified bootstrap 95%
    intervals (`rliable.library.get_interval_estimates`, percentile method).

    Args:
      scores: arm name -> `S >= 2` per-seed scores (float, game points).
      reps: bootstrap resamples (None: `REPS`); seed: the NumPy seed of each arm's resamples
        (same scores, same interval, whatever the other arms).

    Returns:
      arm name -> `{"iqm": [point, low, high], "mean": [point, low, high]}`.

    Raises:
      ValueError: an arm with fewer than 2 seeds or a non-finite score.
    """
    from rliable import library, metrics

    data = {arm: _matrix(v, f"arm {arm!r}") for arm, v in scores.items()}
    reps = REPS if reps is None else reps

    def both(x):
        return np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x)])

    out = {}
    for arm, x in data.items():  # each arm its own resamples: the same whatever arms come along
        with _seeded(seed) as rng:
            points, cis = library.get_interval_estimates(
                {arm: x}, both, reps=reps, confidence_interval_size=1 - ALPHA,
                random_state=rng)
        out[arm] = {name: [float(points[arm][i]), float(cis[arm][0][i]), float(cis[arm][1][i])]
                    for i, name in enumerate(("iqm", "mean"))}
    return out


def probability_of_improvement(x: Sequence[float], y: Sequence[float],
                               reps: int | None = None, seed: int = 0) -> list[float]:
    """P(X > Y): the probability that a seed of arm X scores above a seed of arm Y (ties count
    half), with rliable's bootstrap 95% interval (`rliable.metrics.probability_of_improvement`;
    the seeds of each arm are resampled on their own, not as pairs; `reps` None: `REPS`).

    Args:
      x, y: `S >= 2` per-seed scores each (float).

    Returns:
      `[point, low, high]` in [0, 1]; 0.5 = neither arm tends to score higher.

    Raises:
      ValueError: fewer than 2 seeds or a non-finite score.
    """
    from rliable import library, metrics

    pair = {"x,y": (_matrix(x, "x"), _matrix(y, "y"))}
    with _seeded(seed) as rng:
        points, cis = library.get_interval_estimates(
            pair, metrics.probability_of_improvement, reps=REPS if reps is None else reps,
            confidence_interval_size=1 - ALPHA, random_state=rng)
    return [float(points["x,y"]), float(cis["x,y"][0][0]), float(cis["x,y"][1][0])]


def _solve_power(**kwargs) -> float:
    """`TTestPower().solve_power(..., alpha=ALPHA, alternative="two-sided")`, NaN where its
    root finder fails (statsmodels then warns and returns NaN; the warning is not printed)."""
    from statsmodels.stats.power import TTestPower
    from statsmodels.tools.sm_exceptions import ConvergenceWarning  # its filters set on import

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        value = TTestPower().solve_power(alpha=ALPHA, alternative="two-sided", **kwargs)
    value = float(np.asarray(value).squeeze())
    return value if math.isfinite(value) else float("nan")


def detectable_difference(paired_sd: float, seeds: int, power: float = POWER) -> float:
    """The smallest paired mean difference that a two-sided paired t-test at level `ALPHA`
    over `seeds` paired seeds detects with probability `power`, for per-seed differences of
    SD `paired_sd` (`statsmodels.stats.power.TTestPower`; game points, as `paired_sd`). NaN
    where statsmodels' solver finds no answer.

    Raises:
      ValueError: fewer than 2 seeds, or a negative or non-finite SD.
    """
    if seeds < 2 or not math.isfinite(paired_sd) or paired_sd < 0:
        raise ValueError(f"detectable_difference needs >= 2 seeds and a finite SD >= 0, got "
                         f"{seeds} seeds and SD {paired_sd}")
    return _solve_power(effect_size=None, nobs=seeds, power=power) * paired_sd


def seeds_needed(difference: float, paired_sd: float, power: float = POWER) -> int | None:
    """Paired seeds a two-sided paired t-test at level `ALPHA` needs to detect a mean
    difference `difference` with probability `power`, at per-seed SD `paired_sd` (both game
    points; `TTestPower`, rounded up, at least 2). A difference so large against its SD that
    statsmodels' solver fails needs 2 when 2 seeds reach the power. None where there is no
    answer: a difference or SD that is not positive and finite, or a solver that fails.
    Raises nothing.
    """
    from statsmodels.stats.power import TTestPower

    if not (difference > 0 and paired_sd > 0 and math.isfinite(difference / paired_sd)):
        return None
    effect = difference / paired_sd
    n = _solve_power(effect_size=effect, nobs=None, power=power)
    if math.isfinite(n):
        return max(2, int(math.ceil(n)))
    reached = TTestPower().power(effect_size=effect, nobs=2, alpha=ALPHA,
                                 alternative="two-sided")
    return 2 if reached >= power else None


def power_summary(differences: Sequence[float]) -> dict:
    """What a paired comparison's seeds could detect: `{"seeds", "paired_sd",
    "detectable_80"}` (`detectable_difference` at the sample SD, ddof=1, of the per-seed
    differences; game points).

    Raises:
      ValueError: fewer than 2 differences or a non-finite one.
    """
    d = _matrix(differences, "power_summary").ravel()
    sd = float(d.std(ddof=1))
    return {"seeds": int(d.size), "paired_sd": sd,
            "detectable_80": detectable_difference(sd, int(d.size))}


def score_distribution(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
    """The fraction of `scores` (any shape, every run of every task) above each tau: `[T]`
    float64 for `taus` `[T]`. rliable's `score_distributions` (its `run_score_deviation` at each
    tau through `np.vectorize`), computed for all taus at once: the same numbers; a profile of
    2 arms x 16 seeds at 101 taus with 2,000 resamples takes 0.14 s against rliable's 2.9 s
    (AMD EPYC, 2 cores)."""
    return np.mean(np.reshape(scores, (-1, 1)) > np.reshape(taus, (1, -1)), axis=0)


def plot_profiles(scores: Mapping[str, Sequence[float]], path: str, title: str,
                  points: int = 101) -> None:
    """A performance-profile figure (score distributions): for each arm, the fraction of its
    seeds whose final score exceeds tau, over tau from the lowest to the highest score, with
    rliable's bootstrap 95% bands (`create_performance_profile`, `plot_performance_profiles`).

    Raises:
      ValueError: an arm with fewer than 2 seeds or a non-finite score.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import library, plot_utils

    data = {arm: _matrix(v, f"arm {arm!r}") for arm, v in scores.items()}
    every = np.concatenate(list(data.values()))
    taus = np.linspace(every.min(), every.max(), points)
    with _seeded(0):
        profiles, cis = library.create_performance_profile(
            data, taus, custom_profile_func=score_distribution, reps=PROFILE_REPS)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plot_utils.plot_performance_profiles(
        profiles, taus, performance_profile_cis=cis, ax=ax,
        colors=dict(zip(data, plt.cm.tab10.colors, strict=False)),
        xlabel=r"final greedy score $\tau$", ylabel=r"fraction of seeds with score $> \tau$")
    ax.legend(ax.get_lines()[:len(data)], [f"{arm} ({len(v)} seeds)" for arm, v in data.items()],
              loc="lower left")
    ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
