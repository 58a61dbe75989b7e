"""experiments/ablations.py: variant configs, end-to-end table, resume skipping finished work."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil

import numpy as np
import pytest
from test_experiments import _load

from sailor_jax import report
from sailor_jax.game.features import FEATURE_NAMES
from sailor_jax.judges import OutcomeRanker
from sailor_jax.run import loop

TINY = ["--base.ppo.num-envs", "16", "--base.ppo.num-steps", "32",
        "--base.ppo.updates-per-segment", "1", "--base.ppo.network.hidden-sizes", "16",
        "--base.trajectories", "4", "--base.max-len", "80", "--base.eval.episodes", "4",
        "--base.eval.max-len", "400", "--base.alignment.bo-calls", "5",
        "--base.alignment.bo-initial-points", "3", "--base.num-seeds", "2",
        "--base.iterations", "2", "--base.eval-every", "1"]


@pytest.fixture(scope="module")
def ablations():
    return _load("experiments/ablations.py")


def test_variant_configs_change_only_the_reward_learning(ablations):
    base = ablations.PRESETS["cpu"].base
    for name in ablations.VARIANTS:
        cfg = ablations.variant_config(name, base)
        assert cfg.ppo == base.ppo and cfg.eval == base.eval and cfg.num_seeds == base.num_seeds
        assert cfg.iterations == base.iterations and cfg.seed == base.seed
        assert not cfg.baseline
        assert cfg.self_align == (name not in ablations.FIXED_VARIANTS)
        assert (cfg.ranker.kind == "outcome") == name.endswith("_outcome")
        assert (cfg.ranker.kind == "expert") == name.endswith("_expert")
        assert cfg.refine.enabled == ("refine" in name)
    get = ablations.variant_config
    assert get("score_only", base).theta0 == (1.0,) + (0.0,) * 7
    assert get("baseline", base).theta0 is None
    assert get("sailor_bt_mcmc", base).alignment.method == "bt_mcmc"
    assert get("sailor_bt_mcmc_expert", base).alignment.method == "bt_mcmc"
    assert get("sailor_bo", base).alignment.method == "bo"
    assert get("sailor_bo_weighted_discrepancy_outcome", base).preferences.weighting == \
        "discrepancy"
    assert get("sailor_bo_weighted_confidence", base).preferences.weighting == "confidence"
    constrained = get("sailor_bo_constrained", base)
    assert "score_gain" not in constrained.tunable and len(constrained.tunable) == 7
    assert ablations.judge_label(get("sailor_bo", ablations.PRESETS["gpu"].base)) == \
        "llm:Qwen2.5-1.5B-Instruct"
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        get("nope", base)


def test_presets_parse_and_reject_bad_variants(ablations):
    for name, preset in ablations.PRESETS.items():
        got, args = ablations.parse(["--preset", name])
        assert got == name and args == preset
    cpu = ablations.PRESETS["cpu"]
    assert len(cpu.variants) >= 3 and cpu.base.num_seeds >= 3
    expert = ablations.PRESETS["expert"]  # issue 11's experiment: >= 5 seeds, expert judge
    assert expert.base.num_seeds >= 5 and expert.base.ppo.network == cpu.base.ppo.network
    assert {"baseline", "score_only", "sailor_bo_expert", "sailor_bt_mcmc_expert"} <= set(
        expert.variants)
    _, args = ablations.parse(["--preset", "cpu", "--variants", "baseline", "sailor_bo"])
    assert args.variants == ("baseline", "sailor_bo")
    with pytest.raises(ValueError, match="unknown variant"):
        ablations.parse(["--variants", "baseline", "sailor_typo"])
    with pytest.raises(ValueError, match="repeat"):
        ablations.parse(["--variants", "baseline", "baseline"])


class _Killed(OutcomeRanker):
    def rank_groups(self, groups):
        raise KeyboardInterrupt("simulated kill")


def test_ablations_end_to_end_and_resume_skips_finished_variants(ablations, tmp_path,
                                                                 monkeypatch, caplog):
    out = str(tmp_path / "abl")
    argv = ["--out", out, "--variants", "baseline", "sailor_bo_outcome", *TINY]
    # First attempt: the SAILOR variant is killed in its first iteration.
    real_run = loop.run
    monkeypatch.setattr(loop, "run", lambda cfg, folder, resume=False, progress=None,
                        devices=None: real_run(cfg, folder, resume=resume, progress=progress,
                                          ranker=_Killed() if cfg.self_align else None))
    with pytest.raises(KeyboardInterrupt):
        ablations.main(argv)
    baseline_results = os.path.join(out, "variants", "baseline", "results.json")
    mtime = os.stat(baseline_results).st_mtime_ns
    assert not os.path.exists(os.path.join(out, "variants", "sailor_bo_outcome", "results.json"))
    # Second attempt: the baseline is read back, the SAILOR variant continues.
    calls = []
    monkeypatch.setattr(loop, "run", lambda cfg, folder, resume=False, progress=None,
                        devices=None: (calls.append((os.path.basename(folder), resume))
                                       or real_run(cfg, folder, resume=resume,
                                                   progress=progress)))
    rows = ablations.main(argv)
    assert calls == [("sailor_bo_outcome", True)]
    assert os.stat(baseline_results).st_mtime_ns == mtime
    assert [r["variant"] for r in rows] == ["baseline", "sailor_bo_outcome"]
    table = report.read_csv(os.path.join(out, "ablations.csv"))
    assert list(table[0]) == list(report.COLUMNS) and len(table) == 2
    for row in table:
        assert row["seeds"] == 2 and row["env_steps_per_seed"] == 2 * 16 * 32
        for key in report.COLUMNS[4:]:
            assert math.isfinite(row[key]), (row["variant"], key)
        assert row["score_ci_low"] <= row["score_mean"] <= row["score_ci_high"]
    md = open(os.path.join(out, "ablations.md")).read()
    assert md.count("\n") == 4 and "| sailor_bo_outcome | outcome | 2 |" in md
    thetas = open(os.path.join(out, "theta_trajectories.csv")).read().splitlines()
    assert thetas[0].split(",") == ["variant", "seed", "iteration", *FEATURE_NAMES]
    assert len(thetas) == 1 + 2 * 2 * 3  # variants x seeds x (iterations + 1)
    sailor = json.load(open(os.path.join(out, "variants", "sailor_bo_outcome",
                                         "results.json")))
    assert np.asarray(sailor["theta_history"]).shape == (3, 2, 8)
    # Figures of the finished run.
    plot = _load("experiments/plot.py")
    paths = plot.main([out])
    assert sorted(os.path.basename(p) for p in paths) == sorted(
        f"{n}.{e}" for n in plot.FIGURES for e in ("png", "pdf"))
    for path in paths:
        with open(path, "rb") as f:
            head = f.read(8)
        assert head.startswith(b"\x89PNG" if path.endswith("png") else b"%PDF")
    runs = plot.load_runs(out)
    assert list(runs) == ["baseline", "sailor_bo_outcome"]
    unfinished = os.path.join(out, "variants", "zz_unfinished")  # killed before its results
    shutil.copytree(os.path.join(out, "variants", "baseline"), unfinished)
    os.remove(os.path.join(unfinished, "results.json"))
    with caplog.at_level(logging.WARNING, logger="sailor_jax.run.variants"):
        assert list(plot.load_runs(out)) == ["baseline", "sailor_bo_outcome"]
    assert [r.getMessage() for r in caplog.records] == [
        f"{out}: variants zz_unfinished have not finished and are left out (run the same "
        f"python experiments/ablations.py --preset smoke command again (--out {out}): it "
        "resumes them)"]
    shutil.rmtree(unfinished)
    steps, scores = plot._seed_scores(runs["sailor_bo_outcome"])
    assert steps.tolist() == [512.0, 1024.0] and scores.shape == (2, 2)
    eval_steps, eval_scores = plot._eval_curve(runs["baseline"])
    assert eval_steps.tolist() == [512.0, 1024.0] and eval_scores.shape == (2, 2)
    single = plot.main([os.path.join(out, "variants", "baseline"), "--out",
                        str(tmp_path / "figs")])
    assert len(single) == 2 * len(plot.FIGURES)
    with pytest.raises(FileNotFoundError, match="no results.json"):
        plot.main([str(tmp_path / "empty")])
    # A third run changes nothing and reads everything back.
    calls.clear()
    assert ablations.main(argv) == rows and calls == []
    # A different configuration in the same folder is refused, not mixed in.
    with pytest.raises(ValueError, match="different configuration"):
        ablations.main([*argv, "--base.eval.episodes", "8"])
