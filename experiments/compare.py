"""The comparison experiment: named configurations of SAILOR from named starting rewards.

    python experiments/compare.py --preset smoke --out runs/compare_smoke   # ~3 min on CPU
    python experiments/compare.py --preset cpu --out runs/compare           # ~8 min an arm
    python experiments/compare.py --preset cpu --starts ones "mine:score_gain=0.2,game_over=1"
    python experiments/compare.py --preset cpu --starts theta0 --arms fixed paper \\
        paper_constrained paper_weighted_confidence --judge llm

For every start in `--starts` (a name in `sailor_lab.starts.STARTS`, or one written out as
`NAME:feature=w,feature=w`) and every arm in `--arms` (a name in
`sailor_jax.config.arms.ARMS`: `fixed`, the start kept fixed; `sailor`, the recommended SAILOR;
`sailor_random_judge`, its control; `paper`, the paper's update; and their variants), one run
at the preset's sizes, budget and seeds, plus once theta0 kept fixed, the reference. `--judge`
judges every arm that does not name its own. Seed s of every arm starts from the same network
and environments (common random numbers), so differences are paired per seed. Arms already
finished in `--out` are read back, so naming more `--arms` adds arms to a comparison.

Table per start and arm: final greedy score, mean [95% t-CI] over seeds, and its worst seed;
its paired difference to the start kept fixed [95% t-CI] and the seeds where it is higher (and
to the arm's random-judge control when that ran); 1024 and 2048 rates; the recovery fraction
(arm - fixed start) / (theta0 - fixed start) with a paired bootstrap interval (not given for a
start whose fixed agent is not worse than theta0's); the mean final theta.

With 2 or more seeds, the field's statistics follow the table (`sailor_lab.seed_statistics`):
rliable's IQM and mean with stratified bootstrap intervals, the probability of improvement of
each arm over its fixed start and its control, the smallest paired difference the seeds detect
at 80% power, and performance profiles (`figures/profiles_<start>.png`).

Output in `--out`: `variants/<start>.<arm>/` (SAILOR run folders), `compare.json` (every number
above plus per-seed scores and theta histories), `compare.md`, `theta_trajectories.csv` and
`figures/`. Running the same command again resumes: finished arms are read back, an
interrupted one continues from its last checkpoint. With `--blocks B`, block k of `--num-seeds`
seeds (root seed `--seed` + k) is such a folder, `OUT/seed<ROOT>/`, and `OUT/compare.json` and
`compare.md` pool every block: seed s of a block keeps its twins in every arm, and a block's
arms all run on one CPU type (a block started on another is refused).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Literal

# JAX must not take the GPU memory the LLM needs: set before JAX initialises.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from sailor_jax.cli import (  # noqa: E402
    make_console,
    parse_with_presets,
    preset_line,
    preset_sizes,
    progress_bar,
    resumed_by_rerunning,
)
from sailor_jax.config import (  # noqa: E402
    SMALL_NETWORK,
    EvalConfig,
    LLMRankerConfig,
    PPOConfig,
    RankerConfig,
    SailorConfig,
)
from sailor_jax.config.arms import ARMS, DEFAULT_ARMS, Arm, arm_config, replace_fields  # noqa: E402
from sailor_jax.config.flags import in_flags  # noqa: E402
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402
from sailor_jax.logging import to_jsonable  # noqa: E402
from sailor_jax.run import run_dir  # noqa: E402
from sailor_jax.run.run_dir import finished  # noqa: E402
from sailor_lab import report, seed_statistics  # noqa: E402
from sailor_lab.arm_specs import parse_arm  # noqa: E402
from sailor_lab.comparison import REFERENCE, arm_samples, markdown, pool, summarize  # noqa: E402
from sailor_lab.starts import STARTS, Start, parse_start  # noqa: E402
from sailor_lab.variants import check_variant, run_variant, write_theta_csv  # noqa: E402


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Comparison: starts x arms x seeds, at the preset's sizes and budget."""

    starts: tuple[str, ...] = ("pays_for_dying", "chases_max_tile", "ones")
    """Starting rewards: names in STARTS or NAME:feature=w,feature=w,...; theta0 as a start
    compares its arms with the reference (theta0 kept fixed), run once."""
    arms: tuple[str, ...] = DEFAULT_ARMS
    """Configurations run from every start: names in `sailor_jax.config.arms.ARMS`, or written
    out as `NAME:field=value,field=value` over `SailorConfig()`'s dotted fields (e.g.
    `no_heldout:alignment.heldout=0`; `base=ARM` starts from a named arm). The fields are the
    main job's options (`python experiments/sailor.py -H`): `--sailor.alignment.bo-calls` is
    `alignment.bo_calls` or `alignment.bo-calls` here."""
    against: str | None = None
    """An arm of `--arms` that every other arm of a start is compared with (paired difference,
    probability of improvement, power, the verdict line); None = the start kept fixed."""
    judge: Literal["expert", "llm", "outcome"] = "expert"
    """`ranker.kind` of every arm that does not name its judge: the expectimax expert (its
    per-move regret verdict), the LLM, or the score gained."""
    judge_model: str | None = None
    """`ranker.llm.model` of the LLM judge: a folder saved with `save_pretrained`, a `.gguf`
    file (its folder and `ranker.llm.gguf_file`), or a Hub name; None = the embedded
    SmolLM2-135M-Instruct."""
    iterations: int | None = None
    """`iterations` (theta updates after the warm-up); None = the preset's."""
    updates_per_segment: int | None = None
    """`ppo.updates_per_segment` (PPO updates per iteration); None = the preset's."""
    num_seeds: int | None = None
    """`num_seeds` (paired seeds per arm); None = the preset's."""
    seed: int = 0
    """`seed` (the root seed of every arm; of the first block with `--blocks`)."""
    blocks: int = 1
    """Blocks of `--num-seeds` paired seeds, block k under root seed `--seed` + k: with more
    than one, each block is a comparison of its own in `OUT/seed<ROOT>/` (run, resumed or
    read back block by block, all its arms on one CPU type) and `OUT/compare.json` pools
    every block's seeds into one table."""
    out: str = "runs/compare"
    """Output folder; running again with the same folder resumes."""
    finished_only: bool = False
    """Run nothing: write the tables from the arms already finished in `--out` (the reference
    must be), leaving out the others."""
    only: tuple[str, ...] = ()
    """Run only these arms (`START.ARM`, e.g. `pays_for_dying.sailor`) and write no table:
    several processes can then run the arms of one `--out` side by side on one GPU;
    `--finished-only` writes the tables afterwards."""
    resamples: int | None = None
    """Bootstrap resamples of the tables' rliable intervals (IQM, mean, P(X > Y)); None =
    `sailor_lab.seed_statistics.REPS` (10,000)."""


_CPU = SailorConfig(
    iterations=32, num_seeds=8, max_len=2000, baseline=False, tensorboard=False,
    ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=4),
    ranker=RankerConfig(kind="expert", llm=LLMRankerConfig(
        batch_size=32, max_prompt_tokens=1536)),
    eval=EvalConfig(episodes=64, max_len=50_000))
"""The repair table's sizes: 32 iterations of 4 PPO updates x 256 envs (1,048,576 env steps
per seed), 8 seeds, the (64, 64) afterstate trunk, the expert judge (with `--judge llm`, the
LLM rates each window's summary on its own, as `experiments/sailor.py`'s presets do)."""
_SMOKE = dataclasses.replace(
    _CPU, iterations=3, num_seeds=2, max_len=300, trajectories=8, reference_games=4,
    warmup_updates=1,
    ppo=PPOConfig(network=SMALL_NETWORK, num_envs=64, num_steps=32, updates_per_segment=2),
    alignment=dataclasses.replace(_CPU.alignment, bo_calls=12, bo_initial_points=4,
                                  mcmc_samples=600, mcmc_burn_in=200),
    eval=EvalConfig(episodes=8, max_len=5_000))
PRESETS: dict[str, tuple[str, SailorConfig, Args]] = {
    "smoke": ("about 3 minutes on a 2-core CPU", _SMOKE,
              Args(starts=("pays_for_dying",))),
    "cpu": ("~8 min an arm on 2 cores (AMD EPYC without AVX-512)", _CPU, Args()),
}
"""Preset name -> (its time, the run's sizes and judge over `SailorConfig()`, its defaults)."""


def base_config(preset: str, args: Args) -> SailorConfig:
    """The preset's config with the budget, seed and judge of `args` (before any arm).

    Raises:
      UserError: a value the config refuses, named by its flag.
    """
    model, gguf_file = args.judge_model, None
    if model is not None and model.endswith(".gguf"):
        model, gguf_file = os.path.split(model)
    budget = {"iterations": args.iterations, "num_seeds": args.num_seeds,
              "ppo.updates_per_segment": args.updates_per_segment}
    try:
        return replace_fields(PRESETS[preset][1], {
            "seed": args.seed, "ranker.kind": args.judge, "ranker.llm.model": model,
            "ranker.llm.gguf_file": gguf_file,
            **{field: value for field, value in budget.items() if value is not None}})
    except ValueError as e:  # the fields this CLI's own flags set, named by those flags
        raise UserError(in_flags(str(e), Args, ())[0]) from None


def arm_table(specs: tuple[str, ...]) -> tuple[list[str], dict[str, Arm]]:
    """The arms' names, and `ARMS` with the arms written out in `specs` (`parse_arm`).

    Raises:
      UserError: an unknown arm name or a bad written-out arm.
    """
    table, names = dict(ARMS), []
    for spec in specs:
        if ":" in spec:
            try:
                name, arm = parse_arm(spec, table)
            except ValueError as e:
                raise UserError(f"--arms: {e}") from None
            table[name] = arm
        elif spec not in ARMS:
            raise UserError(f"--arms: unknown arm {spec!r}", f"known: {', '.join(ARMS)}; or "
                            "write one out as NAME:field=value,field=value")
        names.append(spec.partition(":")[0].strip())
    return names, table


def arm_list(base: SailorConfig, starts: tuple[str, ...], arms: tuple[str, ...]
             ) -> list[tuple[str, Start, str, SailorConfig]]:
    """`(row name, start, arm, config)` of every run, the reference (theta0 kept fixed) first;
    `arms` are names or written-out arms (`arm_table`).

    Raises:
      UserError: an unknown or repeated start or arm, a bad written-out arm, or an arm the
        config refuses (before any work is done).
    """
    try:
        parsed = [parse_start(s) for s in starts]
    except ValueError as e:
        raise UserError(f"--starts: {e}") from None
    names = [s.name for s in parsed]
    if "theta0" in names and parsed[names.index("theta0")].theta != STARTS["theta0"].theta:
        raise UserError("--starts: the name theta0 is the reference's; name your start otherwise")
    arm_names, table = arm_table(arms)
    for what, given in (("--starts", names), ("--arms", arm_names)):
        if len(set(given)) != len(given):
            raise UserError(f"{what} repeats a name: {' '.join(given)}")

    def build(start: Start, arm: str) -> SailorConfig:
        try:
            return arm_config(arm, dataclasses.replace(base, start=start.theta), table)
        except ValueError as e:
            raise UserError(f"--arms {arm}: {e}") from None

    out = [(REFERENCE, STARTS["theta0"], "fixed", build(STARTS["theta0"], "fixed"))]
    out += [(f"{s.name}.{arm}", s, arm, build(s, arm)) for s in parsed for arm in arm_names
            if not (s.name == "theta0" and arm == "fixed")]  # the reference, run once
    return out


def plot_thetas(out: str, runs, results: dict) -> list[str]:
    """`figures/theta_<start>.png`: each weight over iterations for every arm of one start."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "compare_plot", os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot.py"))
    plot = sys.modules.setdefault("compare_plot", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(plot)
    os.makedirs(os.path.join(out, "figures"), exist_ok=True)
    paths = []
    for start in dict.fromkeys(s.name for _, s, _, _ in runs[1:]):
        fig = plot.plot_theta_trajectories({n: results[n] for n, s, _, _ in runs
                                            if s.name == start})
        fig.suptitle(f"From {start}: reward weights over SAILOR iterations (mean, 95% CI over "
                     "seeds; thin lines: single seeds; dashed: kept fixed)")
        paths.append(os.path.join(out, "figures", f"theta_{start}.png"))
        fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
        plot.plt.close(fig)
    return paths


def machine_of(out: str, will_run: bool) -> dict:
    """The machine a comparison folder's arms run on: its `OUT/machine.json`
    (`report.machine()`, written by `record_machine` before its first arm runs), or this
    machine's. Seeded results pair only within one CPU type, so an arm that would run on
    another type than the folder's is refused. Writes nothing.

    Raises:
      UserError: `will_run` and the folder's CPU type is not this machine's.
    """
    path, here = os.path.join(out, "machine.json"), report.machine()
    if not os.path.exists(path):
        return here
    with open(path, encoding="utf-8") as f:
        saved = json.load(f)
    if will_run and saved.get("cpu_type") != here["cpu_type"]:
        raise UserError(f"{out} ran on {saved.get('cpu_type')}, this machine is "
                        f"{here['cpu_type']}: seeded results pair only within one CPU type",
                        "finish it on a machine of that type, or start it in another --out")
    return saved


def record_machine(out: str, machine: dict) -> None:
    """`OUT/machine.json`, unless the folder has one (`machine_of`)."""
    path = os.path.join(out, "machine.json")
    if not os.path.exists(path):
        os.makedirs(out, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(machine, f, indent=1)


def write_outputs(out: str, base: SailorConfig, runs, samples: dict, meta: dict,
                  reps: int | None = None, arms: dict[str, Arm] = ARMS,
                  against: str | None = None) -> list[dict]:
    """`compare.json` (`meta`, each arm's changes from `arms`, the table's rows), `compare.md`
    and the performance profiles in `out` (rliable's intervals from `reps` bootstrap
    resamples, None: `seed_statistics.REPS`; `against`: the arm compared with, as
    `comparison.summarize`); returns the rows."""
    rows = summarize(runs, samples, reps, against)
    with open(os.path.join(out, "compare.json"), "w", encoding="utf-8") as f:
        json.dump(to_jsonable({
            "starts": {s.name: {"theta": s.theta, "why": s.why} for _, s, _, _ in runs},
            "arms": {a: dict(arms[a].changes) | {"base": arms[a].base} for _, _, a, _ in runs},
            "base_config": dataclasses.asdict(base), **meta, "rows": rows}), f, indent=1)
    with open(os.path.join(out, "compare.md"), "w", encoding="utf-8") as f:
        f.write(markdown(rows))
    if len(samples[REFERENCE]["score"]) >= 2:
        os.makedirs(os.path.join(out, "figures"), exist_ok=True)
        for start in dict.fromkeys(s.name for _, s, _, _ in runs):
            names = [REFERENCE] + [n for n, st, _, _ in runs[1:] if st.name == start]
            seed_statistics.plot_profiles(
                {n: samples[n]["score"] for n in names},
                os.path.join(out, "figures", f"profiles_{start}.png"),
                f"From {start}: final greedy score over seeds (rliable performance profiles)")
    return rows


def _selected(runs, out: str, only: tuple[str, ...], finished_only: bool, block: bool):
    """The runs of `runs` to do in comparison folder `out`: those `only` names, or with
    `finished_only` those finished (in a block all of them, or None: a block is pooled whole).

    Raises:
      UserError: `only` names no run, or `finished_only` outside blocks before the reference
        finished.
    """
    if only:
        unknown = sorted(set(only) - {r[0] for r in runs})
        if unknown:
            raise UserError(f"--only: {' '.join(unknown)} is not a run of these --starts and "
                            "--arms", f"runs: {' '.join(r[0] for r in runs)}")
        return [r for r in runs if r[0] in only]
    if finished_only:
        done = [r for r in runs if finished(os.path.join(out, "variants", r[0]))]
        if block:
            return runs if len(done) == len(runs) else None
        runs = done
        if not runs or runs[0][0] != REFERENCE:
            raise UserError(f"--finished-only: {REFERENCE} has not finished in {out}",
                            "run it first (without --finished-only)")
    return runs


def run_block(base: SailorConfig, folder: str, todo, machine: dict, console, progress,
              write: bool = True, reps: int | None = None, arms: dict[str, Arm] = ARMS,
              against: str | None = None) -> tuple[dict, list[dict], int]:
    """Run (or read back) the runs `todo` of one comparison folder; with `write`, its tables
    (`write_outputs`, `reps` bootstrap resamples), `theta_trajectories.csv` and theta figures.
    Returns the `arm_samples` per run name, the table's rows ([] without `write`) and the env
    steps per seed."""
    block = {name: run_variant(name, cfg, os.path.join(folder, "variants", name), console,
                               progress) for name, _, _, cfg in todo}
    samples, rows = {n: arm_samples(r) for n, r in block.items()}, []
    steps = next(iter(block.values())).env_steps_per_seed
    if write:
        rows = write_outputs(folder, base, todo, samples, {
            "env_steps_per_seed": steps,
            "theta_history": {n: r.theta_history for n, r in block.items()},
            "machine": machine}, reps, arms, against)
        write_theta_csv(os.path.join(folder, "theta_trajectories.csv"), block)
        plot_thetas(folder, todo, block)
    return samples, rows, steps


def compare(base: SailorConfig, runs, out: str, only: tuple[str, ...] = (),
            finished_only: bool = False, blocks: int = 1,
            reps: int | None = None, arms: dict[str, Arm] = ARMS,
            against: str | None = None) -> list[dict]:
    """Run (or read back) every run of `runs` (`arm_list`) in `out/variants/` (with
    `blocks` > 1: in `out/seed<ROOT>/variants/` for each block's root seed `base.seed` + k),
    then write the tables (each block's as soon as it has finished, then the pooled one; their
    rliable intervals from `reps` bootstrap resamples, None: `seed_statistics.REPS`); returns
    the (pooled) table's rows ([] with `only`: no table).

    Raises:
      UserError: `only` names no run, `finished_only` before the reference finished (in no
        block), a folder holds another configuration, or a block ran on another CPU type
        (before any work is done).
    """
    plan = []  # (root seed, folder, the runs to do there)
    for root in [base.seed + k for k in range(blocks)] if blocks > 1 else [base.seed]:
        folder = os.path.join(out, f"seed{root}") if blocks > 1 else out
        todo = _selected([(n, st, a, dataclasses.replace(c, seed=root)) for n, st, a, c in runs],
                         folder, only, finished_only, blocks > 1)
        if todo is not None:
            plan.append((root, folder, todo))
    if not plan:
        raise UserError(f"--finished-only: no block of {out} has finished all its arms",
                        "run them first (without --finished-only)")
    run_dir.check_writable(out)  # --out itself first: the line names it as typed
    machines, to_run = {}, set()
    for _, folder, todo in plan:  # every folder, judge and machine before anything runs
        for name, _, _, cfg in todo:
            check_variant(name, cfg, os.path.join(folder, "variants", name))
        if not all(finished(os.path.join(folder, "variants", n)) for n, *_ in todo):
            to_run.add(folder)
        machines[folder] = machine_of(folder, folder in to_run)
    console, done = make_console(), []
    with resumed_by_rerunning(out), progress_bar(console, "iterations") as progress:
        for root, folder, todo in plan:
            if folder in to_run:  # before its first arm runs
                record_machine(folder, machines[folder])
            done.append(run_block(dataclasses.replace(base, seed=root), folder, todo,
                                  machines[folder], console, progress, write=not only,
                                  reps=reps, arms=arms, against=against))
    if only:
        print(f"finished: {' '.join(n for n, *_ in plan[0][2])}; tables: the same command with "
              "--finished-only instead of --only")
        return []
    rows, steps = done[0][1], done[0][2]
    if blocks > 1:
        rows = write_outputs(out, base, plan[0][2], pool([d[0] for d in done]), {
            "env_steps_per_seed": steps, "blocks": [
                {"seed": root, "folder": os.path.relpath(folder, out), "seeds": base.num_seeds,
                 "machine": machines[folder]} for root, folder, _ in plan]}, reps, arms,
            against)
    seeds = len(rows[0]["per_seed"]["score"])
    print(f"\nComparison (final greedy-policy evaluation, {base.eval.episodes} games per seed, "
          f"{seeds} seeds{f' in {len(plan)} blocks' if blocks > 1 else ''}, {steps:,} env "
          f"steps per seed)\n\n{markdown(rows)}\ntables: {os.path.join(out, 'compare.md')}")
    return rows


def parse(argv: list[str]) -> tuple[str, Args]:
    """`--preset NAME` (default smoke), then any option over that preset's defaults (tyro)."""
    presets = {name: (f"{time}: {preset_line(cfg)}\n{time}: {preset_sizes(cfg)}", args)
               for name, (time, cfg, args) in PRESETS.items()}
    arms = {name: arm.what for name, arm in ARMS.items()}
    starts = {name: start.why for name, start in STARTS.items()}
    return parse_with_presets(presets, argv, "Comparison of SAILOR configurations", listings={
        "ARMS (--arms NAME ..., or NAME:field=value,...,base=ARM; fields: `sailor.py -H`):": arms,
        "STARTS (--starts NAME ..., or NAME:feature=weight,...):": starts})


def main(argv: list[str] | None = None) -> list[dict]:
    preset, args = parse(sys.argv[1:] if argv is None else argv)
    base = base_config(preset, args)
    if args.blocks < 1:
        raise UserError(f"--blocks must be at least 1, got {args.blocks}")
    if args.resamples is not None and args.resamples < 1:
        raise UserError(f"--resamples must be at least 1, got {args.resamples}")
    names, table = arm_table(args.arms)
    if args.against is not None and args.against not in names:
        raise UserError(f"--against: {args.against!r} is not an arm of --arms",
                        f"arms: {' '.join(names)}")
    runs = arm_list(base, args.starts, args.arms)
    if not any(start.split(":")[0] == "theta0" for start in args.starts) or "fixed" not in names:
        print(f"{REFERENCE} runs too: the reference the tables measure every row against "
              f"(recovery fraction, difference to theta0)")
    return compare(base, runs, args.out, args.only, args.finished_only, args.blocks,
                   args.resamples, table, args.against)


if __name__ == "__main__":
    report_user_errors(main)
