"""Cost and quality of the theta update on recorded update problems.

`--record` runs a short SAILOR run judged by the expert (the `expert_cpu` setting of
`benchmarks/phases.py`: cpu preset, 4 + 4 baseline seeds, 256 envs, 8 PPO updates per segment)
and saves every per-seed update problem it solved (theta, the trajectories' feature sums `Phi`,
the preference pairs and the update's generator state) as JSON. The replay (the default) solves
those problems again and reports seconds per update, how often the update was accepted and the
objective before and after it; then the time of one iteration's seed updates run serially and
in worker processes (`alignment.parallel.update_many`), and whether both give the same thetas.

    python benchmarks/results/bo_acquisition/theta_update.py --record --problems problems.json
    python benchmarks/results/bo_acquisition/theta_update.py --json
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import sys
import tempfile
import time

import numpy as np

from sailor_jax.alignment.parallel import update_many
from sailor_jax.alignment.updates import update_theta
from sailor_jax.cli import parse_args
from sailor_jax.config import PAPER
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import open_text, stored_path, to_jsonable
from sailor_jax.run import run_dir
from sailor_jax.types import Preferences
from sailor_lab.report import machine

HERE = os.path.dirname(os.path.abspath(__file__))
"""This script's folder, where the recorded problems are stored."""
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
"""The repository's root folder (`experiments/` holds the presets `--record` runs)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Cost and quality of the theta update on recorded update problems."""

    record: bool = False
    """Record the update problems of a short expert-judged SAILOR run (instead of replaying)."""
    problems: str = os.path.join(HERE, "update_problems.json.gz")
    """Recorded problems as JSON (gzip-compressed when named `.gz`): written by --record, read
    by the replay; by default the problems stored beside this script."""
    iterations: int = 8
    """--record: SAILOR iterations (4 seeds each: 4 problems per iteration)."""
    repeats: int = 2
    """Replay: generators per problem: the recorded one, then `repeats - 1` fresh seeds."""
    json: bool = False
    """Replay: print JSON lines only."""


def record(args: Args) -> None:
    """Run SAILOR and save every `update_theta` call of `align_step` (host-only)."""
    from sailor_jax.run import loop, theta_update

    sys.path.insert(0, os.path.join(ROOT, "experiments"))
    import sailor as sailor_cli  # the presets of experiments/sailor.py

    cfg = sailor_cli.PRESETS["cpu"]
    cfg = dataclasses.replace(
        cfg, iterations=args.iterations, num_seeds=4,
        ranker=dataclasses.replace(cfg.ranker, kind="expert", expert_verdict="regret"),
        ppo=dataclasses.replace(cfg.ppo, num_envs=256, updates_per_segment=8),
        eval=dataclasses.replace(cfg.eval, episodes=8))
    problems, original = [], theta_update.update_many

    def recording(calls, workers=0):
        for theta, phi, prefs, _spec, alignment, rng in calls:
            problems.append({"theta": theta, "Phi": phi, "i": prefs.i, "j": prefs.j,
                             "w": prefs.w, "discordant": prefs.discordant,
                             "rng_state": rng.bit_generator.state,
                             "alignment": dataclasses.asdict(alignment)})
        return original(calls, workers)

    theta_update.update_many = recording
    with tempfile.TemporaryDirectory() as out:
        loop.run(cfg, out)
    opener = gzip.open if args.problems.endswith(".gz") else open
    with opener(args.problems, "wt") as f:
        json.dump(to_jsonable({"config": dataclasses.asdict(cfg), "machine": machine(),
                               "problems": problems}), f)
    print(f"{len(problems)} update problems -> {args.problems}", file=sys.stderr)


def _load(path: str) -> tuple[list[dict], object]:
    if not os.path.exists(stored_path(path)):
        raise UserError(f"no recorded problems at {path}", "run `theta_update.py --record` first")
    with open_text(path) as f:
        data = json.load(f)
    from sailor_jax.config import SailorConfig

    spec = SailorConfig().reward_spec()
    return data["problems"], spec


def _call(p: dict, k: int, spec, repeat: int) -> tuple:
    """`update_theta` arguments of problem `p` (number `k`) under its recorded settings (less
    the retired ones, `run_dir.RETIRED`); generator `repeat` (0: the recorded one, else a fresh
    one seeded by `[k, repeat]`)."""
    rng = np.random.default_rng([k, repeat])
    if repeat == 0:
        rng.bit_generator.state = p["rng_state"]
    prefs = Preferences(i=np.asarray(p["i"], np.int32), j=np.asarray(p["j"], np.int32),
                        w=np.asarray(p["w"], np.float32),
                        discordant=np.asarray(p["discordant"], bool))
    recorded = run_dir.current_config({"alignment": p["alignment"]})["alignment"]
    # a field the recorded config lacks ran as the paper's update (its default then)
    cfg = dataclasses.replace(PAPER.alignment, **{**recorded, "update_workers": 1})
    return (np.asarray(p["theta"], np.float32), np.asarray(p["Phi"], np.float64), prefs, spec,
            cfg, rng)


def replay(args: Args) -> None:
    """Print one line (or JSON line) for the updates, then the serial-vs-parallel line."""
    problems, spec = _load(args.problems)
    rows, t0 = [], time.perf_counter()
    for k, p in enumerate(problems):
        for r in range(args.repeats):
            u = update_theta(*_call(p, k, spec, r))
            rows.append((u.accepted, u.objective_before, u.objective_after))
    seconds = (time.perf_counter() - t0) / len(rows)
    table = np.asarray(rows, np.float64)
    _emit({"setting": "default BO", "updates": len(rows), "seconds_per_update": seconds,
           "accepted": float(table[:, 0].mean()), "objective_before": float(table[:, 1].mean()),
           "objective_after": float(table[:, 2].mean())}, args.json)
    _emit(_parallel_line(problems, spec), args.json)


def _parallel_line(problems: list[dict], spec) -> dict:
    """One iteration's 4 seed updates (default settings) serially and in worker processes."""
    timing, out = {}, {}
    for workers in (1, 0, 1, 0):  # A B A B: best of each; fresh generators every time
        calls = [_call(p, k, spec, 0) for k, p in enumerate(problems[:4])]
        t0 = time.perf_counter()
        out[workers] = update_many(calls, workers)
        timing.setdefault(workers, []).append(time.perf_counter() - t0)
    serial, parallel = out[1], out[0]
    same = all(np.array_equal(a.theta, b.theta) for a, b in zip(serial, parallel, strict=True))
    return {"setting": "one iteration, 4 seeds, default BO", "serial_s": min(timing[1]),
            "parallel_s": min(timing[0]), "parallel_first_call_s": timing[0][0],
            "workers": os.cpu_count(), "same_thetas": same, "machine": machine()}


def _emit(line: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(to_jsonable(line)), flush=True)
    else:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in line.items()
               if k != "machine"}, flush=True)


def main(args: Args) -> None:
    """Record the problems (`--record`) or replay them."""
    if args.record:
        record(args)
    else:
        replay(args)


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
