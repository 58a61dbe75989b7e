"""Compare two recipes' learning curves at one budget, pooling the seeds of several learning runs.

    python benchmarks/compare_recipes.py \\
        --a benchmarks/results/learning_dqn/learning.jsonl.gz:dqn_afterstates:1048576 \\
        --b benchmarks/results/learning_dqn/learning.jsonl.gz:dqn:1048576

Each `FILE:RECIPE:ENV_STEPS` names one evaluation of a `benchmarks/learning.py` curve (JSON
lines). Its seeds come from `score_per_seed` / `win_rate_per_seed` where the line has them,
else from `seeds`, the mean and the 95% Student-t interval (exact: the interval fixes the
sample standard deviation). Learning runs started from different seeds are independent, so
the groups of a side pool into one sample (exact pooled mean and variance). Prints, per metric
(mean game score, 2048 rate), each side's mean with its 95% t-interval and the difference
a - b with Welch's 95% interval (unequal variances, Welch-Satterthwaite degrees of freedom),
both statsmodels' (`DescrStatsW`, `CompareMeans`); `--json` prints it as one JSON line.
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics

import numpy as np
import scipy.stats

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import open_text

METRICS = ("score", "win_rate")


@dataclasses.dataclass(frozen=True)
class Sample:
    """Summary of per-seed values: count, mean and sample standard deviation (ddof 1)."""

    n: int
    mean: float
    sd: float


def from_curve_line(line: dict, metric: str) -> Sample:
    """The seeds' `metric` ("score" or "win_rate") of one curve line as a `Sample`.

    Raises:
      UserError: the line holds one seed (no standard deviation).
    """
    if line["seeds"] < 2:
        raise UserError(f"{line['recipe']} at {line['env_steps']:,} steps: one seed, no "
                        "standard deviation to pool")
    values = line.get(f"{metric}_per_seed")
    if values is not None:
        return Sample(len(values), statistics.fmean(values), statistics.stdev(values))
    n, mean, high = line["seeds"], line[f"{metric}_mean"], line[f"{metric}_ci_high"]
    return Sample(n, mean, (high - mean) * math.sqrt(n) / scipy.stats.t.ppf(0.975, n - 1))


def pool(samples: list[Sample]) -> Sample:
    """One `Sample` of all the seeds of independent `samples` (exact, not an approximation)."""
    n = sum(s.n for s in samples)
    mean = sum(s.n * s.mean for s in samples) / n
    ss = sum((s.n - 1) * s.sd ** 2 + s.n * (s.mean - mean) ** 2 for s in samples)
    return Sample(n, mean, math.sqrt(ss / (n - 1)))


def descriptive(s: Sample):
    """`s` as statsmodels' `DescrStatsW`: the two values `mean -/+ sd * sqrt((n - 1) / n)` with
    frequency weight `n / 2` each, which have exactly `s`'s count, mean and sample SD (all
    that a t-interval of the mean, or Welch's of a difference, depends on)."""
    from statsmodels.stats.weightstats import DescrStatsW  # deferred: 1 s of the CLI's start

    d = s.sd * math.sqrt((s.n - 1) / s.n)
    return DescrStatsW(np.array([s.mean - d, s.mean + d]), weights=np.full(2, s.n / 2))


def t_interval(s: Sample, confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of `s` (statsmodels' `DescrStatsW.tconfint_mean`, n - 1
    degrees of freedom); the mean twice when `s.sd` is 0. Same units as `s.mean`."""
    low, high = descriptive(s).tconfint_mean(1 - confidence)
    return float(low), float(high)


def welch_difference(a: Sample, b: Sample, confidence: float = 0.95) -> dict:
    """Mean difference a - b with Welch's interval (Welch 1947; Satterthwaite df), from
    statsmodels' `CompareMeans.tconfint_diff(usevar="unequal")` and `dof_satt`.

    Returns:
      `{"diff", "ci_low", "ci_high", "df"}` (floats, units of the means). When no seed of
      either sample differs from its sample's mean (e.g. a 2048 rate of 0 everywhere), the
      interval is the difference itself and df is infinite.
    """
    from statsmodels.stats.weightstats import CompareMeans

    diff = a.mean - b.mean
    if a.sd == 0 and b.sd == 0:
        return {"diff": diff, "ci_low": diff, "ci_high": diff, "df": math.inf}
    means = CompareMeans(descriptive(a), descriptive(b))
    low, high = means.tconfint_diff(1 - confidence, usevar="unequal")
    return {"diff": diff, "ci_low": float(low), "ci_high": float(high),
            "df": float(means.dof_satt())}


def read_lines(path: str) -> list[dict]:
    """The curve lines (JSON lines of `benchmarks/learning.py --json`) of one file, plain or
    gzip-compressed (`FILE.jsonl.gz`, or `FILE.jsonl` when only the compressed copy exists).

    Raises:
      UserError: an unreadable file.
    """
    try:
        with open_text(path) as f:
            return [json.loads(x) for x in f if x.strip()]
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None


def read_line(spec: str) -> dict:
    """The curve line named by `FILE:RECIPE:ENV_STEPS`.

    Raises:
      UserError: a malformed spec, an unreadable file, or no such line in it.
    """
    try:
        path, recipe, steps = spec.rsplit(":", 2)
        steps = int(steps)
    except ValueError:
        raise UserError(f"--a/--b {spec!r}: expected FILE:RECIPE:ENV_STEPS") from None
    found = [x for x in read_lines(path) if x["recipe"] == recipe and x["env_steps"] == steps]
    if not found:
        raise UserError(f"{path}: no evaluation of {recipe!r} at {steps:,} env steps")
    return found[-1]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Compare recipe a with recipe b, seeds pooled over runs."""

    a: tuple[str, ...]
    """FILE:RECIPE:ENV_STEPS evaluations whose seeds form side a."""
    b: tuple[str, ...]
    """FILE:RECIPE:ENV_STEPS evaluations whose seeds form side b."""
    json: bool = False
    """Print one JSON line instead of the table."""


def compare(args: Args) -> dict:
    lines = {side: [read_line(spec) for spec in getattr(args, side)] for side in ("a", "b")}
    out = {}
    for metric in METRICS:
        a, b = (pool([from_curve_line(x, metric) for x in lines[s]]) for s in ("a", "b"))
        out[metric] = {"a": {"seeds": a.n, "mean": a.mean, "ci": t_interval(a)},
                       "b": {"seeds": b.n, "mean": b.mean, "ci": t_interval(b)},
                       "a_minus_b": welch_difference(a, b)}
    return out


def main(args: Args) -> dict:
    result = compare(args)
    if args.json:
        print(json.dumps(result))
        return result
    for metric, r in result.items():
        a, b, d = r["a"], r["b"], r["a_minus_b"]
        f = ",.0f" if metric == "score" else ".3f"
        print(f"{metric}: a {a['mean']:{f}} [{a['ci'][0]:{f}}, {a['ci'][1]:{f}}] ({a['seeds']} "
              f"seeds)  b {b['mean']:{f}} [{b['ci'][0]:{f}}, {b['ci'][1]:{f}}] ({b['seeds']} "
              f"seeds)  a - b {d['diff']:+{f}} [{d['ci_low']:+{f}}, {d['ci_high']:+{f}}]")
    return result


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
