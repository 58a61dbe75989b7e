"""Repair experiment (issue 24): does SAILOR repair a wrong starting reward?

    python experiments/repair.py --preset smoke --out runs/repair_smoke   # ~2 min on CPU
    python experiments/repair.py --preset cpu --out runs/repair           # ~80 min on a 2-core CPU
    python experiments/repair.py --preset cpu --starts ones "mine:score_gain=0.2,game_over=1"

For every start in `--starts` (a name in `sailor_jax.config.starts.STARTS`, or one written out
as `NAME:feature=w,feature=w`), at equal env steps and seeds, the arms in `--methods`:
  fixed        the start kept fixed (no judge)
  sailor       SAILOR from the start, judged by the expert, the default update (BO)
  sailor_kept  the same, each update also fitting the pairs of the last `--keep-iterations`
  sailor_trust    the same, BO confined to +-`--trust-region` around the current theta
  sailor_bt_mcmc  the same with Zeng et al.'s Bradley-Terry MCMC update
  sailor_random_judge  the default update fitted to a random judge's rankings (no
                  information): the control that shows what the update does on its own
  sailor_value    issue 34's conservative SAILOR: the expert's value verdict (score gained +
                  change of the expert's value of the position) on windows of `--window`
                  moves, `--trajectories` per seed of which `--reference-games` are played
                  by an epsilon-greedy expert, R_theta compared as the judge's verdict
                  is made (sums), Zeng et al.'s MH update (or BO: `--value-update`) in a
                  +-`--value-step` box (beta `--value-beta`), accepted only if it orders
                  the held-out half of the windows better and does not lower the per-move
                  reward (`--survival-guard`)
  sailor_value_regret   the same with the expert's per-move regret verdict (compared as
                  per-move means)
  sailor_value_outcome  the same with the outcome judge (score gained in the window)
  sailor_value_random_judge  the same update with a random judge (its control)
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
from typing import Literal

# JAX must not take the GPU memory the LLM needs: set before JAX initialises.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from sailor_jax import report  # noqa: E402
from sailor_jax.cli import (  # noqa: E402
    make_console,
    parse_with_presets,
    progress_bar,
    resumed_by_rerunning,
)
from sailor_jax.config import AlignmentConfig, EvalConfig, PPOConfig, RankerConfig, SailorConfig  # noqa: E402
from sailor_jax.config.starts import STARTS, Start, parse_start  # noqa: E402
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402
from sailor_jax.logging import to_jsonable  # noqa: E402
from sailor_jax.run.repair_table import REFERENCE, markdown, summarize  # noqa: E402
from sailor_jax.run.run_dir import finished  # noqa: E402
from sailor_jax.run.variants import check_variant, run_variant, write_theta_csv  # noqa: E402

METHODS: tuple[str, ...] = ("fixed", "sailor", "sailor_kept", "sailor_trust", "sailor_bt_mcmc",
                            "sailor_random_judge", "sailor_value", "sailor_value_regret",
                            "sailor_value_outcome", "sailor_value_random_judge")
VALUE_JUDGES = {"sailor_value": ("expert", "value"), "sailor_value_regret": ("expert", "regret"),
                "sailor_value_outcome": ("outcome", "regret"),
                "sailor_value_random_judge": ("random", "regret")}
"""Judge kind and expert verdict of the issue-34 arms (all share the conservative update)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Repair experiment: starts x arms x seeds."""

    base: SailorConfig
    """Shared settings of every arm (budget, seeds, judge, update); theta0 is set per start."""
    starts: tuple[str, ...] = ("pays_for_dying", "chases_max_tile", "ones")
    """Starting rewards: names in STARTS or NAME:feature=w,feature=w,...; theta0 as a start
    compares its SAILOR arms with the reference (theta0 kept fixed), run once."""
    methods: tuple[str, ...] = ("fixed", "sailor", "sailor_kept")
    """Arms run from every start (see the module docstring)."""
    keep_iterations: int = 4
    """K of the sailor_kept arm: each update also fits the last K iterations' pairs."""
    trust_region: float = 0.25
    """Half-width of the BO box around the current theta in the sailor_trust arm."""
    window: int = 100
    """Moves per judged window in the sailor_value* arms."""
    trajectories: int = 16
    """Windows (one per game) judged per seed and iteration in the sailor_value* arms."""
    value_update: Literal["bt_mcmc", "bo"] = "bt_mcmc"
    """The sailor_value* arms' update: "bt_mcmc" (the MH posterior mean) or "bo" (BO's best
    point), either in a box of +-`--value-step` around the current theta."""
    value_step: float = 0.3
    """Half-width of that box (the MH prior box, or BO's trust region)."""
    value_beta: float = 5.0
    """Bradley-Terry rationality of the MH likelihood in the sailor_value* arms (Zeng et al.:
    0.9, this experiment's default before 2026-11-25's table; larger concentrates the posterior
    on the pairs' fit: longer steps)."""
    heldout: float = 0.5
    """Fraction of each group held out of the fit in the sailor_value* arms."""
    heldout_z: float = 1.0
    """The held-out sign test's z in the sailor_value* arms: a step is accepted when
    gained - lost >= max(1, z sqrt(gained + lost)) on the held-out pairs."""
    survival_guard: bool = True
    """In the sailor_value* arms, reject an update that lowers the per-move reward of the
    iteration's trajectories (`AlignmentConfig.survival_guard`; off before 2026-11-25's
    table: `--no-survival-guard`)."""
    reference_games: int = 8
    """Of the `trajectories` per group in the sailor_value* arms, this many are played by the
    epsilon-greedy expert (`--reference-epsilon`): groups that compare play, not luck."""
    reference_epsilon: float = 0.5
    """Random-move probability of that reference expert (depth 1)."""
    out: str = "runs/repair"
    """Output folder; running again with the same folder resumes."""
    finished_only: bool = False
    """Run nothing: write the tables from the arms already finished in `--out` (the
    reference must be), leaving out the others."""
    only: tuple[str, ...] = ()
    """Run only these arms (`START.METHOD`, e.g. `pays_for_dying.sailor_value`) and write no
    table: several processes can then run the arms of one `--out` side by side on one GPU;
    `--finished-only` writes the tables afterwards."""


_BASE_CPU = SailorConfig(
    iterations=16, num_seeds=8, trajectories=8, max_len=2000, baseline=False,
    ppo=PPOConfig(num_envs=256, num_steps=32, updates_per_segment=8),
    ranker=RankerConfig(kind="expert"), alignment=AlignmentConfig(),
    eval=EvalConfig(episodes=64, max_len=50_000), tensorboard=False)

PRESETS: dict[str, Args] = {
    "smoke": Args(base=dataclasses.replace(
        _BASE_CPU, iterations=3, num_seeds=2, trajectories=4, max_len=300,
        ppo=PPOConfig(num_envs=64, num_steps=32, updates_per_segment=2),
        alignment=AlignmentConfig(bo_calls=12, bo_initial_points=4),
        eval=EvalConfig(episodes=8, max_len=5_000)), starts=("pays_for_dying",)),
    "cpu": Args(base=_BASE_CPU),
}
PRESET_HELP = {"smoke": "about 3 minutes on a 2-core CPU",
               "cpu": "8 seeds x ~1M env steps, 16 updates, 3 starts x 3 arms: ~8 min an arm on 2 "
                      "cores (AMD EPYC without AVX-512, today's PPO)"}


def value_arm(cfg: SailorConfig, method: str, args: Args | None) -> SailorConfig:
    """The sailor_value* arms' settings over `cfg` (`VALUE_JUDGES`; module docstring)."""
    args = args or Args(base=cfg)
    kind, verdict = VALUE_JUDGES[method]
    return dataclasses.replace(
        cfg, window=min(args.window, cfg.max_len), trajectories=args.trajectories,
        reference_games=args.reference_games, reference_epsilon=args.reference_epsilon,
        ranker=dataclasses.replace(cfg.ranker, kind=kind, expert_verdict=verdict),
        preferences=dataclasses.replace(cfg.preferences, compare="auto"),
        alignment=dataclasses.replace(
            cfg.alignment, method=args.value_update, heldout=args.heldout, heldout_z=args.heldout_z,
            beta=args.value_beta, survival_guard=args.survival_guard,
            **({"mcmc_trust_region": args.value_step} if args.value_update == "bt_mcmc"
               else {"trust_region": args.value_step})))


def arm_config(start: Start, method: str, base: SailorConfig, keep_iterations: int,
               trust_region: float = 0.25, args: Args | None = None) -> SailorConfig:
    """The `SailorConfig` of one arm: `base` from theta0 = `start.theta`, reward learning per
    `method` (see `METHODS`).

    Raises:
      UserError: unknown method.
    """
    if method not in METHODS:
        raise UserError(f"--methods: unknown arm {method!r}", f"known: {', '.join(METHODS)}")
    cfg = dataclasses.replace(base, theta0=start.theta, baseline=False, tunable=None,
                              self_align=method != "fixed")
    if method == "sailor_kept":
        cfg = dataclasses.replace(cfg, alignment=dataclasses.replace(
            cfg.alignment, keep_iterations=keep_iterations))
    elif method == "sailor_trust":
        cfg = dataclasses.replace(cfg, alignment=dataclasses.replace(
            cfg.alignment, trust_region=trust_region))
    elif method == "sailor_random_judge":
        cfg = dataclasses.replace(cfg, ranker=dataclasses.replace(cfg.ranker, kind="random"))
    elif method == "sailor_bt_mcmc":
        cfg = dataclasses.replace(cfg, alignment=dataclasses.replace(cfg.alignment,
                                                                     method="bt_mcmc"))
    elif method in VALUE_JUDGES:
        cfg = value_arm(cfg, method, args)
    return cfg


def arms(args: Args) -> list[tuple[str, Start, str, SailorConfig]]:
    """`(arm name, start, method, config)` of every arm, the reference first.

    Raises:
      UserError: an unknown or repeated start or method (before any work is done).
    """
    try:
        starts = [parse_start(s) for s in args.starts]
    except ValueError as e:
        raise UserError(f"--starts: {e}") from None
    names = [s.name for s in starts]
    if "theta0" in names and starts[names.index("theta0")].theta != STARTS["theta0"].theta:
        raise UserError("--starts: the name theta0 is the reference's; name your start otherwise")
    for what, given in (("--starts", names), ("--methods", args.methods)):
        if len(set(given)) != len(given):
            raise UserError(f"{what} repeats a name: {' '.join(given)}")
    out = [(REFERENCE, STARTS["theta0"], "fixed",
            arm_config(STARTS["theta0"], "fixed", args.base, args.keep_iterations))]
    for start in starts:
        for method in args.methods:
            if start.name == "theta0" and method == "fixed":
                continue  # theta0 kept fixed is the reference, always run
            out.append((f"{start.name}.{method}", start, method,
                        arm_config(start, method, args.base, args.keep_iterations,
                                   args.trust_region, args)))
    return out


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
            "base_config": dataclasses.asdict(args.base), "keep_iterations": args.keep_iterations,
            "trust_region": args.trust_region,
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
