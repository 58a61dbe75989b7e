"""Pool the seeds of several `benchmarks/learning.py` runs into one curve per recipe, and plot it.

    python benchmarks/results/learning_ppo/pool_curves.py \\
        benchmarks/results/learning_ppo/trunks_h100_seed1.jsonl.gz \\
        benchmarks/results/learning_ppo/trunks_h100_seed2.jsonl.gz \\
        --rename default=afterstates_64 --out benchmarks/results/learning_ppo/trunks_h100.png

Runs from different root seeds (learning.py's seed) are independent samples of a recipe; this
groups their JSON lines by (recipe, env_steps), pools each group's seeds exactly
(`compare_recipes.pool`: `score_per_seed` / `win_rate_per_seed`, or the line's mean and
interval) and writes one line per group with the pooled mean and 95% Student-t interval
(`seeds` the pooled count; `train_s` and `sps` the runs' means), sorted by recipe in first-seen
order, then env steps. `--out` draws `learning.plot_curves`' figure of the pooled curves;
`--json` prints the pooled lines.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import sys
from typing import Annotated

import tyro

BENCHMARKS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""`benchmarks/`, whose scripts `compare_recipes.py` and `learning.py` this one imports."""
sys.path.insert(0, BENCHMARKS)

from compare_recipes import from_curve_line, pool, read_lines, t_interval  # noqa: E402
from learning import plot_curves  # noqa: E402

from sailor_jax.cli import parse_args  # noqa: E402
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402


def pooled_curves(lines: list[dict]) -> dict[str, list[dict]]:
    """Recipe -> its pooled curve points (dicts with recipe, env_steps, seeds, train_s, sps,
    score_/win_rate_ mean, ci_low, ci_high), env steps ascending.

    Raises:
      UserError: a group with one seed in all (no interval).
    """
    groups: dict[str, dict[int, list[dict]]] = {}
    for line in lines:
        groups.setdefault(line["recipe"], {}).setdefault(line["env_steps"], []).append(line)
    curves = {}
    for recipe, by_steps in groups.items():
        points = []
        for steps in sorted(by_steps):
            group = by_steps[steps]
            point = {"recipe": recipe, "env_steps": steps,
                     "train_s": statistics.fmean(x["train_s"] for x in group),
                     "sps": statistics.fmean(x["sps"] for x in group)}
            for metric in ("score", "win_rate"):
                sample = pool([from_curve_line(x, metric) for x in group])
                low, high = t_interval(sample)
                point.update({"seeds": sample.n, f"{metric}_mean": sample.mean,
                              f"{metric}_ci_low": low, f"{metric}_ci_high": high})
            points.append(point)
        curves[recipe] = points
    return curves


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Pool the seeds of learning.py runs into one curve per recipe."""

    files: Annotated[tyro.conf.Positional[tuple[str, ...]], tyro.conf.arg(metavar="FILE")]
    """learning.py JSON-lines files (its --json output), one per run."""
    out: str | None = None
    """PNG to draw the pooled curves into (score and 2048 rate vs env steps and seconds)."""
    json: bool = False
    """Print the pooled lines as JSON lines instead of a table."""
    rename: tuple[str, ...] = ()
    """OLD=NEW recipe labels, e.g. default=afterstates_64 for runs made when `default` named
    another recipe."""


def _renames(specs: tuple[str, ...]) -> dict[str, str]:
    """`("a=b", ...)` -> `{"a": "b", ...}`.

    Raises:
      UserError: a spec without one "=" or with an empty side.
    """
    pairs = [spec.split("=") for spec in specs]
    bad = [spec for spec, p in zip(specs, pairs, strict=True) if len(p) != 2 or not all(p)]
    if bad:
        raise UserError(f"--rename {bad[0]!r}: expected OLD=NEW")
    return dict(pairs)


def main(args: Args) -> dict[str, list[dict]]:
    if not args.files:
        raise UserError("no files given", "pass learning.py --json outputs")
    names = _renames(args.rename)
    lines = [x for path in args.files for x in read_lines(path)]
    curves = pooled_curves([{**x, "recipe": names.get(x["recipe"], x["recipe"])} for x in lines])
    for points in curves.values():
        for p in points:
            print(json.dumps(p) if args.json else
                  f"{p['recipe']:>22} {p['env_steps']:>11,} steps  {p['seeds']} seeds  "
                  f"score {p['score_mean']:7,.0f}  2048 {p['win_rate_mean']:.3f} "
                  f"[{p['win_rate_ci_low']:.3f}, {p['win_rate_ci_high']:.3f}]")
    if args.out:
        plot_curves(curves, args.out)
    return curves


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
