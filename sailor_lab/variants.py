"""Named runs of one experiment: each a SAILOR run folder, run, resumed or read back. Host-only.

The comparison experiment (`experiments/compare.py`) runs one `SailorConfig` per variant (a
start and an arm) in `OUT/variants/<name>/`. A
finished variant is read back from its `results.json`; an interrupted one resumes from its
last checkpoint, or starts over if it had none (its logs kept aside); a folder holding
another configuration is refused before any work is done.
`load_runs` reads the finished variants back (`experiments/plot.py`), saying which command
finishes the others.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import shutil
import time

from sailor_jax.config import SailorConfig
from sailor_jax.errors import MissingFileError, UserError
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.judges.factory import check_judges, judge_name
from sailor_jax.logging import open_text, stored_path
from sailor_jax.run import loop, run_dir
from sailor_jax.run.results import SailorResults
from sailor_jax.run.run_dir import config_differences, config_json

_log = logging.getLogger(__name__)


def judge_label(cfg: SailorConfig) -> str:
    """Short judge name for a table: "-" (fixed reward), "outcome", "expert", "llm:<model>"."""
    return judge_name(cfg.ranker) if cfg.self_align else "-"


def check_variant(name: str, cfg: SailorConfig, folder: str) -> None:
    """Check, before any work, that variant `name` can run (or be read back) in `folder`.

    A variant saved before a config field existed is read back when the field is at its
    default (`run_dir.config_differences`); a finished fixed-reward variant is read back
    whatever its judge and its `SEGMENTATION`, if the total of PPO updates is the same.

    Raises:
      UserError: the folder holds a run of another configuration, or the judge's model
        cannot be found (`judges.factory.check_judges`).
    """
    results_path = os.path.join(folder, "results.json")
    if os.path.exists(results_path):
        if _differences(SailorResults.load(results_path).config, cfg):
            raise UserError(f"{folder} holds variant {name!r} run with a different "
                            "configuration", "choose another --out")
        return
    if not stopped_unstarted(folder):  # one stopped before its first checkpoint starts over
        run_dir.check_out_dir(folder, cfg, os.path.exists(os.path.join(folder, "config.json")))
    if cfg.self_align:
        check_judges(cfg)


SEGMENTATION = ("iterations", "ppo.updates_per_segment")
"""How a run's PPO updates are cut into segments: a fixed-reward variant's training and final
evaluation do not depend on it (same per-seed scores for 16 x 8 and 32 x 4 updates, tested)."""


def _differences(saved: dict, cfg: SailorConfig) -> list[str]:
    """`config_differences` between a finished variant's saved config and `cfg`, where a
    fixed-reward variant (`self_align=False`) that differs only in its judge (`ranker.*`, which
    it never calls) or is cut into other segments of the same total number of PPO updates is no
    difference: it is read back, not run again."""
    given = json.loads(config_json(cfg))
    differences = config_differences(saved, given, cfg)
    if cfg.self_align or saved.get("self_align", True):
        return differences
    differences = [d for d in differences if not d.startswith("ranker.")]

    def total(c: dict) -> object:
        return c.get("iterations", 0) * c.get("ppo", {}).get("updates_per_segment", 0)

    if total(saved) != total(given):
        return differences
    return [d for d in differences if d.split(":")[0] not in SEGMENTATION]


def stopped_unstarted(folder: str) -> bool:
    """True if `folder` holds a variant that was stopped before its first checkpoint: its
    `config.json` was written, but no checkpoint and no results."""
    return (os.path.exists(os.path.join(folder, "config.json"))
            and not run_dir.run_started(folder))


def set_aside_logs(folder: str) -> str | None:
    """Move the logs of a variant stopped before its first checkpoint (`run_dir.RUN_LOGS`
    that exist, and its `config.json`) into `folder/stopped_<unix time>/`, so that the variant
    starts over in `folder` and nothing it wrote is lost; return that folder, or None when
    there were no logs (only `config.json` is removed then)."""
    logs = [n for n in run_dir.RUN_LOGS if os.path.exists(os.path.join(folder, n))]
    if not logs:
        os.remove(os.path.join(folder, "config.json"))
        return None
    kept = os.path.join(folder, f"stopped_{int(time.time())}")
    os.makedirs(kept, exist_ok=True)
    for name in [*logs, "config.json"]:
        shutil.move(os.path.join(folder, name), os.path.join(kept, name))
    return kept


def run_variant(name: str, cfg: SailorConfig, folder: str, console, progress=None,
                devices: int | None = None) -> SailorResults:
    """Run one variant, or read it back when finished; resume it when it was interrupted.

    Args:
      console: a `rich.console.Console` for one status line.

    Raises:
      UserError: the folder holds a run of a different configuration (`check_variant`).

    A variant stopped before its first checkpoint starts over; its logs are kept in a
    subfolder (`set_aside_logs`).
    """
    check_variant(name, cfg, folder)
    results_path = os.path.join(folder, "results.json")
    if os.path.exists(results_path):
        results = SailorResults.load(results_path)
        console.print(f"variant {name}: finished earlier, read {results_path}", markup=False)
        return results
    if stopped_unstarted(folder):
        kept = set_aside_logs(folder)
        if kept:
            console.print(f"variant {name}: stopped before its first checkpoint; its logs are "
                          f"kept in {kept}", markup=False)
    resume = os.path.exists(os.path.join(folder, "config.json"))
    console.print(f"variant {name}: {'resuming' if resume else 'starting'}, {cfg.num_seeds} "
                  f"seeds, {cfg.iterations} iterations, judge {judge_label(cfg)}", markup=False)
    return loop.run(cfg, folder, resume=resume, progress=progress, devices=devices, label=name)


def theta_rows(name: str, results: SailorResults) -> list[dict]:
    """Long-format rows (variant, seed, iteration, one column per feature) of theta_history.

    `iteration` t is the theta that segment t trained on (0: the start, or the theta after a
    warm-up of K updates, whose rows are -K..-1 from the start on; the last row, the final theta,
    is the number of iterations)."""
    rows, warmup = [], len(results.warmup)
    for t, per_seed in enumerate(results.theta_history):
        for s, theta in enumerate(per_seed):
            rows.append({"variant": name, "seed": s, "iteration": t - warmup,
                         **dict(zip(results.feature_names, theta, strict=True))})
    return rows


def write_theta_csv(path: str, results: dict[str, SailorResults]) -> None:
    """`theta_trajectories.csv`: the `theta_rows` of every variant, in `results` order."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["variant", "seed", "iteration", *FEATURE_NAMES])
        writer.writeheader()
        for name, r in results.items():
            writer.writerows(theta_rows(name, r))


def load_runs(results_dir: str) -> dict[str, SailorResults]:
    """`{variant: SailorResults}` of the finished variants of an experiment folder
    (`variants/<name>/`, in `compare.json` order) or of one SAILOR run folder (one entry
    named after the folder). Host-only.

    Variants that started but have not finished are named in a warning (they are left out).

    Raises:
      MissingFileError: no finished run; for a started one the line says which command
        finishes it (`sailor.py ... --resume`, or the experiment's command again).
      UserError: a results.json that is not a SAILOR run's.
    """
    single = stored_path(os.path.join(results_dir, "results.json"))
    if os.path.exists(single):
        return {os.path.basename(os.path.normpath(results_dir)): SailorResults.load(single)}
    variants_dir = os.path.join(results_dir, "variants")
    names = sorted(os.listdir(variants_dir)) if os.path.isdir(variants_dir) else []
    meta = stored_path(os.path.join(results_dir, "compare.json"))
    if os.path.exists(meta):
        with open_text(meta) as f:
            order = list(json.load(f)["theta_history"])
        names = [n for n in order if n in names] + [n for n in names if n not in order]
    runs = {name: SailorResults.load(os.path.join(variants_dir, name, "results.json"))
            for name in names if run_dir.finished(os.path.join(variants_dir, name))}
    started = [n for n in names if n not in runs
               and os.path.exists(stored_path(os.path.join(variants_dir, n, "config.json")))]
    again = "run the command that started them again: it resumes them"
    if runs and started:
        _log.warning("%s: variants %s have not finished and are left out (%s)", results_dir,
                     ", ".join(started), again)
    if runs:
        return runs
    if started:
        raise MissingFileError(f"no variant in {variants_dir} has finished (started: "
                               f"{', '.join(started)})", f"{again}, then plot")
    if os.path.exists(stored_path(os.path.join(results_dir, "config.json"))):
        raise run_dir.unfinished_error(results_dir, "plot")
    raise MissingFileError(f"no results.json in {results_dir} or {variants_dir}/*/",
                           "pass the folder of a finished run or comparison")
