"""Ablations: reward-learning variants over S vmapped seeds, one table with 95% CIs.

    python experiments/ablations.py --preset smoke --out runs/ablations_smoke   # ~2 min on CPU
    python experiments/ablations.py --preset cpu --out runs/ablations_cpu       # < 30 min on CPU
    python experiments/ablations.py --preset gpu --out runs/ablations_gpu       # one GPU
    python experiments/ablations.py --preset cpu --variants baseline sailor_bo_outcome
    python experiments/ablations.py --preset expert --out runs/ablations_expert # ~45 min on CPU

Every variant is a `SailorConfig` derived from the preset's base config: the same PPO
segments, env-step budget, seeds (vmapped in one compiled program per variant) and evaluation
protocol; only the reward learning differs. Variants share the root seed, so seed s of every
variant starts from the same initial network and environments (common random numbers: two
variants whose theta never differs produce identical results).

Variants (`VARIANTS`; each SAILOR variant also exists as `<name>_outcome`, judged by the final
game score instead of the LLM, and as `<name>_expert`, judged by the expectimax expert's
verdict on each move (`judges.expert.ExpertRanker`), to separate the method from the judge's
quality):
  baseline                       fixed theta0 (the seed plan's baseline reward), no ranking
  score_only                     fixed theta = score gain only
  sailor_bo                      the SAILOR loop, Bayesian-optimisation update
  sailor_bo_constrained          only `--constrained-tunable` weights may change
  sailor_bo_weighted_confidence  pairs weighted by the judge's confidence |2p - 1| (Option A)
  sailor_bo_weighted_discrepancy pairs weighted by judge-rank distance (Option B)
  sailor_bt_mcmc                 Zeng et al.'s Bradley-Terry MCMC update
  sailor_bo_refine               sailor_bo plus LLM-guided refinement when the score stalls

Output in `--out`: `variants/<name>/` (each a SAILOR run folder with results.json),
`ablations.csv` and `ablations.md` (mean and 95% CI over seeds of the final greedy-policy game
score, max-tile rates 512..4096, win rate; wall-clock), `theta_trajectories.csv`, and
`ablation.json`. Running the same command again resumes: finished variants are read back, a
variant killed mid-way continues from its last checkpoint. Plot with
`python experiments/plot.py OUT`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys

# JAX must not take the GPU memory the LLM needs: set before JAX initialises.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from sailor_jax.cli import join_processes  # noqa: E402
from sailor_jax.errors import UserError, report_user_errors  # noqa: E402

report_user_errors(join_processes)  # --distributed: before pgx's import starts JAX's backend


from sailor_jax import report  # noqa: E402
from sailor_jax.cli import (  # noqa: E402
    Scale,
    ScaleArgs,
    parse_with_presets,
    preset_sizes,
    progress_bar,
    resumed_by_rerunning,
    start,
)
from sailor_jax.config import (  # noqa: E402
    PAPER,
    SMALL_NETWORK,
    AlignmentConfig,
    EvalConfig,
    LLMRankerConfig,
    PPOConfig,
    RankerConfig,
    SailorConfig,
)
from sailor_jax.game.features import FEATURE_NAMES  # noqa: E402
from sailor_jax.logging import to_jsonable  # noqa: E402
from sailor_jax.run import run_dir  # noqa: E402
from sailor_jax.run.variants import check_variant, judge_label, run_variant, write_theta_csv  # noqa: E402
from sailor_jax.scale import sharding  # noqa: E402

FIXED_VARIANTS = ("baseline", "score_only")
SAILOR_VARIANTS = ("sailor_bo", "sailor_bo_constrained", "sailor_bo_weighted_confidence",
                   "sailor_bo_weighted_discrepancy", "sailor_bt_mcmc", "sailor_bo_refine")
JUDGE_SUFFIXES = {"_outcome": {"kind": "outcome"},
                  "_expert": {"kind": "expert", "expert_verdict": "regret"}}
"""Variant-name suffix -> the judge that replaces the LLM (`RankerConfig` fields; the expert's
per-move regret verdict, as issue 11 measured it)."""
VARIANTS: tuple[str, ...] = (FIXED_VARIANTS + SAILOR_VARIANTS
                             + tuple(f"{v}{suffix}" for suffix in JUDGE_SUFFIXES
                                     for v in SAILOR_VARIANTS))
CONSTRAINED_TUNABLE: tuple[str, ...] = tuple(n for n in FEATURE_NAMES if n != "score_gain")
"""Default tunable subset of `sailor_bo_constrained`: the score weight stays fixed."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Ablation run: variants x seeds."""

    base: SailorConfig
    """Shared settings of every variant (preset values, overridable field by field)."""
    variants: tuple[str, ...] = ("baseline", "sailor_bo_outcome")
    """Variants to run, in order (see the module docstring)."""
    constrained_tunable: tuple[str, ...] = CONSTRAINED_TUNABLE
    """Weights that sailor_bo_constrained may change."""
    out: str = "runs/ablations"
    """Output folder; running again with the same folder resumes."""
    scale: Scale = ScaleArgs()
    """Devices and processes."""


_BASE_SMOKE = dataclasses.replace(
    PAPER, iterations=2, num_seeds=2, trajectories=4, max_len=300, baseline=False,
    ppo=PPOConfig(network=SMALL_NETWORK, num_envs=64, num_steps=32, updates_per_segment=2),
    ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(
        batch_size=2, max_prompt_tokens=1024, snapshot_every=40)),
    alignment=AlignmentConfig(bo_calls=12, bo_initial_points=4, trust_region=0.25,
                              mcmc_samples=600, mcmc_burn_in=200),
    eval=EvalConfig(episodes=8, max_len=10_000), tensorboard=False)

PRESETS: dict[str, Args] = {
    "smoke": Args(base=_BASE_SMOKE, variants=("baseline", "sailor_bo_outcome")),
    "cpu": Args(base=dataclasses.replace(
        PAPER, iterations=6, num_seeds=3, trajectories=6, max_len=2000, baseline=False,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=512, num_steps=32, updates_per_segment=32),
        ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(
            batch_size=2, max_prompt_tokens=1536, snapshot_every=50)),
        alignment=AlignmentConfig(bo_calls=30, trust_region=0.25),
        eval=EvalConfig(episodes=64, max_len=50_000), tensorboard=False),
        variants=("baseline", "score_only", "sailor_bo_outcome", "sailor_bt_mcmc_outcome")),
    "gpu": Args(base=dataclasses.replace(
        PAPER, iterations=20, num_seeds=8, trajectories=16, max_len=2000, baseline=False,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=4096, num_steps=32, updates_per_segment=80),
        ranker=RankerConfig(kind="llm", llm=LLMRankerConfig(
            model="Qwen/Qwen2.5-1.5B-Instruct", batch_size=16, max_pairs_per_group=60)),
        alignment=AlignmentConfig(bo_calls=40, trust_region=0.25),
        eval=EvalConfig(episodes=512, max_len=50_000), eval_every=2),
        variants=VARIANTS),
    "expert": Args(base=dataclasses.replace(
        PAPER, iterations=8, num_seeds=5, trajectories=8, max_len=2000, baseline=False,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=512, num_steps=32, updates_per_segment=24),
        ranker=RankerConfig(kind="expert", expert_verdict="regret"),  # as measured
        alignment=AlignmentConfig(bo_calls=30, trust_region=0.25),
        eval=EvalConfig(episodes=64, max_len=50_000), tensorboard=False),
        variants=("baseline", "score_only", "sailor_bo_expert", "sailor_bt_mcmc_expert")),
}


def variant_config(name: str, base: SailorConfig,
                   constrained_tunable: tuple[str, ...] = CONSTRAINED_TUNABLE
                   ) -> SailorConfig:
    """The `SailorConfig` of variant `name`: `base` with only the reward learning changed.

    Raises:
      UserError: unknown variant name (the message lists the known ones).
    """
    if name not in VARIANTS:
        raise UserError(f"--variants: unknown variant {name!r}", f"known: {', '.join(VARIANTS)}")
    cfg = dataclasses.replace(base, baseline=False)  # the baseline is its own variant
    if name == "baseline":
        return dataclasses.replace(cfg, self_align=False, tunable=None)
    if name == "score_only":
        theta0 = tuple(1.0 if n == "score_gain" else 0.0 for n in FEATURE_NAMES)
        return dataclasses.replace(cfg, self_align=False, theta0=theta0, tunable=None)
    method, cfg = name, dataclasses.replace(cfg, self_align=True)
    for suffix, judge in JUDGE_SUFFIXES.items():
        if name.endswith(suffix):
            method = name.removesuffix(suffix)
            cfg = dataclasses.replace(cfg, ranker=dataclasses.replace(cfg.ranker, **judge))
    if method == "sailor_bo_constrained":
        cfg = dataclasses.replace(cfg, tunable=tuple(constrained_tunable))
    elif method.startswith("sailor_bo_weighted_"):
        weighting = method.removeprefix("sailor_bo_weighted_")
        cfg = dataclasses.replace(cfg, preferences=dataclasses.replace(
            cfg.preferences, weighting=weighting))
    elif method == "sailor_bt_mcmc":
        cfg = dataclasses.replace(cfg, alignment=dataclasses.replace(cfg.alignment,
                                                                     method="bt_mcmc"))
    elif method == "sailor_bo_refine":
        cfg = dataclasses.replace(cfg, refine=dataclasses.replace(cfg.refine,
                                                                  enabled=True))
    return cfg


PRESET_TIME = {"smoke": "about 2 minutes on a 2-core CPU",
               "cpu": "under 30 minutes on a 2-core CPU", "gpu": "one GPU, every variant",
               "expert": "the expert-judge experiment (issue 11), about 45 minutes on a 2-core CPU"}
PRESET_HELP = {name: f"{PRESET_TIME[name]}: {preset_sizes(args.base)}"
               for name, args in PRESETS.items()}


def parse(argv: list[str]) -> tuple[str, Args]:
    """`--preset NAME` (default smoke), then any field over that preset's defaults (tyro).

    Raises:
      UserError: an unknown or repeated variant name (before any work is done).
    """
    preset, args = parse_with_presets({n: (PRESET_HELP[n], a) for n, a in PRESETS.items()},
                                      argv, "SAILOR ablations")
    for name in args.variants:
        variant_config(name, args.base, args.constrained_tunable)  # fail before any work
    if len(set(args.variants)) != len(args.variants):
        raise UserError(f"--variants repeats a name: {' '.join(args.variants)}",
                        "name each variant once")
    return preset, args


def main(argv: list[str] | None = None) -> list[dict]:
    preset, args = parse(sys.argv[1:] if argv is None else argv)
    console = start(args.scale)
    run_dir.check_writable(args.out)  # --out itself first: the line names it as typed
    for name in args.variants:  # every folder and judge, before anything is written
        check_variant(name, variant_config(name, args.base, args.constrained_tunable),
                      os.path.join(args.out, "variants", name))
    if sharding.is_main_process():
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "ablation.json"), "w", encoding="utf-8") as f:
            json.dump({"preset": preset, "variants": list(args.variants),
                       "constrained_tunable": list(args.constrained_tunable),
                       "base_config": to_jsonable(dataclasses.asdict(args.base))}, f, indent=2)
    rows, runs = [], {}
    with resumed_by_rerunning(args.out), progress_bar(console, "iterations") as progress:
        for name in args.variants:
            cfg = variant_config(name, args.base, args.constrained_tunable)
            results = run_variant(name, cfg, os.path.join(args.out, "variants", name), console,
                                  progress, args.scale.devices)
            rows.append(report.summary_row(
                name, results.evaluation, judge=judge_label(cfg),
                env_steps_per_seed=results.env_steps_per_seed,
                wall_clock_s=sum(results.timings.values())))
            runs[name] = results
    if not sharding.is_main_process():
        return rows  # process 0 writes the tables
    csv_path, md_path = report.write_tables(rows, args.out, "ablations")
    write_theta_csv(os.path.join(args.out, "theta_trajectories.csv"), runs)
    print(f"\nAblations (preset {preset}; final greedy-policy evaluation, "
          f"{args.base.eval.episodes} games per seed; 95% CI over seeds)\n")
    print(report.markdown_table(rows))
    print(f"tables: {csv_path}, {md_path}\nplot with: python experiments/plot.py {args.out}")
    return rows


if __name__ == "__main__":
    report_user_errors(main)
