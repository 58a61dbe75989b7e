"""Phase table of SAILOR iterations per preset: where a run's wall-clock goes.

Runs each setting's real CLI (`experiments/sailor.py` or `experiments/compare.py`) for a few
iterations into a temporary folder, then reads the per-iteration `time/*` records of its
`metrics.jsonl` (train, collect, rank, update, checkpoint) and `results.json`'s `timings`
(compile, the final evaluation). Host share = (collect + rank + update + checkpoint) /
(those + train), per steady-state iteration (the first is left out when there are more: its
collect compiles the collector): everything but training and compiling.

    python benchmarks/phases.py --settings smoke expert_cpu --json
    python benchmarks/phases.py --settings gpu --repo /path/to/other/checkout   # another version

Settings (`SETTINGS`): `smoke`, `cpu` (2 of its 6 iterations), `expert` (the comparison's
`paper` arm judged by the expert, 5 seeds, 2 of 32 iterations), `expert_cpu` (the theta
update's benchmark setting: the cpu preset judged by the expert, 4 + 4 baseline seeds, 256
envs, 8 PPO updates per segment, 4 of 16 iterations), `gpu` (the gpu preset on this CPU with
1 PPO update per segment instead of 80 and the expert judge instead of Qwen2.5-1.5B, which this
machine cannot fetch: its train and rank columns are not a GPU's; collect, update and checkpoint
are at the real size).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import open_text, stored_path, to_jsonable
from sailor_lab.report import machine

HERE = os.path.dirname(os.path.abspath(__file__))
SAILOR, COMPARE = "experiments/sailor.py", "experiments/compare.py"
SETTINGS: dict[str, tuple[str, list[str], str]] = {
    "smoke": (SAILOR, ["--preset", "smoke"], "the whole preset (2 iterations)"),
    "cpu": (SAILOR, ["--preset", "cpu", "--sailor.iterations", "2"], "2 of 6 iterations"),
    "expert": (COMPARE, ["--preset", "cpu", "--starts", "theta0", "--arms", "paper",
                         "--num-seeds", "5", "--iterations", "2"],
               "the paper's update judged by the expert, 5 seeds, 2 of 32 iterations"),
    "expert_cpu": (SAILOR, ["--preset", "cpu", "--sailor.ranker.kind", "expert",
                            "--sailor.num-seeds", "4", "--sailor.ppo.num-envs", "256",
                            "--sailor.ppo.updates-per-segment", "8", "--sailor.iterations", "4"],
                   "cpu preset, expert judge, 4+4 seeds, 256 envs, 8 updates/segment, "
                   "4 of 16 iterations"),
    "gpu": (SAILOR, ["--preset", "gpu", "--sailor.ranker.kind", "expert",
                     "--sailor.ppo.updates-per-segment", "1", "--sailor.iterations", "2",
                     "--sailor.eval.episodes", "16"],
            "ON THIS CPU: 1 of 80 PPO updates per segment, expert judge, 16 eval games, "
            "2 of 20 iterations"),
}
LOOP_PHASES = ("train", "collect", "rank", "update", "checkpoint")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Phase table of SAILOR iterations per preset."""

    settings: tuple[str, ...] = ("smoke", "expert_cpu", "expert", "gpu", "cpu")
    """Which settings to run (see the module docstring)."""
    repo: str = os.path.dirname(HERE)
    """Checkout whose experiments/ and sailor_jax/ to run (to time another version)."""
    extra: tuple[str, ...] = ()
    """More CLI arguments for every setting, e.g. `--sailor.alignment.update-workers 1`."""
    json: bool = False
    """Print one JSON line per setting (stdout: JSON only)."""


def phase_table(run_dir: str) -> dict:
    """Per-iteration seconds of each loop phase, the host share, compile and eval seconds.

    Host-only. Reads `metrics.jsonl` (records with `time/*`, tagged with their `segment`) and
    `results.json` of a finished SAILOR run folder (either may be gzip-compressed, as the
    committed ones under `benchmarks/results/` are). The steady-state means leave out the first
    iteration when there are more (its `collect` includes compiling the collector); runs logged
    before `time/checkpoint` existed get the checkpoint seconds from `results.json` `timings`,
    spread evenly over the iterations. A run stopped before it finished has no `results.json`:
    its table holds the iterations it logged, `finished` is False and the compile and final
    evaluation seconds are None.

    Raises:
      FileNotFoundError: the folder has no `metrics.jsonl`.
    """
    finished = os.path.exists(stored_path(os.path.join(run_dir, "results.json")))
    timings = {}
    if finished:
        with open_text(os.path.join(run_dir, "results.json")) as f:
            timings = json.load(f)["timings"]
    rows: dict[int, dict[str, float]] = {}
    with open_text(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            times = {k[5:]: v for k, v in record.items() if k.startswith("time/")}
            if times:
                rows.setdefault(record.get("segment", record.get("iteration")), {}).update(times)
    per_iteration = [{p: rows[k].get(p, np.nan) for p in LOOP_PHASES} for k in sorted(rows)]
    for row in per_iteration:
        if np.isnan(row["checkpoint"]):
            row["checkpoint"] = timings.get("checkpoint", 0.0) / max(len(per_iteration), 1)
    steady = per_iteration[1:] or per_iteration
    mean = {p: float(np.nan_to_num(np.mean([r[p] for r in steady]))) for p in LOOP_PHASES}
    loop_s = sum(mean.values())
    return {"finished": finished, "iterations": len(per_iteration),
            "steady_iterations": len(steady),
            "per_iteration_s": mean, "iterations_s": per_iteration, "loop_s": loop_s,
            "host_share": (loop_s - mean["train"]) / loop_s if loop_s else float("nan"),
            "update_over_train": mean["update"] / mean["train"] if mean["train"] else None,
            "compile_s": timings.get("compile"), "final_eval_s": timings.get("eval")}


def run_setting(name: str, repo: str, extra: tuple[str, ...]) -> dict:
    """Run one setting's CLI in a fresh folder and return its phase table (plus wall-clock)."""
    script, argv, note = SETTINGS[name]
    with tempfile.TemporaryDirectory(prefix=f"phases_{name}_") as out:
        cmd = [sys.executable, script, *argv, *extra, "--out", out]
        env = {**os.environ, "PYTHONPATH": repo}
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        folder = out if script == SAILOR else glob.glob(os.path.join(out, "variants", "*"))[0]
        table = phase_table(folder)
    return {"setting": name, "note": note, "command": " ".join(["python", script, *argv,
                                                                 *extra]),
            "wall_s": wall, **table}


def main(args: Args) -> None:
    """Run the settings one after another; print a table line (or JSON line) for each.

    Raises:
      UserError: an unknown setting name (before anything runs).
    """
    for name in args.settings:
        if name not in SETTINGS:
            raise UserError(f"unknown setting {name!r}", f"choose from {sorted(SETTINGS)}")
    info = machine()
    for name in args.settings:
        row = {**run_setting(name, args.repo, args.extra), "machine": info}
        if args.json:
            print(json.dumps(to_jsonable(row)), flush=True)
        else:
            p = row["per_iteration_s"]
            print(f"{name:11s} " + " ".join(f"{k} {p[k]:7.2f}" for k in LOOP_PHASES)
                  + f"  host share {row['host_share']:.1%}  compile {row['compile_s']:.1f}"
                  + f"  final eval {row['final_eval_s']:.1f}", flush=True)


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
