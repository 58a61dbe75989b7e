"""Train PPO on a fixed reward (the seed plan's baseline by default) over vmapped seeds.

    python experiments/train_ppo.py --train.total-timesteps 2000000 --train.num-seeds 2 \\
        --out runs/ppo

Writes `config.json`, `metrics.jsonl`, TensorBoard events (`tb/`), checkpoints and
`results.json` (final evaluation in native game score, next to a uniformly random legal-move
policy) under `--out`; `--resume` continues a killed run there.
"""

from __future__ import annotations

import dataclasses
import os

from sailor_jax.cli import join_processes
from sailor_jax.errors import report_user_errors

report_user_errors(join_processes)  # --distributed: before pgx's import starts JAX's backend

from rich.table import Table  # noqa: E402

from sailor_jax.cli import Scale, ScaleArgs, parse_args, progress_bar, start  # noqa: E402
from sailor_jax.config import TrainConfig  # noqa: E402
from sailor_jax.run.fixed_reward import train_fixed  # noqa: E402


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Baseline PPO training."""

    train: TrainConfig = TrainConfig()
    """What to train."""
    out: str = "runs/train_ppo"
    """Output folder."""
    resume: bool = False
    """Continue the run in --out from its latest checkpoint."""
    scale: Scale = ScaleArgs()
    """Devices and processes."""


def parse(argv: list[str]) -> Args:
    """The flags (tyro); a mistake is one `error:` line, exit 2 (`cli.parse_args`)."""
    return parse_args(Args, argv)


def main(args: Args) -> dict:
    console = start(args.scale)
    console.print(args.train.budget(), markup=False)
    with progress_bar(console, "segments", remaining=True) as progress:
        results = train_fixed(args.train, args.out, resume=args.resume, progress=progress,
                              devices=args.scale.devices)
    table = Table(title=f"PPO on 2048, {results['env_steps_per_seed']:,} steps per seed")
    for col in ("policy", "episodes", "score mean", "score std", "max tile mean", "win rate"):
        table.add_column(col)
    rows = [("trained (pooled seeds)", results["evaluation"])]
    if "random_policy_evaluation" in results:
        rows.append(("uniform random legal", results["random_policy_evaluation"]))
    for name, ev in rows:
        table.add_row(name, str(ev["episodes"]), f"{ev['score_mean']:.0f}",
                      f"{ev['score_std']:.0f}", f"{ev['max_tile_mean']:.0f}",
                      f"{ev['win_rate']:.3f}")
    console.print(table)
    t = results["timings"]
    console.print(f"compile {t['compile_s']:.1f} s, train {t['train_s']:.1f} s "
                  f"({results['sps']:,.0f} env steps/s), eval {t['eval_s']:.1f} s; "
                  f"results in {os.path.join(args.out, 'results.json')}")
    return results


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse(argv)))
