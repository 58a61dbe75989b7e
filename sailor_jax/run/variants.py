"""Named runs of one experiment: each a SAILOR run folder, run, resumed or read back. Host-only.

The experiments that compare rewards or reward-learning methods (`experiments/ablations.py`,
`experiments/repair.py`) run one `SailorConfig` per variant in `OUT/variants/<name>/`. A
finished variant is read back from its `results.json`; an interrupted one resumes from its
last checkpoint; a folder holding another configuration is refused before any work is done.
"""

from __future__ import annotations

import csv
import json
import os

from sailor_jax.config import SailorConfig
from sailor_jax.errors import UserError
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.judges.factory import check_judges, judge_name
from sailor_jax.run import loop, run_dir
from sailor_jax.run.results import SailorResults
from sailor_jax.run.run_dir import config_differences, config_json


def judge_label(cfg: SailorConfig) -> str:
    """Short judge name for a table: "-" (fixed reward), "outcome", "expert", "llm:<model>"."""
    return judge_name(cfg.ranker) if cfg.self_align else "-"


def check_variant(name: str, cfg: SailorConfig, folder: str) -> None:
    """Check, before any work, that variant `name` can run (or be read back) in `folder`.

    A variant saved before a config field existed is read back when the field is at its
    default (`run_dir.config_differences`).

    Raises:
      UserError: the folder holds a run of another configuration, or the judge's model
        cannot be found (`judges.factory.check_judges`).
    """
    results_path = os.path.join(folder, "results.json")
    if os.path.exists(results_path):
        if config_differences(SailorResults.load(results_path).config,
                              json.loads(config_json(cfg)), cfg):
            raise UserError(f"{folder} holds variant {name!r} run with a different "
                            "configuration", "choose another --out")
        return
    run_dir.check_out_dir(folder, cfg, os.path.exists(os.path.join(folder, "config.json")))
    if cfg.self_align:
        check_judges(cfg)


def run_variant(name: str, cfg: SailorConfig, folder: str, console, progress=None,
                devices: int | None = None) -> SailorResults:
    """Run one variant, or read it back when finished; resume it when it was interrupted.

    Args:
      console: a `rich.console.Console` for one status line.

    Raises:
      UserError: the folder holds a run of a different configuration (`check_variant`).
    """
    check_variant(name, cfg, folder)
    results_path = os.path.join(folder, "results.json")
    if os.path.exists(results_path):
        results = SailorResults.load(results_path)
        console.print(f"variant {name}: finished earlier, read {results_path}", markup=False)
        return results
    resume = os.path.exists(os.path.join(folder, "config.json"))
    console.print(f"variant {name}: {'resuming' if resume else 'starting'}, {cfg.num_seeds} "
                  f"seeds, {cfg.iterations} iterations, judge {judge_label(cfg)}", markup=False)
    return loop.run(cfg, folder, resume=resume, progress=progress, devices=devices)


def theta_rows(name: str, results: SailorResults) -> list[dict]:
    """Long-format rows (variant, seed, iteration, one column per feature) of theta_history."""
    rows = []
    for t, per_seed in enumerate(results.theta_history):
        for s, theta in enumerate(per_seed):
            rows.append({"variant": name, "seed": s, "iteration": t,
                         **dict(zip(results.feature_names, theta, strict=True))})
    return rows


def write_theta_csv(path: str, results: dict[str, SailorResults]) -> None:
    """`theta_trajectories.csv`: the `theta_rows` of every variant, in `results` order."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["variant", "seed", "iteration", *FEATURE_NAMES])
        writer.writeheader()
        for name, r in results.items():
            writer.writerows(theta_rows(name, r))
