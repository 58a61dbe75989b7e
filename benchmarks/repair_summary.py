"""Repair over every start of one `experiments/compare.py` run: the distribution, not a best case.

Reads the run's table record (`repair.json`, or its compressed copy `repair.json.gz`) and
sorts every start by how far it kept fixed falls below theta0 kept fixed (paired mean, as the
start screen did): **gross** more than 30% below, **mild** 10-30% below, **good** less than 10%
below or above (theta0 itself is good). Then, per start, the `METHOD` arm against its target:

- gross: recovery fraction >= 0.8 with the lower end of its 95% interval >= 0.5;
- mild: the paired gain over the start kept fixed with its interval above 0;
- good (no loss): the paired difference to the start kept fixed >= 0 within its interval
  (upper end >= 0) and no seed below 0.8 of its fixed twin;

the paired difference to the random-judge control where that arm ran; and over the gross
starts, the distribution of the recovery fraction (min, quartiles, median, max) and how many
meet the target.

    python benchmarks/repair_summary.py --run runs/repair49 --out runs/repair49/summary

Writes `summary.md`, `summary.json.gz` and `recovery.png` (recovery per gross start and the
paired gain per mild and good start, 95% intervals; hollow: the random-judge control) in
`--out`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.config.arms import ARMS
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import open_text, stored_path
from sailor_lab import report
from sailor_lab.comparison import REFERENCE
from sailor_lab.starts import severity


@dataclasses.dataclass(frozen=True)
class Args:
    """One compare.py run, summarised over its starts."""

    run: str
    """The compare.py folder (or the path of its compare.json, or a stored repair.json.gz)."""
    method: str = "sailor"
    """The SAILOR arm summarised."""
    out: str = ""
    """Where summary.md, summary.json.gz and recovery.png go (none: print only)."""


def load_rows(run: str) -> list[dict]:
    """The rows of a comparison's table record (`comparison.summarize`'s output): `compare.json`,
    or `repair.json` in a folder stored before the comparison had that name."""
    path = run if run.endswith((".json", ".json.gz")) else os.path.join(run, "compare.json")
    if not os.path.exists(stored_path(path)) and os.path.exists(stored_path(
            os.path.join(run, "repair.json"))):
        path = os.path.join(run, "repair.json")
    try:
        with open_text(path) as f:
            return json.load(f)["rows"]
    except FileNotFoundError:
        raise UserError(f"--run: no compare.json (or .json.gz) at {path}",
                        "give a folder that experiments/compare.py has written a table into"
                        ) from None


def start_summary(row: dict, fixed: dict, control: dict | None, theta0_mean: float) -> dict:
    """One start's class, result and verdict; `row` the method's row, `fixed` the start's,
    `control` its random-judge control's (None where it did not run)."""
    shortfall = 1.0 - fixed["score"][0] / theta0_mean
    kind = severity(shortfall) if row["start"] != "theta0" else "good"
    diff = row["vs_fixed_start"]
    out = {"start": row["start"], "class": kind, "shortfall": shortfall,
           "fixed_score": fixed["score"][0], "score": row["score"][0], "vs_fixed": diff,
           "worst_ratio": row["worst_ratio_to_fixed"],
           "vs_random_judge": row.get("vs_random_judge"),
           "random_judge": {k: control[k] for k in ("recovery", "vs_fixed_start")
                            if k in control} if control else None}
    if kind == "gross":
        rec = row["recovery"]
        out["recovery"] = rec
        out["met"] = bool(rec["fraction"] >= 0.8 and rec["ci_low"] >= 0.5)
    elif kind == "mild":
        out["met"] = bool(diff["ci_low"] > 0)
    else:
        out["met"] = bool(diff["ci_high"] >= 0 and row["worst_ratio_to_fixed"] >= 0.8)
    return out


def summarize(rows: list[dict], method: str) -> dict:
    """Every start whose `method` arm and fixed arm are in `rows`, and the gross distribution.

    Raises:
      UserError: theta0 kept fixed missing, or no start with a finished `method` arm.
    """
    by_arm = {r["arm"]: r for r in rows}
    if REFERENCE not in by_arm:
        raise UserError("--run: the table has no theta0.fixed row",
                        "run compare.py with the fixed arm")
    theta0_mean = by_arm[REFERENCE]["score"][0]
    control = ARMS[method].control if method in ARMS else None  # tables naming no control
    starts = []
    for r in rows:
        fixed = by_arm.get(REFERENCE if r["start"] == "theta0" else f"{r['start']}.fixed")
        if r["method"] == method and fixed is not None and "vs_fixed_start" in r:
            arm = r.get("random_judge_arm", f"{r['start']}.{control}" if control else None)
            starts.append(start_summary(r, fixed, by_arm.get(arm), theta0_mean))
    if not starts:
        raise UserError(f"--method: no {method} arm with its start kept fixed in the table",
                        "run compare.py with that arm and the fixed one")
    order = {"gross": 0, "mild": 1, "good": 2}
    starts.sort(key=lambda s: (order[s["class"]], -s.get("recovery", {}).get("fraction", 0),
                               -s["vs_fixed"]["mean"]))
    gross = np.array([s["recovery"]["fraction"] for s in starts if s["class"] == "gross"])
    dist = None
    if gross.size:
        q = np.percentile(gross, [0, 25, 50, 75, 100])
        dist = {"n": int(gross.size), **dict(zip(("min", "q25", "median", "q75", "max"),
                                                 map(float, q), strict=True)),
                "met": sum(s["met"] for s in starts if s["class"] == "gross")}
    return {"method": method, "theta0_score": theta0_mean, "starts": starts, "gross": dist}


def _ci(d: dict, fmt: str, key: str = "mean") -> str:
    return f"{d[key]:{fmt}} [{d['ci_low']:{fmt}}, {d['ci_high']:{fmt}}]"


def markdown(summary: dict) -> str:
    """The per-start table and, under it, the gross starts' distribution."""
    lines = ["| start | class (kept fixed, below theta0) | result [95% CI] | seeds higher "
             "| worst seed / fixed twin | random judge alone | SAILOR - random judge | target |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for s in summary["starts"]:
        d = s["vs_fixed"]
        result = (f"recovery {_ci(s['recovery'], '.2f', 'fraction')}" if "recovery" in s
                  else f"{_ci(d, '+,.0f')} over kept fixed")
        rj, alone = s["vs_random_judge"], "-"
        if s["random_judge"] and "recovery" in s:
            alone = _ci(s["random_judge"]["recovery"], ".2f", "fraction")
        elif s["random_judge"]:
            alone = _ci(s["random_judge"]["vs_fixed_start"], "+,.0f")
        lines.append(f"| {s['start']} | {s['class']} ({s['fixed_score']:,.0f}, "
                     f"{s['shortfall']:.0%}) | {result} | {d['wins']}/{len(d['per_seed'])} "
                     f"| {s['worst_ratio']:.2f} | {alone} | {_ci(rj, '+,.0f') if rj else '-'} "
                     f"| {'met' if s['met'] else 'not met'} |")
    g = summary["gross"]
    if g:
        lines += ["", f"Recovery over the {g['n']} gross starts: min {g['min']:.2f}, quartiles "
                      f"{g['q25']:.2f} / {g['median']:.2f} / {g['q75']:.2f}, max "
                      f"{g['max']:.2f}; target (>= 0.8, lower end >= 0.5) met from {g['met']}."]
    return "\n".join(lines) + "\n"


def plot(summary: dict, path: str) -> None:
    """Recovery per gross start; paired gain over kept fixed per mild and good start."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    gross = [s for s in summary["starts"] if s["class"] == "gross"]
    other = [s for s in summary["starts"] if s["class"] != "gross"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.5 * max(len(gross), len(other), 4) + 1.5),
                             gridspec_kw={"wspace": 0.55})
    for ax, group, key in ((axes[0], gross, "recovery"), (axes[1], other, "vs_fixed")):
        centre = "fraction" if key == "recovery" else "mean"
        control_key = "recovery" if key == "recovery" else "vs_fixed_start"
        y = np.arange(len(group))[::-1]
        mid = np.array([s[key][centre] for s in group])
        lo = np.array([s[key]["ci_low"] for s in group])
        hi = np.array([s[key]["ci_high"] for s in group])
        colors = ["tab:green" if s["met"] else "tab:red" for s in group]
        ax.errorbar(mid, y, xerr=[mid - lo, hi - mid], fmt="none", ecolor="grey", capsize=3)
        ax.scatter(mid, y, c=colors, zorder=3)
        rj = [(yy, s["random_judge"][control_key])
              for yy, s in zip(y, group, strict=True) if s["random_judge"]]
        if rj:
            ax.scatter([d[centre] for _, d in rj],
                       [yy for yy, _ in rj], facecolors="none", edgecolors="black", zorder=3,
                       label="random-judge control")
            ax.legend(fontsize=8, loc="lower right")
        ax.set_yticks(y, [f"{s['start']} ({s['class']})" for s in group])
        for x, style in ((0.8, "--"), (0.5, ":")) if key == "recovery" else ((0.0, "-"),):
            ax.axvline(x, color="black", linestyle=style, linewidth=0.8)
        ax.set_xlabel("recovery fraction (target >= 0.8, lower end >= 0.5)" if key == "recovery"
                      else "final score: SAILOR - start kept fixed")
    fig.suptitle(f"{summary['method']} from every start (95% intervals over paired seeds; "
                 "green: target met)")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(Args, sys.argv[1:] if argv is None else argv,
                      description=__doc__.splitlines()[0])
    summary = summarize(load_rows(args.run), args.method)
    table = markdown(summary)
    print(table)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "summary.md"), "w", encoding="utf-8") as f:
            f.write(table)
        report.write_json_gz(os.path.join(args.out, "summary.json.gz"),
                             summary | {"run": args.run, "machine": report.machine()})
        plot(summary, os.path.join(args.out, "recovery.png"))
    return summary


if __name__ == "__main__":
    report_user_errors(main)
