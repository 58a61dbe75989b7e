"""Headroom over theta0: a CMA-ES search for the fixed reward theta whose agent scores best.

    python experiments/theta_search.py --preset tiny --out runs/theta_search_tiny
    python experiments/theta_search.py --preset budget_1m --out runs/theta_search_1m
    python experiments/theta_search.py --preset budget_5m --out runs/theta_search_5m --json
    python experiments/theta_search.py budget_1m --search.population 12 --out runs/ts_1m_p12

CMA-ES (Hansen's `cma` package) over the tunable weights within [-1, 1], from theta0: each
generation trains `--search.population` candidates x `--search.seeds-per-candidate` seeds from
scratch as the rows of one compiled PPO program, for `--search.total-timesteps` env steps per
row, and scores each candidate by the mean greedy game score of its rows. Then the best
candidate (`--search.pick mean`: CMA's final mean) and theta0 are retrained on
`--search.retrain-seeds` fresh paired seeds at the same budget; the table gives both arms'
mean [95% CI] and the paired difference [95% CI].

Presets (7 programs: 6 generations, the retrain; wall-clock measured on the 2-core AMD EPYC,
nothing else running; see docs/experiments.md):
  tiny       3 generations of 3 x 2 rows, seconds of training: the test's run (~2 min, compiling)
  budget_1m  1,048,576 env steps per row, 6 generations of 8 x 2 rows, 8 retrain seeds
             (117M env steps: 39 min measured at 49-55k env steps/s)
  budget_5m  5,111,808 env steps per row, 6 generations of 8 x 1 rows, CMA's final mean
             retrained on 8 seeds (327M env steps: 95 min measured at 57-60k env steps/s)

Output in `--out`: `config.json`, `generations/gNNN/` (a run folder per generation, with
checkpoints, and `generation.json`: candidates, per-row scores, CMA mean and sigma),
`retrain/`, `theta_search.json` and `theta_search.md`. Running the same command again resumes:
scored generations are replayed into CMA-ES, a killed generation or retrain continues from its
newest segment checkpoint. `--json` prints only JSON lines on stdout: one per generation, then
the result; progress goes to stderr.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

from rich.console import Console

from sailor_jax.cli import make_console, parse_with_presets, progress_bar, resumed_by_rerunning
from sailor_jax.config import EvalConfig, NetworkConfig, PPOConfig
from sailor_jax.errors import report_user_errors
from sailor_lab.headroom import run_search
from sailor_lab.search_config import ThetaSearchConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Theta search: CMA-ES over fixed rewards, then the best and theta0 on fresh seeds."""

    search: ThetaSearchConfig
    """The search (preset values, overridable field by field)."""
    out: str = "runs/theta_search"
    """Output folder; running again with the same folder resumes."""
    json: bool = False
    """Print only JSON lines on stdout (one per generation, then the result)."""


def _preset(text: str, args: Args) -> tuple[str, Args]:
    """A preset: `text`, then what its numbers make of a row (envs, segment, env steps)."""
    s = args.search
    return (f"{text}; {s.ppo.num_envs} envs, a segment is {s.ppo.steps_per_segment:,} env "
            f"steps, {s.num_segments} per row ({s.env_steps_per_row:,} env steps)", args)


PRESETS: dict[str, tuple[str, Args]] = {
    "tiny": _preset("a few seconds of training per generation: the test's run", Args(
        search=ThetaSearchConfig(
            total_timesteps=256, population=3, generations=3, seeds_per_candidate=2,
            retrain_seeds=2, eval=EvalConfig(episodes=4, max_len=300),
            ppo=PPOConfig(num_envs=16, num_steps=8, updates_per_segment=1,
                          network=NetworkConfig(hidden_sizes=(16,)))))),
    "budget_1m": _preset("~1M env steps per row, 39 minutes on a 2-core CPU", Args(
        search=ThetaSearchConfig(total_timesteps=1_000_000))),
    # One seed per candidate halves the cost; the CMA mean is retrained rather than the best
    # candidate, whose one-seed score is partly selected noise.
    "budget_5m": _preset("~5M env steps per row, 1 seed per candidate, 95 minutes on a 2-core "
                         "CPU", Args(search=ThetaSearchConfig(total_timesteps=5_000_000,
                                                              seeds_per_candidate=1,
                                                              pick="mean"))),
}


def parse(argv: list[str]) -> tuple[str, Args]:
    """`--preset NAME` (default tiny), then any field over that preset's defaults (tyro)."""
    return parse_with_presets(PRESETS, argv, "Theta search (CMA-ES)", default="tiny")


def generation_line(record: dict) -> dict:
    """The JSON line of one finished (or replayed) generation."""
    return {"event": "generation", "generation": record["generation"],
            "resumed": record["resumed"], "score_mean": record["score_mean"],
            "best_score": max(record["score_mean"]), "cma_mean": record["cma"]["mean"],
            "cma_sigma": record["cma"]["sigma"], "sps": record["sps"]}


def result_line(result: dict, out: str) -> dict:
    """The final JSON line: the picked theta, both arms and the paired difference."""
    arms = {arm: {k: v for k, v in stats.items() if k != "evaluation"}
            for arm, stats in result["retrain"].items()}
    return {"event": "result", "picked": result["picked"], "feature_names":
            result["feature_names"], "env_steps_per_row": result["env_steps_per_row"],
            **arms, "difference": result["difference"],
            "results": os.path.join(out, "theta_search.json")}


def main(argv: list[str] | None = None) -> dict:
    preset, args = parse(sys.argv[1:] if argv is None else argv)
    console = Console(stderr=True) if args.json else make_console()

    def on_generation(record: dict) -> None:
        line = generation_line(record)
        if args.json:
            print(json.dumps(line), flush=True)
        else:
            console.print(f"generation {line['generation']}"
                          f"{' (read back)' if line['resumed'] else ''}: best "
                          f"{line['best_score']:,.0f}, sigma {line['cma_sigma']:.3f}",
                          markup=False)

    if not args.json:
        console.print(f"theta search preset={preset} out={args.out}", markup=False)
    with resumed_by_rerunning(args.out), progress_bar(console, "segments") as progress:
        result = run_search(args.search, args.out, progress, on_generation)
    if args.json:
        print(json.dumps(result_line(result, args.out)), flush=True)
    else:
        with open(os.path.join(args.out, "theta_search.md"), encoding="utf-8") as f:
            print(f.read())
    return result


if __name__ == "__main__":
    report_user_errors(main)
