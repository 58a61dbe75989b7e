"""Learning benchmark: how fast a PPO (or DQN) recipe learns 2048, in env steps and wall-clock.

    python benchmarks/learning.py --recipe v0 default --total-timesteps 10000000 \\
        --num-seeds 3 --eval-every 1000000 --json --out runs/learning

For each `--recipe` (named `PPOConfig`s, or `DQNConfig`s for the `DQN_RECIPES` names:
`sailor_jax.config.recipes`, `sailor_lab.dqn.DQN_RECIPES`), trains PPO (or DQN) on a fixed
reward (the baseline `theta0`, or `--theta`) with `--num-seeds` seeds vmapped in one
program, and every `--eval-every` env steps per seed plays `--eval-episodes` greedy games per
seed (native game score). Each evaluation is one JSON line (printed with `--json`, and
written to `{out}/{recipe}/curve.jsonl`): `env_steps` (per seed), `train_s` (training
seconds so far: compile, evaluation and checkpoints excluded), `sps` (env steps per second
over all seeds), `score_mean` with `score_ci_low`/`score_ci_high` (95% Student-t interval
over the seeds' mean scores), `tile_512`..`tile_4096` (fraction of games, pooled),
`win_rate_mean` (mean over seeds of the fraction reaching 2048) with `win_rate_ci_low/high`,
`length_mean`, and the seeds' own `score_per_seed` / `win_rate_per_seed` (lists, seed order;
`benchmarks/compare_recipes.py` pools them over runs). The figure `{out}/learning.png` shows
score and 2048-rate against env steps and training seconds, one line per recipe. Runs
checkpoint every evaluation; `--resume` continues them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time

import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sailor_jax.agents import ppo  # noqa: E402
from sailor_jax.cli import parse_args  # noqa: E402
from sailor_jax.config import EvalConfig, PPOConfig  # noqa: E402
from sailor_jax.config.recipes import RECIPES, recipe  # noqa: E402
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402
from sailor_jax.game.reward import RewardSpec  # noqa: E402
from sailor_jax.run.fixed_reward import FixedReward  # noqa: E402
from sailor_jax.run.run_guard import claim_out_dir  # noqa: E402
from sailor_jax.run.runner import evaluate_rows, run_segments  # noqa: E402
from sailor_lab import (
    dqn,  # noqa: E402
    report,  # noqa: E402
)
from sailor_lab.dqn import DQN_RECIPES, DQNConfig  # noqa: E402

TILES = (512, 1024, 2048, 4096)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """PPO (or DQN) learning curves of named recipes on a fixed reward."""

    recipe: tuple[str, ...] = ("default",)
    """Recipe names (run one after the other, same seeds and budget); see --list."""
    total_timesteps: int = 5_000_000
    """Env steps per seed (rounded up to whole evaluation intervals)."""
    num_seeds: int = 3
    """Seeds, vmapped in one program."""
    seed: int = 0
    """Root PRNG seed (the same for every recipe)."""
    theta: tuple[float, ...] | None = None
    """Reward weights (8, feature order); None = the baseline theta0."""
    eval_every: int = 1_000_000
    """Env steps per seed between greedy evaluations (rounded to whole PPO updates)."""
    eval_episodes: int = 64
    """Greedy games per seed at each evaluation."""
    eval_max_len: int = 50_000
    """Move cap of an evaluation game."""
    out: str = "runs/learning"
    """Output folder: one run folder per recipe, and learning.png."""
    resume: bool = False
    """Continue the recipes' runs in --out from their latest checkpoints."""
    devices: int | None = None
    """Devices the seeds are sharded over (default: all JAX sees)."""
    json: bool = False
    """Print the JSON lines (otherwise one readable line per evaluation)."""
    list: bool = False
    """List the recipes and exit."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LearningRun:
    """One recipe's run (saved as its config.json; resume needs the same)."""

    recipe: str
    agent: PPOConfig | DQNConfig
    theta: tuple[float, ...]
    total_timesteps: int
    num_seeds: int
    seed: int
    eval: EvalConfig

    @property
    def num_segments(self) -> int:
        """Segments (one evaluation interval each) covering `total_timesteps`, rounded up."""
        return math.ceil(self.total_timesteps / self.agent.steps_per_segment)


def run_config(args: Args, name: str) -> LearningRun:
    """The run of recipe `name`: its config with one evaluation interval per segment (PPO:
    whole updates, and a linear lr over "the whole run" decays over the run's updates,
    `PPOConfig.over_run`; DQN: whole vectorised env steps, `DQNConfig.num_steps`).

    Raises:
      ValueError: unknown recipe, bad theta, non-positive budget or interval.
    """
    for field in ("total_timesteps", "num_seeds", "eval_every"):
        if getattr(args, field) <= 0:
            raise UserError(f"--{field.replace('_', '-')} must be positive, "
                             f"got {getattr(args, field)}")
    cfg = recipe(name, DQN_RECIPES)
    if isinstance(cfg, DQNConfig):  # a DQN segment is a scan of env steps: any length
        cfg = dataclasses.replace(cfg, num_steps=max(1, round(args.eval_every / cfg.num_envs)))
    else:
        cfg = dataclasses.replace(cfg, updates_per_segment=max(1, round(args.eval_every
                                                                         / cfg.batch_size)))
    spec = RewardSpec()
    theta = spec.validate(args.theta if args.theta is not None else spec.start)
    run = LearningRun(recipe=name, agent=cfg,
                      theta=tuple(float(v) for v in theta),
                      total_timesteps=args.total_timesteps, num_seeds=args.num_seeds,
                      seed=args.seed,
                      eval=EvalConfig(episodes=args.eval_episodes, max_len=args.eval_max_len))
    if isinstance(cfg, DQNConfig):
        return run
    return dataclasses.replace(
        run, agent=cfg.over_run(run.num_segments * cfg.updates_per_segment))


def curve_point(run: LearningRun, evaluation: dict, env_steps: int, train_s: float) -> dict:
    """One JSON line of the curve from an `evaluate_rows` dict. Host-only."""
    per_seed = report.per_seed_metrics(evaluation)
    score, score_lo, score_hi = report.mean_ci(per_seed["score"])
    win, win_lo, win_hi = report.mean_ci(per_seed["win_rate"])
    point = {"recipe": run.recipe, "env_steps": env_steps, "train_s": round(train_s, 2),
             "sps": round(run.num_seeds * env_steps / train_s, 1),
             "seeds": run.num_seeds, "episodes_per_seed": run.eval.episodes,
             "score_mean": score, "score_ci_low": score_lo, "score_ci_high": score_hi}
    point.update({f"tile_{t}": evaluation["max_tile_rates"][str(t)] for t in TILES})
    point.update(win_rate_mean=win, win_rate_ci_low=win_lo, win_rate_ci_high=win_hi,
                 length_mean=evaluation["length_mean"], score_per_seed=per_seed["score"],
                 win_rate_per_seed=per_seed["win_rate"])
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in point.items()}


@dataclasses.dataclass
class LearningCurve(FixedReward):
    """`FixedReward` hooks that evaluate greedily after every segment and keep the curve."""

    run: LearningRun | None = None
    key: jax.Array | None = None
    path: str = ""
    emit: object = print
    curve: list = dataclasses.field(default_factory=list)

    def after_segment(self, segment, runner, metrics, seconds, logger) -> str:
        description = super().after_segment(segment, runner, metrics, seconds, logger)
        t0 = time.perf_counter()
        agent, protocol = self.run.agent, self.run.eval
        evaluate = dqn.make_evaluate(agent.network, protocol.episodes, protocol.max_len
                                     ) if isinstance(agent, DQNConfig) else None
        evaluation = evaluate_rows(runner.params, agent.network, protocol,
                                   jax.random.fold_in(self.key, segment), self.run.num_seeds,
                                   evaluate)
        self.timings["eval"] = self.timings.get("eval", 0.0) + time.perf_counter() - t0
        point = curve_point(self.run, evaluation, (segment + 1) * self.steps_per_segment,
                            self.timings["train"])
        self.curve.append(point)
        with open(self.path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(p) + "\n" for p in self.curve)
        self.emit(point)
        return description

    def to_json(self) -> dict:
        return {"timings": dict(self.timings), "curve": list(self.curve)}

    def load_json(self, state: dict) -> None:
        self.timings.update(state["timings"])
        self.curve[:] = state["curve"]


def train_recipe(run: LearningRun, out_dir: str, resume: bool, emit,
                 devices: int | None = None) -> list[dict]:
    """Train one recipe with an evaluation after every segment; return its curve points."""
    with claim_out_dir(out_dir, run, resume):
        return _train_claimed(run, out_dir, resume, emit, devices)


def _train_claimed(run: LearningRun, out_dir: str, resume: bool, emit,
                   devices: int | None) -> list[dict]:
    """`train_recipe` in the folder it holds (`run_guard.claim_out_dir`)."""
    q_learning = isinstance(run.agent, DQNConfig)
    init, segment = (dqn if q_learning else ppo).make_train(run.agent, num_seeds=run.num_seeds)
    key_init, key_eval = jax.random.split(jax.random.PRNGKey(run.seed))
    hooks = LearningCurve(np.tile(np.asarray(run.theta, np.float32), (run.num_seeds, 1)),
                          run.num_segments, run.agent.steps_per_segment,
                          0 if q_learning else run.agent.batch_size,
                          segment_record=dqn.segment_record if q_learning else None,
                          run=run, key=key_eval, path=os.path.join(out_dir, "curve.jsonl"),
                          emit=emit)
    run_segments(out_dir, init(key_init), segment, hooks, resume=resume, tensorboard=False,
                 devices=devices)
    return hooks.curve


def plot_curves(curves: dict[str, list[dict]], path: str) -> None:
    """Score and 2048-rate against env steps and training seconds, one line per recipe."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharey="row")
    for name, points in curves.items():
        if not points:
            continue
        col = {k: np.array([np.nan if p[k] is None else p[k] for p in points], np.float64)
               for k in points[0] if k != "recipe"}
        for j, x in enumerate((col["env_steps"], col["train_s"])):
            for i, (m, label) in enumerate((("score", "mean game score"),
                                            ("win_rate", "2048-tile rate"))):
                ax = axes[i, j]
                line, = ax.plot(x, col[f"{m}_mean"], marker="o", ms=3, label=name)
                ax.fill_between(x, col[f"{m}_ci_low"], col[f"{m}_ci_high"], alpha=0.2,
                                color=line.get_color())
                ax.set_ylabel(label)
                ax.set_xlabel("env steps per seed" if j == 0 else "training seconds")
                ax.grid(alpha=0.3)
    axes[0, 0].legend()
    fig.suptitle("PPO on 2048, greedy evaluation (mean and 95% CI over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _readable(point: dict) -> str:
    return (f"{point['recipe']:>14}  {point['env_steps']:>11,} steps  {point['train_s']:8.0f} s  "
            f"SPS {point['sps']:8,.0f}  score {point['score_mean']:7,.0f}  "
            f"2048 {point['win_rate_mean']:.3f}  4096 {point['tile_4096']:.3f}  "
            f"len {point['length_mean']:6.0f}")


def main(args: Args) -> dict[str, list[dict]]:
    if args.list:
        for name, cfg in {**RECIPES, **DQN_RECIPES}.items():
            print(f"{name}: {cfg}")
        return {}
    runs = [run_config(args, name) for name in args.recipe]  # every error before any work
    for run in runs:  # the budget each recipe will run (rounded up to whole segments)
        steps = run.agent.steps_per_segment
        total = run.num_segments * steps
        print(f"{run.recipe}: {total:,} env steps per seed x {run.num_seeds} seeds "
              f"(--total-timesteps {run.total_timesteps:,} rounded up to whole segments of "
              f"{steps:,})", file=sys.stderr if args.json else sys.stdout, flush=True)
    header = report.machine()
    emit = (lambda p: print(json.dumps({**p, **header}), flush=True)) if args.json else \
        (lambda p: print(_readable(p), flush=True))
    curves = {run.recipe: train_recipe(run, os.path.join(args.out, run.recipe), args.resume,
                                       emit, args.devices) for run in runs}
    plot_curves(curves, os.path.join(args.out, "learning.png"))
    return curves


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
