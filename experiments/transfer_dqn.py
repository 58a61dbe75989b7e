"""Reward-transfer test: train DQN on the theta a SAILOR run learned and on the baseline reward.

    python experiments/transfer_dqn.py --sailor-results runs/sailor_cpu --out runs/transfer_dqn

Reads the SAILOR run's `results.json` (a file or the run folder): DQN seed s trains on the final
theta of SAILOR seed `s mod S_sailor`. Both rewards train in one compiled program (theta
`[2S, F]`: rows 0..S-1 the SAILOR thetas, rows S..2S-1 the baseline `RewardSpec().theta0`),
from the same initial networks and games per seed and for the same env-step budget, and are
evaluated with the same greedy protocol and keys as PPO. Writes `transfer.csv`, `transfer.md`
(the `report` table: `dqn_sailor_theta`, `dqn_baseline_theta`), `config.json` and
`results.json` (config, thetas, evaluations, training curves, timings, SPS) under `--out`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from sailor_jax import dqn, report
from sailor_jax.config import DQNConfig, EvalConfig
from sailor_jax.logging import to_jsonable
from sailor_jax.reward import RewardSpec
from sailor_jax.trainer import evaluate_seeds, prepare_out_dir

VARIANTS: tuple[str, str] = ("dqn_sailor_theta", "dqn_baseline_theta")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """DQN reward-transfer test (small CPU defaults; scale --total-timesteps and --dqn.*)."""

    sailor_results: str
    """A SAILOR run's results.json, or the folder holding it."""
    out: str = "runs/transfer_dqn"
    """Output folder (must not hold a previous run)."""
    num_seeds: int = 2
    """DQN seeds per reward (vmapped; both rewards share them)."""
    seed: int = 0
    """Root PRNG seed."""
    total_timesteps: int = 200_000
    """Env steps (moves) per seed and reward; rounded up to whole segments."""
    dqn: DQNConfig = DQNConfig()
    """DQN hyperparameters."""
    eval: EvalConfig = EvalConfig(episodes=64)
    """Final evaluation (per seed)."""

    def __post_init__(self) -> None:
        if self.num_seeds <= 0 or self.total_timesteps <= 0:
            raise ValueError(f"num_seeds and total_timesteps must be positive, got "
                             f"{self.num_seeds}, {self.total_timesteps}")

    @property
    def num_segments(self) -> int:
        return math.ceil(self.total_timesteps / self.dqn.steps_per_segment)


def load_sailor_thetas(path: str, spec: RewardSpec | None = None) -> tuple[np.ndarray, str]:
    """Read the final per-seed thetas and the judge kind of a SAILOR run. Host-only.

    Args:
      path: `results.json` of `experiments/sailor.py`, or the folder holding it. Uses
        `theta_history[-1]` (`[S][F]`, in the order of `feature_names` when present).
      spec: the reward specification thetas are validated against and reordered to
        (default `RewardSpec()`).

    Returns:
      `(thetas float32[S, F] in spec order, judge)`; judge is `ranker.kind` or "-".

    Raises:
      FileNotFoundError: no results.json at `path`.
      ValueError: not JSON, no usable `theta_history`, unknown feature names, or a theta of the
        wrong length or out of bounds (the message names the file and the seed).
    """
    spec = spec or RewardSpec()
    file = os.path.join(path, "results.json") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise FileNotFoundError(f"no SAILOR results.json at {path!r}")
    try:
        with open(file, encoding="utf-8") as f:
            results = json.load(f)
    except json.JSONDecodeError as err:
        raise ValueError(f"{file} is not valid JSON: {err}") from err
    history = results.get("theta_history") if isinstance(results, dict) else None
    if not isinstance(history, list) or not history or not isinstance(history[-1], list) \
            or not history[-1]:
        raise ValueError(f"{file} has no 'theta_history' (a non-empty [iterations][seeds][F] "
                         "list); is it a SAILOR results.json?")
    names = list(results.get("feature_names") or spec.names)
    if sorted(names) != sorted(spec.names):
        raise ValueError(f"{file}: feature_names {names} do not match {list(spec.names)}")
    order = [names.index(n) for n in spec.names]
    thetas = []
    for s, theta in enumerate(history[-1]):
        if not isinstance(theta, list) or len(theta) != len(names):
            raise ValueError(f"{file}: final theta of seed {s} must be a list of {len(names)} "
                             f"numbers ({names}), got {theta!r}")
        try:
            thetas.append(spec.validate([theta[k] for k in order]))
        except (ValueError, TypeError) as err:
            raise ValueError(f"{file}: final theta of seed {s}: {err}") from err
    ranker = results.get("ranker")
    judge = str(ranker.get("kind", "-")) if isinstance(ranker, dict) else "-"
    return np.stack(thetas), judge


def _curve(metrics: dict, num_seeds: int) -> dict:
    """Per-variant mean (over its seeds, NaN-aware) of one segment's metrics. Host-only."""
    out = {}
    for v, variant in enumerate(VARIANTS):
        rows = slice(v * num_seeds, (v + 1) * num_seeds)
        out[variant] = {}
        for name, value in metrics.items():
            x = np.asarray(value, np.float64)[rows]
            out[variant][name] = float(np.nanmean(x)) if np.isfinite(x).any() else None
    return out


def run(args: Args, progress: Progress | None = None) -> dict:
    """Train both rewards, evaluate, write the tables and results.json. Host-only.

    Raises:
      ValueError / FileNotFoundError: see `load_sailor_thetas`; `--out` already holds a run.
    """
    spec, s = RewardSpec(), args.num_seeds
    sailor_thetas, judge = load_sailor_thetas(args.sailor_results, spec)
    config_json = json.dumps(to_jsonable(dataclasses.asdict(args)), indent=2, sort_keys=True)
    prepare_out_dir(args.out, config_json, resume=False)
    used = sailor_thetas[np.arange(s) % len(sailor_thetas)]
    baseline = np.tile(spec.validate(spec.theta0), (s, 1))
    thetas = jnp.asarray(np.concatenate([used, baseline]), jnp.float32)  # [2S, F]
    init, segment = dqn.make_train(args.dqn, num_seeds=s)
    key_init, key_eval = jax.random.split(jax.random.PRNGKey(args.seed))
    runner = jax.tree.map(lambda x: jnp.concatenate([x, x]), init(key_init))  # same seeds
    timings = {}
    t0 = time.perf_counter()
    segment = segment.lower(runner, thetas).compile()
    timings["compile_s"] = time.perf_counter() - t0
    task = progress.add_task("train", total=args.num_segments) if progress else None
    curves, t0 = [], time.perf_counter()
    for _ in range(args.num_segments):
        runner, metrics = segment(runner, thetas)
        curves.append(_curve(dataclasses.asdict(jax.device_get(metrics)), s))
        if progress:
            score = curves[-1][VARIANTS[0]]["episode_score"]
            progress.update(task, advance=1, description=f"train  sailor-theta score "
                            f"{score if score is not None else float('nan'):7.0f}")
    timings["train_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    evaluate = dqn.make_evaluate(args.dqn.network, args.eval.episodes, args.eval.max_len,
                                 args.eval.greedy)
    evaluations = {v: evaluate_seeds(evaluate, jax.tree.map(lambda x, k=k: x[k * s:(k + 1) * s],
                                                            runner.params), key_eval, s)
                   for k, v in enumerate(VARIANTS)}
    timings["eval_s"] = time.perf_counter() - t0
    steps = args.num_segments * args.dqn.steps_per_segment
    wall = sum(timings.values())
    # The judge column says where the reward came from: the baseline theta had no judge.
    rows = [report.summary_row(v, evaluations[v], judge=judge if k == 0 else "-",
                               env_steps_per_seed=steps, wall_clock_s=wall)
            for k, v in enumerate(VARIANTS)]
    csv_path, md_path = report.write_tables(rows, args.out, "transfer")
    results = {
        "config": json.loads(config_json), "judge": judge, "feature_names": list(spec.names),
        "thetas": {VARIANTS[0]: used.tolist(), VARIANTS[1]: baseline.tolist()},
        "env_steps_per_seed": steps, "evaluation": evaluations, "train_curves": curves,
        "timings": timings, "sps": 2 * s * steps / timings["train_s"],
        "wall_clock_note": "both rewards train in one vmapped program; wall_clock_s is its "
                           "compile + train + eval seconds",
        "tables": {"csv": csv_path, "md": md_path}, "rows": rows,
    }
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(to_jsonable(results), f, indent=2)
    return results


def main(argv: list[str] | None = None) -> dict:
    args = tyro.cli(Args, args=argv)
    console = Console()
    columns = (TextColumn("{task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total} segments"), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        results = run(args, progress)
    with open(results["tables"]["md"], encoding="utf-8") as f:
        print(f.read(), end="")
    t = results["timings"]
    print(f"compile {t['compile_s']:.1f} s, train {t['train_s']:.1f} s "
          f"({results['sps']:,.0f} env steps/s over {2 * args.num_seeds} rows), eval "
          f"{t['eval_s']:.1f} s; results in {os.path.join(args.out, 'results.json')}")
    return results


if __name__ == "__main__":
    main()
