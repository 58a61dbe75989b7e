"""Repair experiment (issue 24): does SAILOR repair a wrong starting reward?

    python experiments/repair.py --preset smoke --out runs/repair_smoke   # ~2 min on CPU
    python experiments/repair.py --preset cpu --out runs/repair           # ~55 min on a 2-core CPU
    python experiments/repair.py --preset cpu --starts ones "mine:score_gain=0.2,game_over=1"

For every start in `--starts` (a name in `sailor_jax.config.starts.STARTS`, or one written out
as `NAME:feature=w,feature=w`), at equal env steps and seeds, the arms in `--methods`:
  fixed        the start kept fixed (no judge)
  sailor       SAILOR from the start, judged by the expert (its per-move regret verdict, as
               issue 24 measured it), the paper's update (BO)
  sailor_trust    the same, BO confined to +-`--trust-region` around the current theta
  sailor_bt_mcmc  the same with Zeng et al.'s Bradley-Terry MCMC update
  sailor_random_judge  the default update fitted to a random judge's rankings (no
                  information): the control that shows what the update does on its own
  sailor_value    issue 34's conservative SAILOR: the expert's value verdict (score gained +
                  change of the expert's value of the position) on windows of `--window`
                  moves, `--trajectories` per seed of which `--reference-games` are played
                  by an epsilon-greedy expert, R_theta compared as `--value-compare`
                  says (the presets: as the judge's verdict is made, here sums), Zeng et al.'s
                  MH update (or BO: `--value-update`) in a
                  +-`--value-step` box (beta `--value-beta`), accepted only if it orders
                  the held-out half of the windows better and does not lower the per-move
                  reward (`--survival-guard`)
  sailor_value_regret   the same with the expert's per-move regret verdict (the presets
                  compare it per move; with `--value-compare sum` this arm is the
                  recommended SAILOR, `SailorConfig()`, judged by the expert)
  sailor_value_outcome  the same with the outcome judge (score gained in the window)
  sailor_value_random_judge  the same update with a random judge (its control)
  sailor_value_regret_random_judge  the same, R_theta compared per move: the regret
                  verdict's matched control
  sailor_value_llm  the same update judged by the LLM that `--base.ranker.llm.*` names
                  (with `--value-compare sum`, the recommended SAILOR judged by that LLM)
plus once theta0 kept fixed, the reference. Seed s of every arm starts from the same network
and environments (common random numbers), so differences are paired per seed. Arms already
finished in `--out` are read back, so naming more `--methods` adds arms to an experiment.

Table per start and arm: final greedy score, mean [95% t-CI] over seeds, and its worst seed;
its paired difference to the start kept fixed [95% t-CI] and the seeds where it is higher
(and to the random-judge control when that arm ran); 1024 and 2048 rates; the recovery
fraction (arm - fixed start) / (theta0 - fixed start) with a paired bootstrap interval
(`report.recovery_fraction`; not given for a start whose fixed agent is not worse than
theta0's, where it means nothing); the mean final theta.

Output in `--out`: `variants/<start>.<arm>/` (SAILOR run folders), `repair.json` (every
number above plus per-seed scores and theta histories), `repair.md`, `theta_trajectories.csv`
and `figures/theta_<start>.png`. Running the same command again resumes: finished arms are
read back, an interrupted one continues from its last checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

# JAX must not take the GPU memory the LLM needs: set before JAX initialises.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from sailor_jax import report  # noqa: E402
from sailor_jax.cli import (  # noqa: E402
    make_console,
    parse_with_presets,
    preset_sizes,
    progress_bar,
    resumed_by_rerunning,
)
from sailor_jax.config import (  # noqa: E402
    PAPER,
    SMALL_NETWORK,
    AlignmentConfig,
    EvalConfig,
    PPOConfig,
    RankerConfig,
    SailorConfig,
)
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402
from sailor_jax.logging import to_jsonable  # noqa: E402
from sailor_jax.run.repair_arms import ValueArmSettings, arms  # noqa: E402
from sailor_jax.run.repair_table import REFERENCE, markdown, summarize  # noqa: E402
from sailor_jax.run.run_dir import finished  # noqa: E402
from sailor_jax.run.variants import check_variant, run_variant, write_theta_csv  # noqa: E402


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args(ValueArmSettings):
    """Repair experiment: starts x arms x seeds."""

    base: SailorConfig
    """Shared settings of every arm (budget, seeds, judge, update); theta0 is set per start."""
    starts: tuple[str, ...] = ("pays_for_dying", "chases_max_tile", "ones")
    """Starting rewards: names in STARTS or NAME:feature=w,feature=w,...; theta0 as a start
    compares its SAILOR arms with the reference (theta0 kept fixed), run once."""
    methods: tuple[str, ...] = ("fixed", "sailor")
    """Arms run from every start (see the module docstring)."""
    trust_region: float = 0.25
    """Half-width of the BO box around the current theta in the sailor_trust arm."""
    out: str = "runs/repair"
    """Output folder; running again with the same folder resumes."""
    finished_only: bool = False
    """Run nothing: write the tables from the arms already finished in `--out` (the
    reference must be), leaving out the others."""
    only: tuple[str, ...] = ()
    """Run only these arms (`START.METHOD`, e.g. `pays_for_dying.sailor_value`) and write no
    table: several processes can then run the arms of one `--out` side by side on one GPU;
    `--finished-only` writes the tables afterwards."""


_BASE_CPU = dataclasses.replace(
    PAPER, iterations=16, num_seeds=8, trajectories=8, max_len=2000, baseline=False,
    ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=8),
    ranker=RankerConfig(kind="expert", expert_verdict="regret"),  # issue 24's judge
    alignment=AlignmentConfig(),
    eval=EvalConfig(episodes=64, max_len=50_000), tensorboard=False)

PRESETS: dict[str, Args] = {
    "smoke": Args(base=dataclasses.replace(
        _BASE_CPU, iterations=3, num_seeds=2, trajectories=4, max_len=300,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=64, num_steps=32, updates_per_segment=2),
        alignment=AlignmentConfig(bo_calls=12, bo_initial_points=4),
        eval=EvalConfig(episodes=8, max_len=5_000)), starts=("pays_for_dying",),
        value_compare="auto", warmup_updates=0, survival_floor=None),
    "cpu": Args(base=_BASE_CPU, value_compare="auto", warmup_updates=0, survival_floor=None),
}
"""The presets compare `R_theta` as each judge's verdict is made (`--value-compare auto`), with
no warm-up and no floor under the survival guard, as the tables measured them;
`--value-compare sum --warmup-updates 8 --survival-floor 0.5` are the recommended SAILOR's
comparison, warm-up and floor."""
PRESET_TIME = {"smoke": "about 3 minutes on a 2-core CPU",
               "cpu": "3 starts x 2 arms, ~8 min an arm on 2 cores (AMD EPYC without AVX-512)"}
PRESET_HELP = {name: f"{PRESET_TIME[name]}: {preset_sizes(args.base)} (the (64, 64) trunk the "
                     f"repair table measured)" for name, args in PRESETS.items()}


def plot_thetas(out: str, arm_list, results: dict) -> list[str]:
    """`figures/theta_<start>.png`: each weight over iterations for every arm of one start."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "repair_plot", os.path.join(os.path.dirname(os.path.abspath(__file__)), "plot.py"))
    plot = sys.modules.setdefault("repair_plot", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(plot)
    os.makedirs(os.path.join(out, "figures"), exist_ok=True)
    paths = []
    for start in dict.fromkeys(s.name for _, s, _, _ in arm_list[1:]):
        runs = {n: results[n] for n, s, _, _ in arm_list if s.name == start}
        fig = plot.plot_theta_trajectories(runs)
        fig.suptitle(f"Repair from {start}: reward weights over SAILOR iterations (mean, 95% CI "
                     "over seeds; thin lines: single seeds; dashed: kept fixed)")
        paths.append(os.path.join(out, "figures", f"theta_{start}.png"))
        fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
        plot.plt.close(fig)
    return paths


def write_outputs(args: Args, arm_list, results: dict) -> tuple[list[dict], str]:
    rows = summarize(arm_list, results)
    table = markdown(rows)
    with open(os.path.join(args.out, "repair.json"), "w", encoding="utf-8") as f:
        json.dump(to_jsonable({
            "starts": {s.name: {"theta": s.theta, "why": s.why}
                       for _, s, _, _ in arm_list},
            "base_config": dataclasses.asdict(args.base), "trust_region": args.trust_region,
            "env_steps_per_seed": results[REFERENCE].env_steps_per_seed, "rows": rows,
            "theta_history": {n: r.theta_history for n, r in results.items()},
            "machine": report.machine()}), f, indent=1)
    with open(os.path.join(args.out, "repair.md"), "w", encoding="utf-8") as f:
        f.write(table)
    write_theta_csv(os.path.join(args.out, "theta_trajectories.csv"), results)
    plot_thetas(args.out, arm_list, results)
    return rows, table


def parse(argv: list[str]) -> tuple[str, Args]:
    """`--preset NAME` (default smoke), then any field over that preset's defaults (tyro)."""
    return parse_with_presets({n: (PRESET_HELP[n], a) for n, a in PRESETS.items()}, argv,
                              "Repair experiment: SAILOR from wrong starting rewards")


def main(argv: list[str] | None = None) -> list[dict]:
    _, args = parse(sys.argv[1:] if argv is None else argv)
    arm_list = arms(args)
    if args.only:
        unknown = sorted(set(args.only) - {a[0] for a in arm_list})
        if unknown:
            raise UserError(f"--only: {' '.join(unknown)} is not an arm of these --starts and "
                            "--methods", f"arms: {' '.join(a[0] for a in arm_list)}")
        arm_list = [a for a in arm_list if a[0] in args.only]
    elif args.finished_only:
        arm_list = [a for a in arm_list if finished(os.path.join(args.out, "variants", a[0]))]
        if not arm_list or arm_list[0][0] != REFERENCE:
            raise UserError(f"--finished-only: {REFERENCE} has not finished in {args.out}",
                            "run it first (without --finished-only)")
    for name, _, _, cfg in arm_list:  # every folder and judge, before anything is written
        check_variant(name, cfg, os.path.join(args.out, "variants", name))
    console = make_console()
    results = {}
    with resumed_by_rerunning(args.out), progress_bar(console, "iterations") as progress:
        for name, _, _, cfg in arm_list:
            results[name] = run_variant(name, cfg, os.path.join(args.out, "variants", name),
                                        console, progress)
    if args.only:
        print(f"finished: {' '.join(results)}; tables: the same command with --finished-only "
              "instead of --only")
        return []
    rows, table = write_outputs(args, arm_list, results)
    print(f"\nRepair (final greedy-policy evaluation, {args.base.eval.episodes} games per seed, "
          f"{args.base.num_seeds} seeds, {results[REFERENCE].env_steps_per_seed:,} env steps "
          f"per seed)\n\n{table}\ntables: {os.path.join(args.out, 'repair.md')}")
    return rows


if __name__ == "__main__":
    report_user_errors(main)
