"""Reward-transfer test: train DQN on the theta a SAILOR run learned and on the baseline reward.

    python experiments/transfer_dqn.py --sailor-results runs/sailor_cpu --out runs/transfer_dqn

Reads the SAILOR run's `results.json` (a file or the run folder): DQN seed s trains on the final
theta of SAILOR seed `s mod S_sailor`. Both rewards train in one compiled program (theta
`[2S, F]`: rows 0..S-1 the SAILOR thetas, rows S..2S-1 the baseline reward theta0),
from the same initial networks and games per seed and for the same env-step budget, and are
evaluated with the same greedy protocol and keys as PPO. Training goes through the one segment
runner (`sailor_jax.run.runner`: checkpoints every segment, `--resume`). Writes `transfer.csv`,
`transfer.md` (the `report` table: `dqn_sailor_theta`, `dqn_baseline_theta`), `config.json`,
`metrics.jsonl` and `results.json` (config, thetas, evaluations, training curves, timings,
SPS) under `--out`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from sailor_jax.cli import make_console, parse_args, progress_bar
from sailor_jax.config import EvalConfig
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.game.reward import THETA0, RewardSpec
from sailor_jax.logging import to_jsonable
from sailor_jax.run import run_guard, runner
from sailor_jax.run.fixed_reward import FixedReward
from sailor_jax.run.results import read_json
from sailor_lab import dqn, report
from sailor_lab.dqn import DQNConfig

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
    resume: bool = False
    """Continue the run in --out from its latest checkpoint (same arguments)."""
    tensorboard: bool = True
    """Write TensorBoard event files next to metrics.jsonl."""

    def __post_init__(self) -> None:
        if self.num_seeds <= 0 or self.total_timesteps <= 0:
            raise ValueError(f"num_seeds and total_timesteps must be positive, got "
                             f"{self.num_seeds}, {self.total_timesteps}")

    @property
    def num_segments(self) -> int:
        return math.ceil(self.total_timesteps / self.dqn.steps_per_segment)


def load_sailor_thetas(path: str, spec: RewardSpec | None = None) -> tuple[np.ndarray, str]:
    """The final per-seed thetas and the judge kind of a SAILOR run. Host-only.

    Args:
      path: `results.json` of `experiments/sailor.py`, or the folder holding it. Uses
        `theta_history[-1]` (`[S][F]`, in the order of `feature_names` when present).
      spec: the reward specification thetas are validated against and reordered to
        (default `RewardSpec()`).

    Returns:
      `(thetas float32[S, F] in spec order, judge)`; judge is `ranker.kind` or "-".

    Raises:
      MissingFileError: no results.json at `path`.
      UserError: not JSON, no usable `theta_history`, unknown feature names, or a theta of the
        wrong length or out of bounds (the message names the file and the seed).
    """
    spec = spec or RewardSpec()
    file, results = read_json(path)
    history = results.get("theta_history")
    if not isinstance(history, list) or not history or not isinstance(history[-1], list) \
            or not history[-1]:
        raise UserError(f"{file} has no 'theta_history' (a non-empty [iterations][seeds][F] "
                        "list); is it a SAILOR results.json?")
    names = list(results.get("feature_names") or spec.names)
    if sorted(names) != sorted(spec.names):
        raise UserError(f"{file}: feature_names {names} do not match {list(spec.names)}")
    order = [names.index(n) for n in spec.names]
    thetas = []
    for s, theta in enumerate(history[-1]):
        if not isinstance(theta, list) or len(theta) != len(names):
            raise UserError(f"{file}: final theta of seed {s} must be a list of {len(names)} "
                            f"numbers ({names}), got {theta!r}")
        try:
            thetas.append(spec.validate([theta[k] for k in order]))
        except (ValueError, TypeError) as err:
            raise UserError(f"{file}: final theta of seed {s}: {err}") from err
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


@dataclasses.dataclass
class TransferHooks(FixedReward):
    """`runner.SegmentHooks` of the transfer test: fixed rewards, per-variant DQN curves."""

    num_seeds: int = 1
    curves: list[dict] = dataclasses.field(default_factory=list)

    def after_segment(self, segment, runner_state, metrics, seconds, logger) -> str:
        self.curves.append(_curve(dataclasses.asdict(metrics), self.num_seeds))
        logger.log((segment + 1) * self.steps_per_segment, self.curves[-1])
        score = self.curves[-1][VARIANTS[0]]["episode_score"]
        return f"train  sailor-theta score {score if score is not None else float('nan'):7.0f}"

    def to_json(self) -> dict:
        return {"timings": dict(self.timings), "curves": self.curves}

    def load_json(self, state: dict) -> None:
        self.timings.update(state["timings"])
        self.curves = list(state["curves"])


def run(args: Args, progress=None) -> dict:
    """Train both rewards, evaluate, write the tables and results.json. Host-only.

    Raises:
      UserError: see `load_sailor_thetas` and
        `run_guard.claim_out_dir` (`--out` holds a started run, or a different one, or
        another process runs there; the disk became full while running).
    """
    spec = RewardSpec()
    sailor_thetas, judge = load_sailor_thetas(args.sailor_results, spec)
    with run_guard.claim_out_dir(args.out, args, args.resume) as config:
        return _train(args, config, sailor_thetas, judge, progress)


def _train(args: Args, config: dict, sailor_thetas: np.ndarray, judge: str,
           progress) -> dict:
    """`run` in the folder it holds (`run_guard.claim_out_dir`, `config.json` written)."""
    spec, s = RewardSpec(), args.num_seeds
    used = sailor_thetas[np.arange(s) % len(sailor_thetas)]
    baseline = np.tile(spec.validate(THETA0), (s, 1))
    init, segment = dqn.make_train(args.dqn, num_seeds=s)
    key_init, key_eval = jax.random.split(jax.random.PRNGKey(args.seed))
    state = jax.tree.map(lambda x: jnp.concatenate([x, x]), init(key_init))  # same seeds
    hooks = TransferHooks(np.concatenate([used, baseline]).astype(np.float32),  # [2S, F]
                          args.num_segments, args.dqn.steps_per_segment, 0, num_seeds=s)
    state = runner.run_segments(args.out, state, segment, hooks, resume=args.resume,
                                tensorboard=args.tensorboard, progress=progress,
                                hparams=config)
    t0 = time.perf_counter()
    evaluate = dqn.make_evaluate(args.dqn.network, args.eval.episodes, args.eval.max_len)
    evaluations = {v: runner.evaluate_rows(runner.rows(state.params, k * s, s),
                                           args.dqn.network, args.eval, key_eval, s, evaluate)
                   for k, v in enumerate(VARIANTS)}
    hooks.timings["eval"] = time.perf_counter() - t0
    timings = {f"{k}_s": v for k, v in hooks.timings.items()}
    steps = args.num_segments * args.dqn.steps_per_segment
    wall = timings["compile_s"] + timings["train_s"] + timings["eval_s"]
    # The judge column says where the reward came from: the baseline theta had no judge.
    rows = [report.summary_row(v, evaluations[v], judge=judge if k == 0 else "-",
                               env_steps_per_seed=steps, wall_clock_s=wall)
            for k, v in enumerate(VARIANTS)]
    csv_path, md_path = report.write_tables(rows, args.out, "transfer")
    results = {
        "config": config, "judge": judge, "feature_names": list(spec.names),
        "thetas": {VARIANTS[0]: used.tolist(), VARIANTS[1]: baseline.tolist()},
        "env_steps_per_seed": steps, "evaluation": evaluations, "train_curves": hooks.curves,
        "timings": timings, "sps": 2 * s * steps / timings["train_s"],
        "wall_clock_note": "both rewards train in one vmapped program; wall_clock_s is its "
                           "compile + train + eval seconds",
        "tables": {"csv": csv_path, "md": md_path}, "rows": rows,
    }
    with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(to_jsonable(results), f, indent=2)
    return results


def parse(argv: list[str]) -> Args:
    """The flags (tyro); a mistake is one `error:` line, exit 2 (`cli.parse_args`)."""
    return parse_args(Args, argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse(sys.argv[1:] if argv is None else argv)
    console = make_console()
    with progress_bar(console, "segments") as progress:
        results = run(args, progress)
    with open(results["tables"]["md"], encoding="utf-8") as f:
        print(f.read(), end="")
    t = results["timings"]
    print(f"compile {t['compile_s']:.1f} s, train {t['train_s']:.1f} s "
          f"({results['sps']:,.0f} env steps/s over {2 * args.num_seeds} rows), eval "
          f"{t['eval_s']:.1f} s; results in {os.path.join(args.out, 'results.json')}")
    return results


if __name__ == "__main__":
    report_user_errors(main)
