"""One SAILOR: `SailorConfig()` is the recommended (guarded) SAILOR, `PAPER` the paper's update,
and every preset, ablation variant and repair arm still builds the config its table measured.

`tests/data/measured_configs.json.gz` holds the `config.json` of each of them as built before
the recommended settings became `SailorConfig()`'s defaults (163 configs: the three
`experiments/sailor.py` presets, every variant of every `experiments/ablations.py` preset, every
arm of the `experiments/repair.py` presets from theta0, `ones` and the named starts), plus the
8 arms of `sailor_value_regret_random_judge` as they were built when that arm was added and
measured (2026-11-27; issue 49). The expert judge's default verdict became `value` on
2026-11-28: the presets and arms measured with the `regret` verdict name it. Later that day the
recommended comparison became "sum" (was "auto") and the default verdict `regret` again: the
repair presets name "auto", as their tables measured, and an "auto" that resolves to the same
comparison under the run's judge is no difference (`run_dir.config_differences`).

A field a saved config lacks counts as its default there (a run resumes under newer code), so
a later change of that default would pass unseen here. The behaviour fields added after these
configs were saved (`warmup_updates`, `ranker.noise`, `alignment.survival_floor`, and fields of
options since retired) are therefore written into them with the values they ran at
(2026-11-28: no warm-up, none of the others). The retired options' fields (`run_dir.RETIRED`)
stay in the stored configs at their off values and compare as no difference; the
`sailor_kept` arms, which ran a retired option (kept pairs), are left out
(`RETIRED_ARMS`). Later that day the warm-up became the default (8 updates): the repair
presets name none, as their tables measured, and the `experiments/sailor.py` presets, which run
the recommended SAILOR, take it (`smoke` 2, at its tiny budget): their saved configs say so, and
the tables measured before it (the smoke output, the `cpu` preset, the GPU check) are history.
Then the survival guard's floor became 0.5 (was None): the repair presets name None, as
measured, and the `experiments/sailor.py` presets' saved configs take the floor. The LLM
judge's `view` (what it is shown of a game) is written into every saved config as "summary",
today's default: the presets and the LLM-judged ablation variants take it (their tables,
measured with the boards view, are history), and it is unused by the other judges. The 8 arms of
`sailor_value_llm` are saved as built when that arm was added.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os

import pytest
from test_experiments import _load

from sailor_jax.cli import preset_sizes
from sailor_jax.config import (
    PAPER,
    SMALL_NETWORK,
    AlignmentConfig,
    EvalConfig,
    PPOConfig,
    PreferenceConfig,
    RankerConfig,
    SailorConfig,
)
from sailor_jax.run import repair_arms
from sailor_jax.run.run_dir import config_differences, config_json

MEASURED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "measured_configs.json.gz")
STARTS = ("theta0", "ones", "pays_for_dying", "chases_max_tile")
RETIRED_ARMS = ("sailor_kept",)
"""Repair arms of the stored configs that ran a retired option (docs/history.md, "Retired
options"): no longer built, so not compared."""


def measured_configs() -> dict[str, SailorConfig]:
    """Today's config of every preset, ablation variant and repair arm, by name."""
    sailor = _load("experiments/sailor.py")
    ablations = _load("experiments/ablations.py")
    repair = _load("experiments/repair.py")
    configs = {f"sailor.{name}": cfg for name, cfg in sailor.PRESETS.items()}
    for preset, args in ablations.PRESETS.items():
        for variant in ablations.VARIANTS:
            configs[f"ablations.{preset}.{variant}"] = ablations.variant_config(variant,
                                                                                 args.base)
    for preset, args in repair.PRESETS.items():
        every = dataclasses.replace(args, starts=STARTS, methods=repair_arms.METHODS)
        for name, _, _, cfg in repair_arms.arms(every):
            configs[f"repair.{preset}.{name}"] = cfg
    return configs


def test_every_measured_config_is_built_as_before():
    with gzip.open(MEASURED, "rt", encoding="utf-8") as f:
        before = {name: cfg for name, cfg in json.load(f).items()
                  if name.rsplit(".", 1)[-1] not in RETIRED_ARMS}
    now = measured_configs()
    assert sorted(now) == sorted(before)
    changed = {name: config_differences(before[name], json.loads(config_json(cfg)), cfg)
               for name, cfg in now.items()}
    assert {name: diff for name, diff in changed.items() if diff} == {}


def test_default_is_the_recommended_sailor_and_paper_the_papers():
    cfg = SailorConfig()
    assert (cfg.window, cfg.trajectories, cfg.reference_games) == (100, 16, 8)
    assert cfg.preferences.compare == "sum"  # "auto" until 2026-11-28 (issue 49)
    assert RankerConfig(kind="expert").expert_verdict == "regret"  # compared as sums
    assert cfg.alignment.method == "bt_mcmc" and cfg.alignment.heldout == 0.5
    assert cfg.alignment.survival_guard and cfg.alignment.mcmc_trust_region == 0.3
    assert repair_arms.guarded(PAPER) == cfg  # the guarded settings over the paper's
    assert (PAPER.window, PAPER.trajectories, PAPER.reference_games) == (0, 8, 0)
    assert PAPER.preferences == PreferenceConfig() and PAPER.alignment == AlignmentConfig()
    assert cfg.warmup_updates == 8 and PAPER.warmup_updates == 0  # 0 until 2026-11-28
    assert dataclasses.replace(PAPER, trajectories=16, window=100, reference_games=8,
                               warmup_updates=8, preferences=cfg.preferences,
                               alignment=cfg.alignment) == cfg


@pytest.mark.parametrize("name", ["smoke", "cpu", "gpu"])
def test_presets_change_only_sizes_and_judge_from_the_default(name):
    preset = _load("experiments/sailor.py").PRESETS[name]
    default = SailorConfig()
    assert preset.alignment == default.alignment and preset.preferences == default.preferences
    assert preset.window == default.window and preset.reference_epsilon == 0.5


def test_help_says_what_each_preset_trains_and_why(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    sailor = _load("experiments/sailor.py")
    with pytest.raises(SystemExit):
        sailor.parse(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, cfg in sailor.PRESETS.items():
        assert f"{name} {sailor.PRESET_WHY[name][0]}: {preset_sizes(cfg)}" in text
        assert sailor.PRESET_WHY[name][1] in text
    assert "5,242,880 env steps per seed" in preset_sizes(sailor.PRESETS["gpu"])
    assert "64x64 trunk, 256 envs x 8 + 8 baseline seeds" in preset_sizes(sailor.PRESETS["gpu"])


def _measured_arm_is_the_default(path: str, flags: list[str], **then) -> dict:
    """Read the `config.json` a measured theta0 `sailor_value_regret` arm saved (`path`,
    gzipped); check that `repair.py --preset cpu` at the table's sizes with `flags` still
    builds it, and that `SailorConfig()` with the expert judge at those sizes (and `then`, the
    defaults as they were when it ran) is it, field by field. Returns the saved config."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        saved = json.load(f)
    repair = _load("experiments/repair.py")
    _, args = repair.parse(["--preset", "cpu", "--base.iterations", "32",
                            "--base.ppo.updates-per-segment", "4", *flags, "--starts", "theta0",
                            "--methods", "sailor_value_regret"])
    (arm,) = [cfg for name, _, _, cfg in repair_arms.arms(args)
              if name == "theta0.sailor_value_regret"]
    assert config_differences(saved, json.loads(config_json(arm)), arm) == []
    default = dataclasses.replace(  # the defaults, at the table's sizes, from theta0
        SailorConfig(), ranker=RankerConfig(kind="expert"), theta0=arm.theta0,
        iterations=32, num_seeds=8, baseline=False, tensorboard=False,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=4),
        eval=EvalConfig(episodes=64, max_len=50_000), **then)
    assert config_differences(saved, json.loads(config_json(default)), default) == []
    return saved


NO_FLOOR = dataclasses.replace(SailorConfig().alignment, survival_floor=None)
"""The recommended update before the floor under the survival guard became its default."""
REGSUM_ARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks",
                          "results", "repair49_verdict_cpu", "theta0.sailor_value_regret.json.gz")


def test_the_default_judged_by_the_expert_is_the_regret_arm_measured_as_sums():
    """Issue 49's changed default, field by field: `SailorConfig()` with the expert judge (the
    regret verdict, R_theta compared as sums), at the repair table's sizes, is the config the
    `repair.py --value-compare sum` arm saved when it was measured; and that command still
    builds it. It ran before the warm-up existed, so with none: the defaults then."""
    saved = _measured_arm_is_the_default(REGSUM_ARM, ["--value-compare", "sum"],
                                         warmup_updates=0, alignment=NO_FLOOR)
    assert "warmup_updates" not in saved  # saved before the field: it ran none (ABSENT_MEANS)
    assert saved["ranker"]["expert_verdict"] == "regret"
    assert saved["preferences"]["compare"] == "sum"


WARM_ARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks",
                        "results", "repair49_warm_cpu", "theta0.sailor_value_regret.json.gz")


def test_the_default_judged_by_the_expert_is_the_warmup_arm_measured():
    """Issue 49's second changed default, field by field: `SailorConfig()` with the expert judge
    (8 warm-up updates, the regret verdict, R_theta compared as sums), at the repair table's
    sizes, is the config the `--warmup-updates 8` arm saved when it was measured (2026-11-28,
    `benchmarks/results/repair49_warm_cpu/`); and that command still builds it."""
    saved = _measured_arm_is_the_default(WARM_ARM, ["--value-compare", "sum",
                                                    "--warmup-updates", "8"],
                                         alignment=NO_FLOOR)
    assert saved["warmup_updates"] == SailorConfig().warmup_updates == 8
    assert "warmup_tau_z" not in saved  # saved before the warm-up's gate existed


FLOOR_ARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks",
                         "results", "repair49_floor_warm_cpu", "theta0.sailor_value_regret.json.gz")


def test_the_default_judged_by_the_expert_is_the_floor_arm_measured():
    """Issue 49's third changed default, field by field: `SailorConfig()` with the expert judge
    (the survival guard's floor 0.5, 8 warm-up updates, the regret verdict compared as sums),
    at the repair table's sizes, is the config the `--survival-floor 0.5` arm saved when it was
    measured (2026-11-28, `benchmarks/results/repair49_floor_warm_cpu/`); and that command
    still builds it."""
    saved = _measured_arm_is_the_default(FLOOR_ARM, ["--value-compare", "sum",
                                                     "--warmup-updates", "8",
                                                     "--survival-floor", "0.5"])
    assert saved["alignment"]["survival_floor"] == SailorConfig().alignment.survival_floor == 0.5
    assert saved["warmup_updates"] == 8 and saved["alignment"]["survival_guard"] is True
