"""Where SAILOR's reward ended, written out as a start: the destination, to train from scratch.

Reads the theta trajectories of one `experiments/compare.py` run (`theta_trajectories.csv`, or
its compressed copy `theta_trajectories.csv.gz`) and, for each arm named, prints the mean over
seeds of its final theta as a written-out start (`NAME_dest:feature=w,...`, 3 decimals),
the form compare.py's starts option takes. Training that start kept fixed (compare.py's fixed
method, the same seeds and budget) separates what the reward became from how the agent got
there: if the destination trained from scratch scores as theta0 and SAILOR's agent does not,
the path (training on the reward while it was still wrong) limits repair, not the
destination.

    python benchmarks/results/warmup_destination/destination.py --run runs/compare \\
        --arms disorder_bonus.sailor

Prints one start per line, in the order the arms are named, to paste (or substitute with
`$(...)`) after compare.py's starts.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import sys

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import open_text

KEYS = ("variant", "seed", "iteration")
"""The trajectory file's leading columns; every later column is one feature's weight."""


@dataclasses.dataclass(frozen=True)
class Args:
    """The mean final theta of compare.py arms, as written-out starts."""

    run: str
    """The compare.py folder (or the path of its theta_trajectories.csv / .csv.gz)."""
    arms: tuple[str, ...]
    """Arms by their variant name, START.ARM (e.g. disorder_bonus.sailor)."""
    suffix: str = "_dest"
    """Appended to the start's name to name the written-out start."""


def load_rows(run: str) -> list[dict]:
    """The rows of a run's theta trajectories (`compare.py`'s `theta_trajectories.csv`).

    Raises:
      UserError: no such file (plain or compressed), or not a trajectory file.
    """
    path = run if ".csv" in os.path.basename(run) else os.path.join(run, "theta_trajectories.csv")
    try:
        with open_text(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        raise UserError(f"--run: no theta_trajectories.csv (or .csv.gz) at {path}",
                        "give a folder that experiments/compare.py has written its tables into"
                        ) from None
    if not rows or list(rows[0])[:3] != list(KEYS) or len(rows[0]) <= len(KEYS):
        raise UserError(f"--run: {path} is not a theta trajectory file (columns "
                        f"{', '.join(KEYS)}, then one per feature)",
                        "give the file experiments/compare.py wrote")
    return rows


def final_theta(rows: list[dict], arm: str) -> dict[str, float]:
    """The mean over seeds of `arm`'s theta at its last iteration, feature by feature.

    Raises:
      UserError: the file has no rows of `arm` (the message lists the arms it has).
    """
    mine = [r for r in rows if r["variant"] == arm]
    if not mine:
        known = sorted({r["variant"] for r in rows})
        raise UserError(f"--arms: no arm {arm!r} in the run; it has {', '.join(known)}",
                        "name an arm as START.METHOD")
    last = max(int(r["iteration"]) for r in mine)
    features = [k for k in mine[0] if k not in KEYS]
    final = np.array([[float(r[k]) for k in features]
                      for r in mine if int(r["iteration"]) == last])
    return dict(zip(features, final.mean(axis=0).tolist(), strict=True))


def start_spec(arm: str, theta: dict[str, float], suffix: str = "_dest") -> str:
    """`START{suffix}:feature=w,...` with 3 decimals, the start named by `arm`'s part before
    its first dot (what `sailor_lab.starts.parse_start` reads)."""
    name = arm.split(".", 1)[0] + suffix
    return f"{name}:" + ",".join(f"{k}={v:.3f}" for k, v in theta.items())


def main(argv: list[str] | None = None) -> list[str]:
    args = parse_args(Args, sys.argv[1:] if argv is None else argv,
                      description=__doc__.splitlines()[0])
    rows = load_rows(args.run)
    specs = [start_spec(arm, final_theta(rows, arm), args.suffix) for arm in args.arms]
    print("\n".join(specs))
    return specs


if __name__ == "__main__":
    report_user_errors(main)
