"""One SAILOR: `SailorConfig()` is the recommended SAILOR, `PAPER` the paper's update, and every
preset and every retained arm of the arms table (`config/arms.py`) still builds the config its
table measured.

`tests/data/measured_configs.json.gz` holds the saved `config.json` of every preset, ablation
variant and repair arm as the experiments that measured them built them (each changed default
is in CHANGELOG.md; fields added later are written in with the values the
runs had). Today one comparison experiment (`experiments/compare.py`) runs named arms; the
stored configs are checked three ways:

- the `experiments/sailor.py` presets, as stored;
- the repair experiment's paper-family arms (`fixed`, the paper's update and its trust-region,
  MCMC and random-judge variants) from every stored start: `compare.py --preset cpu` at the
  budget they ran (16 iterations of 8 PPO updates) builds each one field by field, and the
  `sailor` arm at the preset's own budget is the recommended SAILOR's measured arm;
- every ablation variant, as the arm's changes applied to the stored paper-update config of
  its preset and judge: the table's changes are the variant's, field by field.

Left out, as history: the repair value arms built with the defaults of their day (per-move
comparison, no warm-up, no floor; today's defaults differ), the arms that ran a retired option
(kept pairs: `run_dir.RETIRED`), and the ablation presets themselves (their LLM judge saw the
boards view). A field a saved config lacks counts as its default there
(`run_dir.config_differences`).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os

import pytest
from support import load_script

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
from sailor_jax.config.arms import ARMS, arm_config
from sailor_jax.logging import to_jsonable
from sailor_jax.run.run_dir import _flatten as flatten
from sailor_jax.run.run_dir import config_differences, config_json
from sailor_lab.starts import STARTS as STARTS_BY_NAME

MEASURED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                        "measured_configs.json.gz")
STARTS = ("theta0", "ones", "pays_for_dying", "chases_max_tile")
REPAIR_ARMS = {"fixed": "fixed", "paper": "sailor", "paper_trust": "sailor_trust",
               "paper_bt_mcmc": "sailor_bt_mcmc", "paper_random_judge": "sailor_random_judge"}
"""Today's arm -> the repair experiment's name for it in the stored configs."""
ABLATION_ARMS = {"paper_constrained": "sailor_bo_constrained",
                 "paper_weighted_confidence": "sailor_bo_weighted_confidence",
                 "paper_weighted_discrepancy": "sailor_bo_weighted_discrepancy",
                 "paper_bt_mcmc": "sailor_bt_mcmc", "paper_refine": "sailor_bo_refine"}
"""Today's arm -> the ablation variant (`sailor_bo` was the paper's update)."""


FLOOR_ARM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks",
                         "results", "repair_named_starts", "theta0.sailor_value_regret.json.gz")
"""The recommended SAILOR's arm as its repair table saved it."""


def stored() -> dict[str, dict]:
    with gzip.open(MEASURED, "rt", encoding="utf-8") as f:
        return json.load(f)


def _differences(saved: dict, cfg: SailorConfig) -> list[str]:
    return config_differences(saved, json.loads(config_json(cfg)), cfg)


SAME_VERDICTS = ("ranker.llm.batch_size: saved 2, given 32",)
"""Preset changes that judge as the measured config did: batches of 32 prompts give the pair
orders of batches of 2 on 0.9999 of the pairs of the stored confirmation windows
(`benchmarks/results/judge_windows/`; float rounding only)."""


def test_the_sailor_presets_are_built_as_measured():
    before = stored()
    for name, cfg in load_script("experiments/sailor.py").PRESETS.items():
        differences = _differences(before[f"sailor.{name}"], cfg)
        assert [d for d in differences if d not in SAME_VERDICTS] == [], name


def test_the_repair_arms_are_built_by_the_comparison_as_measured():
    compare = load_script("experiments/compare.py")
    before = stored()
    _, args = compare.parse(["--preset", "cpu", "--iterations", "16", "--updates-per-segment",
                             "8", "--starts", *STARTS, "--arms", *REPAIR_ARMS])
    runs = compare.arm_list(compare.base_config("cpu", args), args.starts, args.arms)
    assert len(runs) == len(STARTS) * len(REPAIR_ARMS)
    for _, start, arm, cfg in runs:
        name = f"repair.cpu.{start.name}.{REPAIR_ARMS[arm]}"
        assert _differences(before[name], cfg) == [], name


def test_every_ablation_variant_is_its_arms_changes_from_the_papers_update():
    before = stored()
    score_only = json.loads(json.dumps(list(STARTS_BY_NAME["score_only"].theta)))
    checked = 0
    for name, saved in before.items():
        kind, preset, *rest = name.split(".")
        if kind != "ablations":
            continue
        variant = rest[0]
        suffix = next((s for s in ("_outcome", "_expert") if variant.endswith(s)), "")
        if kind != "ablations" or variant.removesuffix(suffix) == "sailor_bo":
            continue
        paper = flatten(before[f"ablations.{preset}.sailor_bo{suffix}"])
        if variant in ("baseline", "score_only"):  # the start kept fixed: the fixed arm
            changes = dict(ARMS["fixed"].changes)
            if variant == "score_only":
                changes["theta0"] = score_only
        else:
            changes = dict(ARMS[{v: k for k, v in ABLATION_ARMS.items()}[
                variant.removesuffix(suffix)]].changes)
        built = paper | {k: json.loads(json.dumps(to_jsonable(v))) for k, v in changes.items()}
        assert built == flatten(saved), name
        checked += 1
    assert checked == 4 * (2 + 3 * 5)  # 4 presets: baseline, score_only, 3 judges x 5 arms


def test_the_recommended_sailor_is_the_measured_repair_arm():
    """`compare.py --preset cpu`'s `sailor` arm (`SailorConfig()` with the expert judge at the
    repair table's sizes) is the config the recommended SAILOR's repair table saved, field by
    field (`benchmarks/results/repair_named_starts/`)."""
    compare = load_script("experiments/compare.py")
    with gzip.open(FLOOR_ARM, "rt", encoding="utf-8") as f:
        saved = json.load(f)
    _, args = compare.parse(["--preset", "cpu", "--starts", "theta0", "--arms", "sailor"])
    (_, (_, _, _, cfg)) = compare.arm_list(compare.base_config("cpu", args), args.starts,
                                           args.arms)
    assert _differences(saved, cfg) == []
    assert dataclasses.replace(cfg, ranker=RankerConfig(kind="expert")) == dataclasses.replace(
        # the defaults, at the table's sizes, from theta0 (the LLM's settings unread)
        SailorConfig(), ranker=RankerConfig(kind="expert"), start=cfg.start,
        iterations=32, num_seeds=8, baseline=False, tensorboard=False,
        ppo=PPOConfig(network=SMALL_NETWORK, num_envs=256, num_steps=32, updates_per_segment=4),
        eval=EvalConfig(episodes=64, max_len=50_000))


def test_default_is_the_recommended_sailor_and_paper_the_papers():
    cfg = SailorConfig()
    assert (cfg.window, cfg.trajectories, cfg.reference_games) == (100, 16, 8)
    assert cfg.preferences.compare == "sum"
    assert RankerConfig(kind="expert").expert_verdict == "regret"  # compared as sums
    assert cfg.alignment.method == "bt_mcmc" and cfg.alignment.heldout == 0.5
    assert cfg.alignment.survival_guard and cfg.alignment.mcmc_trust_region == 0.3
    assert arm_config("paper", cfg) == dataclasses.replace(PAPER, baseline=False)
    assert (PAPER.window, PAPER.trajectories, PAPER.reference_games) == (0, 8, 0)
    assert PAPER.preferences == PreferenceConfig() == cfg.preferences
    assert AlignmentConfig() == cfg.alignment  # one default per setting
    assert (PAPER.alignment.method, PAPER.alignment.beta, PAPER.alignment.heldout) == ("bo", 0.9, 0)
    assert not PAPER.alignment.survival_guard and PAPER.alignment.survival_floor is None
    assert PAPER.alignment.mcmc_trust_region == 0.2
    assert cfg.warmup_updates == 8 and PAPER.warmup_updates == 0
    assert dataclasses.replace(PAPER, trajectories=16, window=100, reference_games=8,
                               warmup_updates=8, preferences=cfg.preferences,
                               alignment=cfg.alignment) == cfg


@pytest.mark.parametrize("name", ["smoke", "cpu", "gpu"])
def test_presets_change_only_sizes_and_judge_from_the_default(name):
    preset = load_script("experiments/sailor.py").PRESETS[name]
    default = SailorConfig()
    assert preset.alignment == default.alignment and preset.preferences == default.preferences
    assert preset.window == default.window


def test_help_says_what_each_preset_trains_and_why(capsys, monkeypatch):
    """`-h` gives each preset one line (its time and budget), `-H` its sizes and why."""
    monkeypatch.setenv("COLUMNS", "100")
    sailor = load_script("experiments/sailor.py")
    with pytest.raises(SystemExit):
        sailor.parse(["--help"])
    lines = capsys.readouterr().out.splitlines()
    for name, cfg in sailor.PRESETS.items():
        line = next(line for line in lines if line.startswith(f"  {name} "))
        assert len(line) <= 98 and sailor.PRESET_TIME[name] in line, line
        assert f"{cfg.iterations * cfg.ppo.steps_per_segment:,} env steps" in line, line
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        sailor.parse(["-H"])
    text = " ".join(capsys.readouterr().out.split())
    for name, cfg in sailor.PRESETS.items():
        assert f"{name} {sailor.PRESET_WHY[name][0]}: {preset_sizes(cfg)}" in text
        assert sailor.PRESET_WHY[name][1] in text
    assert "5,242,880 env steps per seed" in preset_sizes(sailor.PRESETS["gpu"])
    assert "64x64 trunk, 256 envs x 8 + 8 baseline seeds, 40 updates of theta (8 before " \
        "training)" in preset_sizes(sailor.PRESETS["gpu"])
