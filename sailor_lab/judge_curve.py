"""How good must the judge be? Judge accuracy against what SAILOR does with it.

Host-only. `benchmarks/judge_curve.py` measures, per level of the dialled-quality judge
(`RankerConfig.noise`), its skill-order accuracy on the graded pool (`judge_eval`) and the
recommended SAILOR's repair and no-loss at that level (`experiments/compare.py`); the result is
a *curve*, a JSON list of points `{"label", "noise", "queries", "accuracy", "accuracy_ci",
"starts": {start: {"recovery", "recovery_ci", ...}}}`. This module holds the arithmetic: the
accuracy of a judge with a group-bootstrap interval, where recovery crosses a level, and what
a committed curve predicts for an accuracy a user measured (`benchmarks/judge_quality.py`
prints it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np

from sailor_jax.logging import open_text, stored_path
from sailor_jax.types import Ranking
from sailor_lab import report
from sailor_lab.judge_eval import pair_counts, skill_truth


def group_accuracy(rankings: Sequence[Ranking | None], epsilons: Sequence[np.ndarray],
                   resamples: int = 2000, seed: int = 0) -> dict:
    """Skill-order accuracy (`judge_eval.judge_metrics`) with a 95% bootstrap interval over
    groups (pairs within a group share trajectories, so groups are the independent unit).

    Args:
      rankings: the judge's ranking of each group (None: every pair counts wrong).
      epsilons: per group, `[M]` epsilons of its players.

    Returns:
      `{"accuracy": float, "accuracy_ci": [low, high], "pairs": int}`; NaN without pairs.
    """
    right, total = pair_counts(rankings, skill_truth(epsilons))
    if total.sum() == 0:
        return {"accuracy": float("nan"), "accuracy_ci": [float("nan")] * 2, "pairs": 0}
    pick = np.random.default_rng(seed).integers(0, len(total), (resamples, len(total)))
    boot = right[pick].sum(axis=1) / np.maximum(total[pick].sum(axis=1), 1)
    return {"accuracy": float(right.sum() / total.sum()),
            "accuracy_ci": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
            "pairs": int(total.sum())}


def crossing(accuracy: Sequence[float], value: Sequence[float], level: float = 0.5
             ) -> float | None:
    """The lowest accuracy at which the piecewise-linear curve `value(accuracy)` (points
    sorted by accuracy) reaches `level` and stays at or above it; None if it never does.
    Used on the mean recovery and on its interval's ends, which bound the crossing."""
    order = np.argsort(accuracy)
    x, y = np.asarray(accuracy, float)[order], np.asarray(value, float)[order]
    above = y >= level
    if not above[-1]:
        return None
    k = len(y) - 1
    while k > 0 and above[k - 1]:
        k -= 1
    if k == 0:
        return float(x[0])
    x0, x1, y0, y1 = x[k - 1], x[k], y[k - 1], y[k]
    return float(x0 + (level - y0) * (x1 - x0) / (y1 - y0))


def load_curve(path: str) -> dict | None:
    """The curve at `path` (`benchmarks/results/judge_curve/curve.json`, kept as `.json.gz`),
    or None if neither the plain nor the compressed file exists."""
    if not os.path.exists(stored_path(path)):
        return None
    with open_text(path) as f:
        return json.load(f)


def _neighbours(curve: dict, accuracy: float) -> list[dict]:
    """The curve's 1x-query points around `accuracy`: the two it lies between, or the nearest
    one outside the measured range."""
    points = sorted((p for p in curve["points"] if p["queries"] == 1),
                    key=lambda p: p["accuracy"])
    upper = int(np.searchsorted([p["accuracy"] for p in points], accuracy))
    if 0 < upper < len(points):
        return points[upper - 1:upper + 1]
    return [points[min(upper, len(points) - 1)]]


def predict(curve: dict, accuracy: float) -> dict[str, dict]:
    """What the curve says SAILOR does with a judge of skill-order accuracy `accuracy`: per
    start, the band spanned by the 95% intervals of the two measured levels around it (the
    nearest one outside the measured range: an extrapolation, flagged).

    Returns:
      `{start: {"metric": "recovery" | "diff_to_fixed", "low": float, "high": float,
      "between": [accuracy, accuracy], "extrapolated": bool}}` over the curve's 1x-query
      points; a start without a recovery at those points is left out.
    """
    near = _neighbours(curve, accuracy)
    out = {}
    for start in near[0]["starts"]:
        cells = [p["starts"][start] for p in near]
        metric = cells[0]["metric"]
        if any(c[metric] is None for c in cells):  # no recovery measured there
            continue
        out[start] = {"metric": metric, "low": min(c[f"{metric}_ci"][0] for c in cells),
                      "high": max(c[f"{metric}_ci"][1] for c in cells),
                      "between": [near[0]["accuracy"], near[-1]["accuracy"]],
                      "extrapolated": len(near) == 1}
    return out


def prediction_line(curve: dict, accuracy: float) -> str:
    """One line for `judge_quality.py`: the band `predict` gives per start."""
    parts = []
    for start, band in predict(curve, accuracy).items():
        if band["metric"] == "recovery":
            parts.append(f"{start} recovery [{band['low']:+.2f}, {band['high']:+.2f}]")
        else:
            parts.append(f"{start} paired diff. to it kept fixed [{band['low']:+,.0f}, "
                         f"{band['high']:+,.0f}]")
    near = _neighbours(curve, accuracy)
    where = (f"outside the measured accuracies, nearest {near[0]['accuracy']:.3f}"
             if len(near) == 1 else f"between the measured accuracies "
             f"{near[0]['accuracy']:.3f} and {near[1]['accuracy']:.3f}")
    return f"the judge curve ({curve['setting']}) predicts, {where}: " + "; ".join(parts)


def crossings(points: list[dict], starts) -> dict[str, dict]:
    """Per wrong start, the accuracy at which recovery reaches 0.5 (`judge_curve.crossing`)
    on the 1x-query points: of the mean, and of the 95% interval's upper and lower ends (the
    crossing's interval); None where it does not within the measured range."""
    out = {}
    for start in starts:
        have = [p for p in points if p["queries"] == 1 and start != "theta0"
                and p["starts"][start]["recovery"] is not None]
        if not have:
            continue
        acc = [p["accuracy"] for p in have]
        cells = [p["starts"][start] for p in have]
        out[start] = {"mean": crossing(acc, [c["recovery"] for c in cells]),
                      "from_ci_high": crossing(acc, [c["recovery_ci"][1] for c in cells]),
                      "from_ci_low": crossing(acc, [c["recovery_ci"][0] for c in cells])}
    return out


def versus_random(points: list[dict]) -> None:
    """Add to every judged point, per start, its paired difference in final score to the
    random judge's arm from the same start (`diff_to_random`, `_ci`, `wins_over_random`):
    how much of what it did the judge's information did, beyond the guarded update's own
    drift. Seeds pair across the levels' folders (common random numbers)."""
    chance = next((p for p in points if p["noise"] is None), None)
    for p in points:
        if chance is None or p is chance:
            continue
        for start, cell in p["starts"].items():
            d = report.paired_difference(cell["scores"], chance["starts"][start]["scores"])
            cell |= {"diff_to_random": d["mean"], "diff_to_random_ci": [d["ci_low"], d["ci_high"]],
                     "wins_over_random": d["wins"]}
