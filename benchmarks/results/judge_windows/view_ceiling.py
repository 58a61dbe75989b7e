"""The view's ceiling on SAILOR's windows: the best function of what a judge is shown.

    python benchmarks/results/judge_windows/view_ceiling.py --json
    python benchmarks/results/judge_windows/view_ceiling.py --views summary board --json

Fits each function of `sailor_lab.view_ceiling.MODELS` on each view of `--views` over the
development windows stored in this folder (those the judge benchmark's windows setting scores,
root seed 1) and scores it on the confirmation windows (root seed 2), never fitted on; beside
them each number of the summary and of the reward features alone, its direction chosen on the
development windows.
Prints the tables (markdown; to stderr with `--json`) and one JSON line: `ceilings` (per view
and model: `development` in-sample accuracy, `accuracy` and `accuracy_ci` on the confirmation
windows), `columns` (the single numbers), the sets' sizes and the machine. Seconds on 2 cores.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import to_jsonable
from sailor_lab import report, view_ceiling
from sailor_lab.sailor_windows import WindowSet

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclasses.dataclass(frozen=True)
class Args:
    """The view's ceiling on SAILOR's windows."""

    views: tuple[str, ...] = tuple(view_ceiling.VIEWS)
    """Views to fit (summary, features, board, summary+board)."""
    development: str = os.path.join(HERE, "development.npz")
    """The window set functions are fitted on."""
    confirmation: str = os.path.join(HERE, "confirmation.npz")
    """The window set they are scored on."""
    json: bool = False
    """Print the record as one JSON line on stdout (the tables go to stderr)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.views) - set(view_ceiling.VIEWS))
        if unknown:
            raise UserError(f"--views: unknown view(s) {unknown}",
                            f"known: {', '.join(view_ceiling.VIEWS)}")


def run(args: Args) -> dict:
    """Fit on development, score on confirmation; the record."""
    dev, conf = WindowSet.load(args.development), WindowSet.load(args.confirmation)
    columns = [row for view in view_ceiling.VIEW_COLUMNS
               for row in view_ceiling.single_columns(dev, conf, view)]
    return {"ceilings": view_ceiling.ceilings(dev, conf, args.views), "columns": columns,
            "development_groups": dev.num_groups, "confirmation_groups": conf.num_groups,
            **report.machine()}


def print_tables(record: dict, file=sys.stdout) -> None:
    """The ceilings and the single numbers as markdown, to `file`."""
    print("| view | function | development (fitted on) | confirmation [95%] |\n"
          "|---|---|---:|---:|", file=file)
    for r in record["ceilings"]:
        lo, hi = r["accuracy_ci"]
        print(f"| {r['view']} | {r['model']} | {r['development']:.3f} | {r['accuracy']:.3f} "
              f"[{lo:.3f}, {hi:.3f}] |", file=file)
    print("\n| view | number alone | direction | development | confirmation [95%] |\n"
          "|---|---|---:|---:|---:|", file=file)
    for r in record["columns"]:
        lo, hi = r["accuracy_ci"]
        print(f"| {r['view']} | {r['column']} | {'+' if r['sign'] > 0 else '-'} | "
              f"{r['development']:.3f} | {r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}] |", file=file)


def main(args: Args) -> dict:
    """Run, print the tables and, with --json, the JSON line."""
    record = run(args)
    print_tables(record, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(to_jsonable(record)), flush=True)
    return record


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
