"""The main job: SAILOR reward self-alignment with an LLM judge on 2048.

    python experiments/sailor.py --preset smoke --out runs/sailor_smoke     # ~2 min on CPU
    python experiments/sailor.py --preset smoke --sailor.ranker.kind llm    # the LLM judging
    python experiments/sailor.py --preset cpu --out runs/sailor_cpu         # ~1M env steps/seed
    python experiments/sailor.py --preset gpu --out runs/sailor_gpu \\
        --sailor.ranker.llm.model Qwen/Qwen2.5-3B-Instruct                 # one GPU
    python experiments/sailor.py --help          # the presets and every option

Any field of `SailorConfig` can be overridden after the preset, which may also be named
without `--preset` (`python experiments/sailor.py cpu --sailor.iterations 3`). The `smoke`
preset starts from a reward that pays for dying and is judged by the expectimax expert; the
others, and `smoke` with `--sailor.ranker.kind llm`, by an LLM: with no
`--sailor.ranker.llm.model` the embedded SmolLM2-135M-Instruct, shown each window as a
one-sentence summary (docs/llm_judge.md: what it and an offline 1.5B model know).
Results go to `--out` (default `runs/{preset}__{judge}__{seed}__{time}`): results.json,
metrics.jsonl, llm.jsonl, tb/, checkpoints/. A killed run continues with `--resume` (same --out,
same config).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter

# JAX must not take the GPU memory the LLM needs: set before JAX initialises.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from sailor_jax.cli import join_processes  # noqa: E402
from sailor_jax.errors import report_user_errors  # noqa: E402

report_user_errors(join_processes)  # --distributed: before pgx's import starts JAX's backend

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from sailor_jax.cli import (  # noqa: E402
    Scale,
    ScaleArgs,
    default_run_name,
    parse_with_presets,
    preset_line,
    preset_sizes,
    progress_bar,
    start,
)
from sailor_jax.config import (  # noqa: E402
    SMALL_NETWORK,
    EvalConfig,
    LLMRankerConfig,
    PPOConfig,
    RankerConfig,
    SailorConfig,
)
from sailor_jax.config.flags import usage_error  # noqa: E402
from sailor_jax.judges.factory import judge_name, ranker_description  # noqa: E402
from sailor_jax.run import loop  # noqa: E402
from sailor_jax.run.out_probe import check_writable  # noqa: E402
from sailor_jax.run.results import SailorResults  # noqa: E402
from sailor_lab import report  # noqa: E402
from sailor_lab.comparison import verdict  # noqa: E402
from sailor_lab.starts import STARTS, start_name  # noqa: E402

# Every preset runs the recommended SAILOR (`SailorConfig()`'s defaults: windows judged in
# groups with reference games, an MH step accepted on held-out pairs, the survival guard), with
# the LLM judging each window on its own (pointwise).
# Every preset trains the (64, 64) afterstate trunk (`SMALL_NETWORK`) that the repair table
# measured; `PRESET_WHY` says why per preset (`--help` prints it).
PRESETS: dict[str, SailorConfig] = {
    # A first run: from a reward that pays for dying, judged by the expert (with
    # `--sailor.ranker.kind llm`, the embedded SmolLM2 at these sizes).
    "smoke": SailorConfig(
        iterations=2, num_seeds=1, max_len=300, trajectories=8, reference_games=4,
        start=STARTS["pays_for_dying"].theta,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=128, num_steps=32, updates_per_segment=4),
        ranker=RankerConfig(kind="expert", llm=LLMRankerConfig(
            batch_size=32, max_prompt_tokens=1024)),
        eval=EvalConfig(episodes=16, max_len=10_000)),
    # 32 updates of 4 PPO updates x 256 envs: 1,048,576 env steps per seed, the budget of the
    # repair table (docs/repair.md).
    "cpu": SailorConfig(
        iterations=32, num_seeds=2, max_len=2000,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=4),
        ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(
            batch_size=32, max_prompt_tokens=1536)),
        eval=EvalConfig(episodes=64, max_len=50_000)),
    # One GPU: 8 SAILOR + 8 baseline rows, 32 updates of 20 PPO updates x 256 envs (5,242,880
    # env steps per seed, the repair table's ~5M budget), the 1.5B judge ~3 GiB of bf16 weights
    # plus its batches; JAX allocates on demand (XLA_PYTHON_CLIENT_PREALLOCATE=false above).
    "gpu": SailorConfig(
        iterations=32, num_seeds=8, max_len=2000,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=20),
        ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(
            model="Qwen/Qwen2.5-1.5B-Instruct", batch_size=16)),
        eval=EvalConfig(episodes=512, max_len=50_000)),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """SAILOR main job."""

    sailor: SailorConfig
    """The run (preset values, overridable field by field)."""
    out: str | None = None
    """Output folder; default `runs/{preset}__{judge}__{seed}__{unix time}`."""
    resume: bool = False
    """Continue the run in --out from its latest checkpoint."""
    scale: Scale = ScaleArgs()
    """Devices and processes."""


PRESET_TIME = {"smoke": "~2 min, 2-core CPU", "cpu": "a CPU", "gpu": "one GPU"}
"""Each preset's time or machine, short, for its one line in `--help`."""

PRESET_WHY = {
    "smoke": ("about 2 minutes on a loaded 2-core CPU",
              "a first run: from `pays_for_dying` (a reward that pays for dying) the expert "
              "judge's updates move theta, and the agent trained on it outscores the start's; "
              "with --sailor.ranker.kind llm the embedded SmolLM2 judges (README)"),
    "cpu": ("for a CPU (its runs on record: docs/running.md)",
            "the (64, 64) trunk because the (256, 256) default trains at 0.2-0.3 of its env "
            "steps/s on 2 CPU cores; ~1M env steps per seed, the repair table's budget; the "
            "SmolLM2 judge"),
    "gpu": ("for one GPU (its runs on record: docs/running.md)",
            "the repair table's ~5M env steps per seed and 8 + 8 seeds; the (64, 64) trunk and "
            "256 envs are CPU-sized; a Qwen2.5-1.5B judge"),
}
"""Where each preset's sizes come from: its time, then why it trains what it trains."""


PRESET_HELP = {name: f"{PRESET_WHY[name][0]}: {preset_sizes(cfg)}; {PRESET_WHY[name][1]}"
               for name, cfg in PRESETS.items()}
"""Each preset's sizes and why, in `--help-verbose` (`-H`)."""
"""The one line `--help` prints per preset."""


def parse(argv: list[str]) -> tuple[str, Args]:
    """`--preset NAME` (default smoke), then any field over that preset's defaults (tyro).

    Raises:
      SystemExit: status 2 with one `error:` line, for what tyro rejects and for an LLM
        setting (`--sailor.ranker.llm.*`) given while the judge is not the LLM (the `smoke`
        preset's is the expert): add `--sailor.ranker.kind llm`.
    """
    presets = {name: (f"{PRESET_TIME[name]}: {preset_line(cfg)}\n{PRESET_HELP[name]}",
                      Args(sailor=cfg)) for name, cfg in PRESETS.items()}
    preset, args = parse_with_presets(presets, argv, "SAILOR main job")
    llm_flags = [a.partition("=")[0] for a in argv if a.startswith("--sailor.ranker.llm.")]
    if llm_flags and args.sailor.ranker.kind != "llm":
        kind = args.sailor.ranker.kind
        given = any(a.partition("=")[0] == "--sailor.ranker.kind" for a in argv)
        usage_error(f"{llm_flags[0]} is an LLM judge's setting, but the judge is {kind} "
                    f"({'--sailor.ranker.kind ' + kind if given else f'the {preset} preset'})",
                    "add --sailor.ranker.kind llm")
    return preset, args


def shown_iterations(columns: int, fit: int) -> list[int]:
    """Which of `columns` theta-history columns (it0..itT) a table `fit` columns wide shows:
    all if they fit, else the first, the last and evenly spaced ones between (`fit` >= 2)."""
    if columns <= fit:
        return list(range(columns))
    return sorted({round(k * (columns - 1) / (fit - 1)) for k in range(fit)})


OUTCOMES_HELP = ("moved: the judge's update was accepted; held out: refused, it ordered the "
                 "held-out windows no better than theta did; no evidence: refused, the judge-"
                 "evidence gate was closed; guard: refused by the survival "
                 "guard; no gain: it did not lower the fitted pairs' error; no judge: no "
                 "ranking")
"""What the `update` row of the theta table says."""
def columns_legend(warmup: int) -> str:
    """The theta table's legend, for a run with `warmup` warm-up updates."""
    start = (f"it-{warmup} is the start, the warm-up's {warmup} updates make it{1 - warmup}..it0"
             if warmup else "it0 is the start")
    return (f"columns: itN is the theta segment N trained on ({start}); |D_neg| / |D_pos|: the "
            f"discordant / concordant pairs of the update that made the column; agreement(tau) "
            f"in the progress lines: Kendall's tau of R_theta with the judge after the "
            f"iteration's update")


def update_outcome(updates: list) -> str:
    """What one update did to theta (one seed: its `SeedUpdate.outcome`, `moved`, `held out`,
    `no evidence`, `guard`, `no gain` or `no judge`; `-` where none was recorded); over several
    seeds, how many moved (`n/S moved`)."""
    if len(updates) > 1:
        return f"{sum(u.outcome == 'moved' for u in updates)}/{len(updates)} moved"
    return updates[0].outcome or "-"


def paired_verdict(results: SailorResults) -> str | None:
    """SAILOR's final score against its start kept fixed, paired by seed: the comparison's
    verdict line (`sailor_lab.comparison.verdict`, a 95% t-interval); None without the kept-fixed
    agents."""
    base = results.baseline_evaluation
    if not base or "per_seed" not in base or "per_seed" not in results.evaluation:
        return None
    sailor = [e["score_mean"] for e in results.evaluation["per_seed"]]
    fixed = [e["score_mean"] for e in base["per_seed"]]
    said = verdict(report.paired_difference(sailor, fixed))
    return (f"SAILOR against {start_name(results.config.get('start'))} kept fixed, paired by "
            f"seed: {said}")


def summary(results: SailorResults, console: Console) -> None:
    """Print the theta history, preference counts, evaluation and wall-clock tables.

    The theta history shows as many columns as fit the console (8 characters a column,
    border included, after the feature column's 22; at least the first and the last). Column
    `itN` is the theta that segment N trained on, as `iteration` in `theta_trajectories.csv`:
    with a warm-up of K updates, it-K is the start and it-K+1..it0 follow the warm-up's updates;
    without one, it0 is the start. The pair counts under a shown column are those of the update
    that made it."""
    names, history = results.feature_names, results.theta_history
    records = results.warmup + results.iterations  # the update behind each column but the first
    labels = [f"it{t - len(results.warmup)}" for t in range(len(history))]
    shown = shown_iterations(len(history), max(2, (console.width - 22) // 8))
    skipped = "" if len(shown) == len(history) else f", {len(shown)} of {len(history)} columns"
    theta = Table(title=f"theta history (seed mean), preference pairs{skipped}")
    theta.add_column("feature")
    for t in shown:
        theta.add_column(labels[t], justify="right")
    for k, n in enumerate(names):
        theta.add_row(n, *[f"{np.mean(np.asarray(history[t])[:, k]):+.2f}" for t in shown])
    for key, label in (("num_discordant", "|D_neg|"), ("num_concordant", "|D_pos|")):
        theta.add_row(label, *[str(sum(getattr(u, key) for u in records[t - 1].seeds)) if t
                               else "" for t in shown])
    theta.add_row("update", *[update_outcome(records[t - 1].seeds) if t else "" for t in shown])
    console.print(theta)
    console.print(columns_legend(len(results.warmup)), highlight=False)
    outcomes = Counter(update_outcome([u]) for r in records for u in r.seeds)
    console.print(f"theta updates: {', '.join(f'{n} {k}' for k, n in outcomes.items())} "
                  f"({OUTCOMES_HELP})")
    ev = Table(title=f"final agents, {results.env_steps_per_seed:,} env steps per seed "
                     f"(greedy policy, native game score)")
    for col in ("agent", "episodes", "score mean", "score std", "max tile mean", "512", "1024",
                "2048 (win)"):
        ev.add_column(col, justify="right")
    rows = [("SAILOR", results.evaluation)]
    if results.baseline_evaluation:
        rows.append((f"{start_name(results.config.get('start'))} kept fixed",
                     results.baseline_evaluation))
    for name, e in rows:
        r = e["max_tile_rates"]
        ev.add_row(name, str(e["episodes"]), f"{e['score_mean']:.0f}", f"{e['score_std']:.0f}",
                   f"{e['max_tile_mean']:.0f}", f"{r['512']:.2f}", f"{r['1024']:.2f}",
                   f"{e['win_rate']:.2f}")
    console.print(ev)
    clock = Table(title="wall-clock (s)")
    for k in results.timings:
        clock.add_column(k, justify="right")
    clock.add_row(*[f"{v:.1f}" for v in results.timings.values()])
    console.print(clock)
    line = paired_verdict(results)
    if line:
        console.print(line, highlight=False)


def main(argv: list[str] | None = None) -> SailorResults:
    preset, args = parse(sys.argv[1:] if argv is None else argv)
    cfg = args.sailor
    console = start(args.scale)
    out = args.out or default_run_name(preset, judge_name(cfg.ranker), cfg.seed)
    check_writable(out)  # before anything is printed: a bad --out is one error line
    console.print(f"SAILOR preset={preset} start={start_name(cfg.start)} "
                  f"ranker={ranker_description(cfg.ranker)} out={out}")
    with progress_bar(console, "iterations") as progress:
        results = loop.run(cfg, out, resume=args.resume, progress=progress,
                           devices=args.scale.devices)
    summary(results, console)
    console.print(f"results: {os.path.join(out, 'results.json')}")
    return results


if __name__ == "__main__":
    report_user_errors(main)
