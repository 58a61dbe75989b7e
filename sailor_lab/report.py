"""Result tables over seeds: mean and 95% confidence interval per variant. Host-only.

One row per variant (or per reward in the transfer test). Seeds are the unit of replication:
each seed's greedy-policy evaluation (mean over its games) is one sample, and the interval is
Student's t interval of the mean over seeds, `mean +/- t_{(1+c)/2, S-1} * sd / sqrt(S)` with the
sample standard deviation (ddof=1). With one seed the interval is undefined (NaN, empty cells).
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import platform
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.stats

from sailor_jax.logging import open_text, to_jsonable

TILES: tuple[int, ...] = (512, 1024, 2048, 4096)
METRICS: tuple[str, ...] = ("score", *(f"tile_{t}" for t in TILES), "win_rate")
COLUMNS: tuple[str, ...] = (
    "variant", "judge", "seeds", "env_steps_per_seed",
    *(f"{m}_{k}" for m in METRICS for k in ("mean", "ci_low", "ci_high")),
    "wall_clock_s",
)


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval of the mean (`scipy.stats.ttest_1samp`'s
    `confidence_interval`).

    Args:
      values: `S >= 1` finite numbers (one per seed).
      confidence: coverage in (0, 1).

    Returns:
      `(mean, low, high)`; `low` and `high` are NaN when `S == 1`. Equal values give a
      zero-width interval.

    Raises:
      ValueError: no values, a non-finite value, or confidence outside (0, 1).
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        raise ValueError("mean_ci needs at least one value")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"mean_ci needs finite values, got {x.tolist()}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = float(x.mean())
    if x.size == 1:
        return mean, math.nan, math.nan
    if np.all(x == x[0]):  # no spread: scipy's t statistic is undefined, the interval a point
        return mean, mean, mean
    interval = scipy.stats.ttest_1samp(x, 0.0).confidence_interval(confidence)
    return mean, float(interval.low), float(interval.high)


def paired_difference(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> dict:
    """Per-seed differences `a - b` and their mean with a Student-t interval.

    Args:
      a, b: `S >= 1` per-seed scores each, seed s of both from the same start (common random
        numbers: same initial network and environments).

    Returns:
      `{"per_seed": [S], "mean", "ci_low", "ci_high", "wins"}` (`wins`: seeds where a > b;
      the interval is NaN for S = 1).

    Raises:
      ValueError: lengths differ, or as `mean_ci`.
    """
    if len(a) != len(b):
        raise ValueError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    mean, low, high = mean_ci(d, confidence)
    return {"per_seed": d.tolist(), "mean": mean, "ci_low": low, "ci_high": high,
            "wins": int(np.sum(d > 0))}


def recovery_fraction(method: Sequence[float], start: Sequence[float], reference: Sequence[float],
                      confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> dict:
    """How much of the gap from a wrong start to a reference a method closes, per seed paired.

    `(mean(method) - mean(start)) / (mean(reference) - mean(start))`: 0 = no better than the
    start kept fixed, 1 = as good as the reference (e.g. SAILOR from a wrong theta, the wrong
    theta kept fixed, theta0 kept fixed). The interval is a paired percentile bootstrap over
    seeds (`scipy.stats.bootstrap`, seeds resampled together across the three arms); with
    few seeds it is approximate, and it is wide or unbounded when the reference's gap over the
    start is itself near 0 (a resample with a zero gap gives an infinite ratio).

    Args:
      method, start, reference: `S >= 2` per-seed scores each, seed s of all three paired.
      confidence: interval coverage in (0, 1).
      resamples: bootstrap resamples; `seed`: its NumPy seed (same inputs, same interval).

    Returns:
      `{"fraction", "ci_low", "ci_high", "gap"}`, `gap` = `paired_difference(reference,
      start)`; `fraction` (and the interval) is NaN when that mean gap is 0.

    Raises:
      ValueError: lengths differ, fewer than 2 seeds, non-finite scores.
    """
    x = [np.asarray(v, np.float64).reshape(-1) for v in (method, start, reference)]
    if len({v.size for v in x}) != 1 or x[0].size < 2:
        raise ValueError(f"recovery_fraction needs 3 paired samples of equal length >= 2, "
                         f"got lengths {[v.size for v in x]}")
    if not all(np.all(np.isfinite(v)) for v in x):
        raise ValueError("recovery_fraction needs finite scores")

    def ratio(m, s, r, axis=-1):
        gap = np.mean(r, axis=axis) - np.mean(s, axis=axis)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(gap == 0, np.nan, (np.mean(m, axis=axis) - np.mean(s, axis=axis)) / gap)

    fraction = float(ratio(*x))
    gap = paired_difference(x[2], x[1], confidence)
    if not math.isfinite(fraction):  # no gap to close: nothing to resample
        return {"fraction": math.nan, "ci_low": math.nan, "ci_high": math.nan, "gap": gap}
    res = scipy.stats.bootstrap(tuple(x), ratio, paired=True, vectorized=True,
                                confidence_level=confidence, n_resamples=resamples,
                                method="percentile", rng=np.random.default_rng(seed))
    low, high = res.confidence_interval
    return {"fraction": fraction, "ci_low": float(low), "ci_high": float(high), "gap": gap}


def per_seed_metrics(evaluation: dict) -> dict[str, list[float]]:
    """Per-seed samples of every table metric from an `evaluate_params` dict (`per_seed`).

    Raises:
      ValueError: the evaluation has no `per_seed` entries.
    """
    seeds = evaluation.get("per_seed") or []
    if not seeds:
        raise ValueError("the evaluation has no per-seed results ('per_seed')")
    out = {"score": [e["score_mean"] for e in seeds], "win_rate": [e["win_rate"] for e in seeds]}
    for t in TILES:
        out[f"tile_{t}"] = [e["max_tile_rates"][str(t)] for e in seeds]
    return out


def summary_row(variant: str, evaluation: dict, *, judge: str = "", env_steps_per_seed: int = 0,
                wall_clock_s: float = math.nan, confidence: float = 0.95) -> dict:
    """One table row (keys `COLUMNS`): mean and CI over seeds of every metric in `METRICS`."""
    row = {"variant": variant, "judge": judge, "env_steps_per_seed": int(env_steps_per_seed),
           "wall_clock_s": float(wall_clock_s)}
    samples = per_seed_metrics(evaluation)
    row["seeds"] = len(samples["score"])
    for metric, values in samples.items():
        row[f"{metric}_mean"], row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = mean_ci(
            values, confidence)
    return {c: row[c] for c in COLUMNS}


def write_csv(rows: Sequence[dict], path: str) -> None:
    """Write rows (keys `COLUMNS`) as CSV; NaN is written as an empty cell."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v)
                             for k, v in row.items()})


def read_csv(path: str) -> list[dict]:
    """Read a table written by `write_csv` (numbers as float/int, empty cells as NaN), plain
    or gzip-compressed (`logging.open_text`)."""
    with open_text(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for k in COLUMNS[2:]:
            row[k] = (int(row[k]) if k in ("seeds", "env_steps_per_seed")
                      else float(row[k]) if row[k] != "" else math.nan)
    return rows


def _fmt(row: dict, metric: str, digits: int) -> str:
    mean, lo, hi = (row[f"{metric}_{k}"] for k in ("mean", "ci_low", "ci_high"))
    if math.isnan(lo):
        return f"{mean:,.{digits}f}"
    return f"{mean:,.{digits}f} [{lo:,.{digits}f}, {hi:,.{digits}f}]"


def markdown_table(rows: Sequence[dict], confidence: float = 0.95) -> str:
    """A GitHub-markdown table: mean [CI] over seeds of score and tile rates, wall-clock."""
    pct = f"{round(confidence * 100)}%"
    head = ["variant", "judge", "seeds", "env steps/seed", f"score, mean [{pct} CI]",
            *(f"{t}" if t != 2048 else "2048 (win)" for t in TILES), "wall-clock (s)"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|"]
    for r in rows:
        cells = [r["variant"], r["judge"], str(r["seeds"]), f"{r['env_steps_per_seed']:,}",
                 _fmt(r, "score", 0), *(_fmt(r, f"tile_{t}", 2) for t in TILES),
                 f"{r['wall_clock_s']:,.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_tables(rows: Sequence[dict], out_dir: str, stem: str,
                 confidence: float = 0.95) -> tuple[str, str]:
    """Write `<stem>.csv` and `<stem>.md` into `out_dir`; return both paths."""
    csv_path, md_path = (os.path.join(out_dir, f"{stem}.{ext}") for ext in ("csv", "md"))
    write_csv(rows, csv_path)
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(markdown_table(rows, confidence))
    return csv_path, md_path


def write_json_gz(path: str, obj: Any) -> None:
    """Write `obj` (`to_jsonable` first) as indented JSON, gzip level 9 without a timestamp,
    as the raw results under `benchmarks/results/` are kept (`gzip -9 -n`). Host-only."""
    raw = json.dumps(to_jsonable(obj), indent=1).encode()
    with open(path, "wb") as f:
        f.write(gzip.compress(raw, compresslevel=9, mtime=0))


def machine() -> dict[str, str]:
    """Where a benchmark ran: `device` (JAX's first device), `device_kind` and
    `device_count` (all devices JAX sees), `cpu` (the CPU model name, as `lscpu` prints it),
    `cpu_type` (that name with its family and model: seeded results pair only within one
    type) and `jax` (version). Record it with every measured number. Host-only."""
    import jax

    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    cpu = info.get("model name") or platform.processor() or platform.machine()
    kind = (f"{cpu}, family {info['cpu family']} model {info['model']}"
            if "cpu family" in info and "model" in info else cpu)
    return {"device": str(jax.devices()[0]), "device_kind": jax.devices()[0].device_kind,
            "device_count": str(jax.device_count()), "cpu": cpu, "cpu_type": kind,
            "jax": jax.__version__}
