"""How good must the judge be? SAILOR's gain from a start against its judge's window accuracy.

    python benchmarks/judge_curve.py --run runs/judge_curve --reference-skill 1864 \\
        --series before=sailor_random_judge,sailor_n1,sailor

`experiments/compare.py` runs the arms into `--run` (one folder or its blocks `seed<ROOT>/`,
beside the start kept fixed); this script reads them. Each `--series NAME=ARM,...` is one
update rule judged by several judges (arms written out over `SailorConfig`'s fields, e.g. the
expert dialled down with `ranker.noise`, an LLM with `ranker.kind=llm`, the random judge). Per
arm (`sailor_lab.judge_curve.point`): the judge's accuracy on the run's own windows (its share
of (agent, reference player) pairs ordered by skill, 95% t-interval over seeds) and the paired
difference in final score to `--start` kept fixed (95% t-interval, worst seed over its twin,
seeds below 0.8 of theirs); per series, the accuracy at which the gain reaches 0.

`--reference-skill` is the reference player's mean score on games of its own
(`experiments/expert_play.py` at depth 1 and epsilon 0.5, 256 games: `score_mean`). Output in
`--out` (default: `--run`): `curve.json.gz`, `curve.md` and `judge_curve.png`.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_lab import report
from sailor_lab.judge_curve import point, series_crossing


@dataclasses.dataclass(frozen=True)
class Args:
    """Judge curve of a comparison."""

    run: str
    """A compare.py output folder (its blocks `seed<ROOT>/` are read when it has them)."""
    series: tuple[str, ...]
    """Series as `NAME=ARM,ARM,...` (arm names without the start)."""
    reference_skill: float
    """The reference player's mean game score (module docstring)."""
    start: str = "theta0"
    """The start every arm ran from; its kept-fixed arm is `<start>.fixed`."""
    out: str = ""
    """Output folder (none: `--run`)."""


def parse_series(specs: tuple[str, ...]) -> dict[str, list[str]]:
    """`NAME=ARM,...` specs as {name: arms}.

    Raises:
      UserError: a spec without `=` or arms, or a repeated name.
    """
    out: dict[str, list[str]] = {}
    for spec in specs:
        name, _, arms = spec.partition("=")
        names = [a for a in arms.split(",") if a]
        if not name or not names:
            raise UserError(f"--series: {spec!r} is not NAME=ARM,ARM,...",
                            "e.g. --series before=sailor_random_judge,sailor")
        if name in out:
            raise UserError(f"--series: the name {name!r} is given twice", "name each once")
        out[name] = names
    return out


def curve(args: Args) -> dict:
    """Every series' points (arms not finished in any block are left out, and said so)."""
    fixed = f"{args.start}.fixed"
    series, missing = {}, []
    for name, arms in parse_series(args.series).items():
        points = []
        for arm in arms:
            p = point(args.run, f"{args.start}.{arm}", fixed, args.reference_skill)
            if p is None:
                missing.append(arm)
            else:
                points.append(p)
        series[name] = {"points": points, "no_loss_at": series_crossing(points)}
    if not any(s["points"] for s in series.values()):
        raise UserError(f"--run: no arm of --series has finished beside {fixed} in {args.run!r}",
                        "run the comparison first (experiments/compare.py)")
    return {"run": os.path.abspath(args.run), "start": args.start,
            "reference_skill": args.reference_skill, "series": series, "not_finished": missing}


def _ci(x: float, ci, fmt: str) -> str:
    if not math.isfinite(x):
        return "-"
    return f"{x:{fmt}} [{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def markdown(c: dict) -> str:
    """The curve's table and each series' no-loss accuracy."""
    lines = ["| series | arm | seeds | window accuracy [95% CI] | final score minus "
             f"{c['start']} kept fixed [95% CI] | worst seed / twin | seeds below 0.8 |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, s in c["series"].items():
        for p in sorted(s["points"], key=lambda p: p["window_accuracy"]):
            lines.append(f"| {name} | {p['arm']} | {p['seeds']} | "
                         f"{_ci(p['window_accuracy'], p['window_accuracy_ci'], '.3f')} | "
                         f"{_ci(p['gain'], p['gain_ci'], '+,.0f')} | {p['worst_ratio']:.2f} | "
                         f"{p['below_floor']}/{p['seeds']} |")
    lines.append("")
    for name, s in c["series"].items():
        x = s["no_loss_at"]
        if not any(math.isfinite(p["window_accuracy"]) for p in s["points"]):
            lines.append(f"- {name}: no arm recorded its judge's windows (no accuracy).")
            continue
        if x["mean"] is None:
            lines.append(f"- {name}: the gain does not stay at or above 0 within the measured "
                         "accuracies.")
            continue
        ends = [f"{v:.3f}" if v is not None else "beyond the measured range"
                for v in (x["from_ci_high"], x["from_ci_low"])]
        lines.append(f"- {name}: the gain reaches 0 at window accuracy {x['mean']:.3f} "
                     f"[{ends[0]}, {ends[1]}] (where the interval's upper and lower ends do).")
    if c["not_finished"]:
        lines.append(f"- Not finished, left out: {', '.join(c['not_finished'])}.")
    return "\n".join(lines) + "\n"


def plot(c: dict, path: str) -> None:
    """The gain against window accuracy, one line per series, 95% intervals both ways."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = False
    for name, s in c["series"].items():
        pts = sorted((p for p in s["points"] if math.isfinite(p["window_accuracy"])),
                     key=lambda p: p["window_accuracy"])
        if not pts:
            continue
        x = np.array([p["window_accuracy"] for p in pts])
        y = np.array([p["gain"] for p in pts])
        xe = np.abs(np.array([p["window_accuracy_ci"] for p in pts]).T - x)
        ye = np.abs(np.array([p["gain_ci"] for p in pts]).T - y)
        ax.errorbar(x, y, xerr=xe, yerr=ye, marker="o", capsize=3, label=name)
        drawn = True
        for p, xi, yi in zip(pts, x, y, strict=True):
            ax.annotate(p["arm"].split(".", 1)[1], (xi, yi), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.axhline(0.0, color="black", linewidth=0.5)
    ax.axvline(0.5, color="grey", linewidth=0.5, linestyle=":")
    ax.set_xlabel("judge accuracy on the run's own windows (agent vs reference player)")
    ax.set_ylabel(f"final score: SAILOR - {c['start']} kept fixed")
    if drawn:
        ax.legend(fontsize=8)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str]) -> dict:
    """Read the comparison, write and print the curve."""
    args = parse_args(Args, argv)
    c = curve(args)
    out = args.out or args.run
    os.makedirs(out, exist_ok=True)
    c["machine"] = report.machine()
    report.write_json_gz(os.path.join(out, "curve.json.gz"), c)
    table = markdown(c)
    with open(os.path.join(out, "curve.md"), "w", encoding="utf-8") as f:
        f.write(table)
    plot(c, os.path.join(out, "judge_curve.png"))
    print(table)
    return c


if __name__ == "__main__":
    report_user_errors(main)
