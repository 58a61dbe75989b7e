"""How good must the judge be? Repair and no-loss against judge accuracy.

    python benchmarks/judge_curve.py                     # every arm: ~18 arms, ~2.5 h on 2 cores
    python benchmarks/judge_curve.py --finished-only     # the curve from the arms finished so far

The judge is the expert's `value` verdict (the recommended SAILOR's) dialled down by
`RankerConfig.noise` (Gaussian noise of sigma on the normal scores of its order,
`judges.expert`). For each level in `--levels` (inf: the random judge, chance):

- its **skill-order accuracy** on `judge_quality.py`'s graded pool (`--pool.groups` groups of
  8 drawn from one pool; 95% bootstrap interval over groups) and Kendall's tau with the clean
  expert: the number a user measures for their own LLM with `judge_quality.py`;
- the recommended SAILOR judged by that judge (`experiments/compare.py`'s `sailor_value` arm;
  `--compare-flags`: the `cpu` preset, 32 updates of 4 PPO updates, ~1M env steps, 8 paired
  seeds) from each of
  `--starts`: the recovery fraction from a wrong start, the paired difference to theta0 kept
  fixed from theta0 (no loss), each with its 95% interval, and the worst seed against its
  fixed twin.

At the levels in `--query-levels`, the same with `--query-factors` times the windows judged
per update (the windows per group and the reference games scaled): does a weaker judge
with more queries match a stronger one?

Each level runs a comparison (`experiments/compare.py`) in its own folder `OUT/<label>/`; the
kept-fixed arms do not depend on the judge, so they run once (in the first level's folder) and
are copied into the others (without checkpoints). Running the same command again resumes.
Output in `--out`: `curve.json.gz` (the points; `sailor_lab.judge_curve`), `curve.md` and
`judge_curve.png`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import shutil
import sys

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.config import RankerConfig
from sailor_jax.config.arms import replace_fields
from sailor_jax.errors import report_user_errors
from sailor_jax.judges.factory import make_ranker
from sailor_lab import judge_eval, report
from sailor_lab.judge_curve import crossings, group_accuracy, versus_random

HERE = os.path.dirname(os.path.abspath(__file__))
LLM_ACCURACIES = {"SmolLM2-135M": 0.788, "Qwen2.5-Coder-1.5B": 0.816}
"""The LLM judges' skill-order accuracy on the curve's pool (seed 0, 32 groups), shown a summary
of each game and asked for a rating, the presets' design (docs/llm_judge.md); drawn on the
curve."""


@dataclasses.dataclass(frozen=True)
class Args:
    """Judge-quality curve."""

    levels: tuple[float, ...] = (0.0, 2.0, math.inf, 1.0, 5.0)
    """Noise levels sigma of the dialled judge, run in this order: 0 = the expert, inf = the
    random judge (`sailor_random_judge`, the chance end of the curve)."""
    starts: tuple[str, ...] = ("theta0", "pays_for_dying", "chases_max_tile")
    """Starts of every level (names in STARTS)."""
    query_levels: tuple[float, ...] = (2.0, 1.0)
    """Levels also run with more judged windows per update."""
    query_factors: tuple[int, ...] = (2, 4)
    """Multiples of the windows judged per update at `--query-levels`."""
    compare_flags: tuple[str, ...] = ("--preset", "cpu")
    """Flags of `experiments/compare.py` that set every level's sizes, budget and seeds."""
    pool: judge_eval.PoolArgs = judge_eval.PoolArgs(groups=32)
    """The graded pool the accuracy is measured on (`judge_quality.py`'s, more groups)."""
    expert_depth: int = 2
    """Depth of the judge whose accuracy is measured (the SAILOR arms' expert's: 2)."""
    out: str = "runs/judge_curve"
    """Output folder; running again resumes."""
    finished_only: bool = False
    """Run no arm: the curve from the levels whose arms have all finished."""


def _load(path: str):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def runs(args: Args) -> list[dict]:
    """The curve's runs in order: `{"label", "noise", "queries", "methods"}` (noise None =
    the random judge)."""
    out = [{"label": "random", "noise": None, "queries": 1,
            "methods": ["fixed", "sailor_random_judge"]} if math.isinf(s) else
           {"label": f"sigma{s:g}", "noise": s, "queries": 1, "methods": ["fixed", "sailor_value"]}
           for s in args.levels]
    out += [{"label": f"sigma{s:g}_q{f}", "noise": s, "queries": f,
             "methods": ["fixed", "sailor_value"]} for s in args.query_levels
            for f in args.query_factors]
    return out


def base_config(args: Args):
    """The comparison's config before any arm, from `--compare-flags` (`experiments/compare.py`),
    and that module."""
    compare = _load(os.path.join(HERE, os.pardir, "experiments", "compare.py"))
    preset, cargs = compare.parse(list(args.compare_flags))
    return compare.base_config(preset, cargs), compare


def level_runs(compare, base, run: dict, starts) -> list[tuple]:
    """The comparison's runs of one level (`compare.arm_list`), its judged arm's expert value
    verdict made `run["noise"]` noisy and shown `run["queries"]` times the windows and
    reference games per update; the kept-fixed arms as they are (shared by every level)."""
    def judged(cfg):
        return replace_fields(cfg, {
            "ranker.noise": run["noise"] or 0.0, "trajectories": cfg.trajectories * run["queries"],
            "reference_games": cfg.reference_games * run["queries"]})
    return [(name, start, arm, cfg if arm == "fixed" else judged(cfg))
            for name, start, arm, cfg in compare.arm_list(base, starts, tuple(run["methods"]))]


def share_fixed_arms(args: Args, first: str, label: str) -> None:
    """Copy the finished kept-fixed arms of `first` into run `label` (no checkpoints)."""
    src = os.path.join(args.out, first, "variants")
    for name in os.listdir(src) if os.path.isdir(src) else []:
        dst = os.path.join(args.out, label, "variants", name)
        if name.endswith(".fixed") and not os.path.exists(dst) and \
                os.path.exists(os.path.join(src, name, "results.json")):
            shutil.copytree(os.path.join(src, name), dst,
                            ignore=shutil.ignore_patterns("checkpoints"))


def calibrate(args: Args, labels: list[dict]) -> dict[str, dict]:
    """Skill-order accuracy and tau with the clean expert of every run's judge (one pool)."""
    pool, index = args.pool.draw()
    groups = judge_eval.group_batches(pool, index)
    epsilons = [pool.epsilon[i] for i in index]
    clean = make_ranker(RankerConfig(kind="expert", expert_verdict="value",
                                     expert_depth=args.expert_depth)).rank_groups(groups)
    out = {}
    for run in labels:
        kind = "random" if run["noise"] is None else "expert"
        cfg = RankerConfig(kind=kind, expert_verdict="value", noise=run["noise"] or 0.0,
                           expert_depth=args.expert_depth)
        judge = make_ranker(cfg)
        judge.reseed(0)
        rankings = judge.rank_groups(groups)
        out[run["label"]] = {**group_accuracy(rankings, epsilons),
                             "tau_clean": judge_eval.tau_with(rankings, clean)}
    return out


def point(run: dict, rows: list[dict], calibration: dict, starts, queries_per_update: int
          ) -> dict:
    """One curve point from a finished run's repair rows."""
    method = run["methods"][1]
    cells = {}
    for start in starts:
        row = next(r for r in rows if r["arm"] == f"{start}.{method}")
        diff = row["vs_fixed_start"]
        cell = {"diff_to_fixed": diff["mean"], "diff_to_fixed_ci": [diff["ci_low"],
                                                                    diff["ci_high"]],
                "worst_ratio_to_fixed": row["worst_ratio_to_fixed"],
                "metric": "diff_to_fixed" if start == "theta0" else "recovery"}
        if start != "theta0":  # no recovery where the start kept fixed is not below theta0
            rec = row.get("recovery", {})
            cell |= {"recovery": rec.get("fraction"),
                     "recovery_ci": [rec.get("ci_low"), rec.get("ci_high")]}
        cell["scores"] = row["per_seed"]["score"]
        cells[start] = cell
    return {"label": run["label"], "noise": run["noise"], "queries": run["queries"],
            "windows_per_update": queries_per_update * run["queries"],
            **calibration[run["label"]], "starts": cells}


def markdown(curve: dict) -> str:
    """The curve's table."""
    starts = list(curve["points"][0]["starts"])
    what = {s: "paired diff. to fixed (worst seed / twin)" if s == "theta0" else "recovery"
            for s in starts}
    head = "| judge | windows / update | skill-order accuracy [95% CI] | tau with the expert | " \
        + " | ".join(f"{s}: {what[s]} [95% CI]" for s in starts) + " |"
    lines = [head, "|---|---:|---:|---:|" + "---:|" * len(starts)]
    for p in curve["points"]:
        judge = "random" if p["noise"] is None else f"expert, sigma {p['noise']:g}"
        cells = []
        for s in starts:
            c = p["starts"][s]
            if c["metric"] == "recovery" and c["recovery"] is None:
                cells.append("- (the start kept fixed is not below theta0)")
            elif c["metric"] == "recovery":
                cells.append(f"{c['recovery']:.2f} [{c['recovery_ci'][0]:.2f}, "
                             f"{c['recovery_ci'][1]:.2f}]")
            else:
                cells.append(f"{c['diff_to_fixed']:+,.0f} [{c['diff_to_fixed_ci'][0]:+,.0f}, "
                             f"{c['diff_to_fixed_ci'][1]:+,.0f}] ({c['worst_ratio_to_fixed']:.2f})")
        lines.append(f"| {judge} | {p['windows_per_update']} | {p['accuracy']:.3f} "
                     f"[{p['accuracy_ci'][0]:.3f}, {p['accuracy_ci'][1]:.3f}] | "
                     f"{p['tau_clean']:.2f} | " + " | ".join(cells) + " |")
    judged = [p for p in curve["points"] if "diff_to_random" in p["starts"][starts[0]]]
    if judged:
        lines += ["", "| judge | windows / update | " + " | ".join(
            f"{s}: final score minus the random judge's [95% CI] (seeds higher)" for s in starts)
            + " |", "|---|---:|" + "---:|" * len(starts)]
        for p in judged:
            cells = [f"{c['diff_to_random']:+,.0f} [{c['diff_to_random_ci'][0]:+,.0f}, "
                     f"{c['diff_to_random_ci'][1]:+,.0f}] ({c['wins_over_random']}/"
                     f"{len(c['scores'])})" for c in (p["starts"][s] for s in starts)]
            lines.append(f"| expert, sigma {p['noise']:g} | {p['windows_per_update']} | "
                         + " | ".join(cells) + " |")
    for start, x in curve["crossing"].items():
        ends = [f"{v:.3f}" if v is not None else "beyond the measured range"
                for v in (x["from_ci_high"], x["from_ci_low"])]
        lines.append(f"\nRecovery from {start} reaches 0.5 at skill-order accuracy "
                     + ("- (not within the measured range)" if x["mean"] is None else
                        f"{x['mean']:.3f} [{ends[0]}, {ends[1]}] (where the interval's upper "
                        "and lower ends reach it)"))
    return "\n".join(lines) + "\n"


def main(args: Args) -> dict:
    """Run (or read back) every level, then write the curve."""
    defaults, compare = base_config(args)
    plan = runs(args)
    finished = []
    for run in plan:
        arms = level_runs(compare, defaults, run, args.starts)
        out = os.path.join(args.out, run["label"])
        if run is not plan[0]:
            share_fixed_arms(args, plan[0]["label"], run["label"])
        if args.finished_only:
            try:
                rows = compare.compare(defaults, arms, out, finished_only=True)
            except Exception as e:  # noqa: BLE001 (a level not finished yet is left out)
                print(f"{run['label']}: left out ({e})", file=sys.stderr)
                continue
            if not all(any(r["arm"] == f"{s}.{run['methods'][1]}" for r in rows)
                       for s in args.starts):
                continue
        else:
            rows = compare.compare(defaults, arms, out)
        finished.append((run, rows))
    calibration = calibrate(args, [run for run, _ in finished])
    points = [point(run, rows, calibration, args.starts, defaults.trajectories)
              for run, rows in finished]
    curve = {"setting": "expert value verdict dialled by noise; compare.py "
                        + " ".join(args.compare_flags) + "; graded pool of judge_quality.py, "
                        f"{args.pool.groups} groups", "pool": args.pool.record(),
             "points": points, "machine": report.machine(),
             "llm_accuracies": LLM_ACCURACIES}
    curve["crossing"] = crossings(points, args.starts)
    versus_random(points)
    os.makedirs(args.out, exist_ok=True)
    report.write_json_gz(os.path.join(args.out, "curve.json.gz"), curve)
    table = markdown(curve)
    with open(os.path.join(args.out, "curve.md"), "w", encoding="utf-8") as f:
        f.write(table)
    plot(curve, os.path.join(args.out, "judge_curve.png"))
    print(table)
    return curve


def plot(curve: dict, path: str) -> None:
    """Recovery (wrong starts) and the paired difference from theta0 against accuracy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    starts = list(curve["points"][0]["starts"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, metric in zip(axes, ("recovery", "diff_to_fixed"), strict=True):
        for start in starts:
            if (metric == "recovery") == (start == "theta0"):
                continue
            for q, marker in ((1, "o"), (2, "s"), (4, "^")):
                pts = sorted((p for p in curve["points"] if p["queries"] == q
                              and p["starts"][start][metric] is not None),
                             key=lambda p: p["accuracy"])
                if not pts:
                    continue
                x = np.array([p["accuracy"] for p in pts])
                y = np.array([p["starts"][start][metric] for p in pts])
                ci = np.array([p["starts"][start][f"{metric}_ci"] for p in pts]).T
                ax.errorbar(x, y, yerr=[y - ci[0], ci[1] - y], marker=marker, capsize=3,
                            linestyle="-" if q == 1 else ":", label=f"{start}, {q}x windows")
        for (name, accuracy), style in zip(curve.get("llm_accuracies", {}).items(),
                                           ("--", "-."), strict=False):
            ax.axvline(accuracy, color="grey", linestyle=style, label=f"{name} measured")
        ax.axhline(0.5 if metric == "recovery" else 0.0, color="black", linewidth=0.5)
        ax.set_xlabel("judge skill-order accuracy (judge_quality.py graded pool)")
        ax.set_ylabel("recovery fraction" if metric == "recovery"
                      else "final score: SAILOR - theta0 kept fixed")
        ax.legend(fontsize=7)
    fig.suptitle("How good must the judge be? (95% intervals over 8 paired seeds)")
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
