"""How good must the judge be? What SAILOR gains from a start against its judge's accuracy on
the run's own windows.

Host-only. A comparison (`experiments/compare.py`, one folder or its blocks `seed<ROOT>/`) runs
arms that differ only in their judge (e.g. the expert dialled down by `RankerConfig.noise`, an
LLM, the random judge) beside the start kept fixed. Each judged arm is one point of the curve:

- its **window accuracy**: per update, the judge's share of (agent, reference player) pairs it
  ordered by skill (`SeedUpdate.agent_preferred`, scored with the reference player's skill
  measured on games of its own and the agent's on its segment's training games), averaged per
  seed, with a 95% t-interval over seeds;
- its **gain**: the paired difference in final score to the start kept fixed, with its 95%
  t-interval, the worst seed over its twin and the seeds below 0.8 of theirs.

`crossing` gives the accuracy at which a series of points (one update rule, several judges)
reaches a level, e.g. no loss (gain 0).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np

from sailor_jax.errors import UserError
from sailor_jax.logging import open_text, stored_path
from sailor_lab import report
from sailor_lab.comparison import worst_ratio

FLOOR = 0.8
"""A seed below this fraction of its kept-fixed twin's final score counts as a collapse."""


def comparison_folders(run: str) -> list[str]:
    """The comparison folders under `run`: its blocks `seed<ROOT>/`, or `run` itself.

    Raises:
      UserError: `run` holds no `variants/` folder.
    """
    blocks = sorted(os.path.join(run, d) for d in os.listdir(run) if d.startswith("seed")
                    and os.path.isdir(os.path.join(run, d, "variants"))) \
        if os.path.isdir(run) else []
    if not blocks and not os.path.isdir(os.path.join(run, "variants")):
        raise UserError(f"--run: no variants/ folder in {run!r} or its seed<ROOT>/ blocks",
                        "give a folder that experiments/compare.py wrote")
    return blocks or [run]


def read_results(folder: str, arm: str) -> dict | None:
    """`variants/<arm>/results.json` of a comparison folder (plain or gzipped), or None if the
    arm has not finished there."""
    path = stored_path(os.path.join(folder, "variants", arm, "results.json"))
    if not os.path.exists(path):
        return None
    with open_text(path) as f:
        return json.load(f)


def seed_updates(results: dict) -> list[list[dict]]:
    """Per seed, the update records (`SeedUpdate` JSON) of one arm's results, warm-up first,
    each with its segment's `train_score` for that seed added (None in the warm-up)."""
    records = results.get("warmup", []) + results["iterations"]
    seeds = len(records[0]["seeds"]) if records else 0
    return [[{**r["seeds"][s], "train_score": (r.get("train_score") or [None] * seeds)[s]}
             for r in records] for s in range(seeds)]


def window_accuracy(updates: Sequence[dict], reference_skill: float) -> float | None:
    """One seed's judge accuracy on its own windows: over its updates with a judged
    (agent, reference) share and a training score other than `reference_skill`, the mean of
    the share where the agent scored above the reference player and of one minus it where
    below. None when no update qualifies."""
    scored = [u["agent_preferred"] if u["train_score"] > reference_skill
              else 1.0 - u["agent_preferred"] for u in updates
              if u.get("agent_preferred") is not None and u.get("train_score") is not None
              and u["train_score"] != reference_skill]
    return float(np.mean(scored)) if scored else None


def final_scores(results: dict) -> list[float]:
    """Per-seed final greedy score (`evaluation.per_seed[].score_mean`)."""
    return report.per_seed_metrics(results["evaluation"])["score"]


def point(run: str, arm: str, fixed: str, reference_skill: float) -> dict | None:
    """The curve's point of `arm` in the comparison at `run`, paired with `fixed` block by
    block; None if the arm finished in no block that has its fixed twin.

    Returns:
      `{"arm", "seeds", "gain", "gain_ci", "worst_ratio", "below_floor", "window_accuracy",
      "window_accuracy_ci", "accuracy_seeds", "scores", "fixed_scores"}`; the accuracy is NaN
      where no seed recorded its judge's windows (`SeedUpdate.agent_preferred`).
    """
    scores, twins, accuracy = [], [], []
    for folder in comparison_folders(run):
        a, f = read_results(folder, arm), read_results(folder, fixed)
        if a is None or f is None:
            continue
        scores += final_scores(a)
        twins += final_scores(f)
        accuracy += [window_accuracy(u, reference_skill) for u in seed_updates(a)]
    if not scores:
        return None
    diff = report.paired_difference(scores, twins)
    known = [x for x in accuracy if x is not None]
    acc = report.mean_ci(known) if known else (float("nan"),) * 3
    return {"arm": arm, "seeds": len(scores), "gain": diff["mean"],
            "gain_ci": [diff["ci_low"], diff["ci_high"]], "worst_ratio": worst_ratio(scores, twins),
            "below_floor": int(sum(a < FLOOR * b for a, b in zip(scores, twins, strict=True))),
            "window_accuracy": acc[0], "window_accuracy_ci": [acc[1], acc[2]],
            "accuracy_seeds": len(known), "scores": scores, "fixed_scores": twins}


def crossing(accuracy: Sequence[float], value: Sequence[float], level: float = 0.0
             ) -> float | None:
    """The lowest accuracy at which the piecewise-linear curve `value(accuracy)` (points
    sorted by accuracy) reaches `level` and stays at or above it; None if it never does.
    Used on the mean gain and on its interval's ends, which bound the crossing."""
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


def series_crossing(points: Sequence[dict], level: float = 0.0) -> dict:
    """Where a series' gain reaches `level` (`crossing`): of the mean and of the interval's
    upper and lower ends (the crossing's interval); points without an accuracy are left out."""
    have = [p for p in points if np.isfinite(p["window_accuracy"])]
    acc = [p["window_accuracy"] for p in have]
    if not have:
        return {"mean": None, "from_ci_high": None, "from_ci_low": None}
    return {"mean": crossing(acc, [p["gain"] for p in have], level),
            "from_ci_high": crossing(acc, [p["gain_ci"][1] for p in have], level),
            "from_ci_low": crossing(acc, [p["gain_ci"][0] for p in have], level)}
