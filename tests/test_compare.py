"""experiments/compare.py and the arms table: configs, the table's numbers from the runs,
resume, figures."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import shutil

import numpy as np
import pytest
import scipy.stats
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import load_script

from sailor_jax.config import PAPER, SMALL_NETWORK, EvalConfig, PPOConfig, SailorConfig
from sailor_jax.config.arms import ARMS, DEFAULT_ARMS, PAPER_CHANGES, arm_config, replace_fields
from sailor_jax.errors import UserError
from sailor_jax.run import loop
from sailor_jax.run.run_dir import config_json
from sailor_lab import report, seed_statistics, variants
from sailor_lab.starts import STARTS

TINY_BASE = dataclasses.replace(
    SailorConfig(), iterations=2, num_seeds=2, trajectories=4, reference_games=2, max_len=80,
    warmup_updates=1, window=20, baseline=False, tensorboard=False, eval_every=1,
    ppo=PPOConfig(network=dataclasses.replace(SMALL_NETWORK, hidden_sizes=(16,)), num_envs=16,
                  num_steps=32, updates_per_segment=1),
    alignment=dataclasses.replace(SailorConfig().alignment, bo_calls=5, bo_initial_points=3,
                                  mcmc_samples=200, mcmc_burn_in=50, update_workers=1),
    eval=EvalConfig(episodes=4, max_len=400))
"""A comparison's base config small enough for the tests (the outcome judge set per test). The
seeds' theta updates run serially in the run's process, as in `support.TINY`."""


@pytest.fixture(scope="module")
def compare():
    return load_script("experiments/compare.py")


def test_every_arm_builds_and_changes_only_its_fields():
    base = dataclasses.replace(TINY_BASE, start=STARTS["ones"].theta)
    assert arm_config("sailor", base) == base  # the recommended SAILOR: nothing changed
    assert arm_config("paper", SailorConfig()) == dataclasses.replace(PAPER, baseline=False)
    for name, arm in ARMS.items():
        cfg = arm_config(name, base)
        want = replace_fields(arm_config(arm.base, base) if arm.base else base, arm.changes)
        assert cfg == want and cfg.start == base.start and cfg.iterations == 2
        if arm.control:
            assert arm_config(arm.control, base).ranker.kind == "random"
    for name in ("sailor", "paper"):  # a control differs from its arm in the judge only
        assert arm_config(ARMS[name].control, base) == replace_fields(
            arm_config(name, base), {"ranker.kind": "random"})
    assert set(DEFAULT_ARMS) <= set(ARMS) and "sailor" in DEFAULT_ARMS
    assert not arm_config("fixed", base).self_align
    assert dict(PAPER_CHANGES)["alignment.method"] == "bo"


def test_replace_fields_applies_one_dataclass_at_once_and_names_bad_paths():
    cfg = replace_fields(SailorConfig(), {"trajectories": 8, "reference_games": 0,
                                          "alignment.beta": 2.0})
    assert (cfg.trajectories, cfg.reference_games, cfg.alignment.beta) == (8, 0, 2.0)
    with pytest.raises(ValueError, match="no field 'nope'"):
        replace_fields(SailorConfig(), {"alignment.nope": 1})
    with pytest.raises(ValueError, match="reference_games"):
        replace_fields(SailorConfig(), {"trajectories": 8})  # 8 reference games of 8


def test_cli_builds_the_runs_and_refuses_bad_names(compare):
    preset, args = compare.parse(["--preset", "cpu", "--starts", "theta0", "timid",
                                  "--judge", "outcome", "--iterations", "4", "--num-seeds", "3"])
    base = compare.base_config(preset, args)
    runs = compare.arm_list(base, args.starts, args.arms)
    assert [r[0] for r in runs] == ["theta0.fixed", "theta0.sailor", "theta0.sailor_random_judge",
                                    "theta0.paper", "timid.fixed", "timid.sailor",
                                    "timid.sailor_random_judge", "timid.paper"]
    by = {r[0]: r[3] for r in runs}
    assert by["timid.sailor"] == dataclasses.replace(
        base, start=STARTS["timid"].theta)  # the recommended SAILOR at the preset's sizes
    assert by["timid.sailor"].ranker.kind == "outcome" and by["timid.sailor"].iterations == 4
    assert by["timid.sailor_random_judge"].ranker.kind == "random"
    for bad, match in ((["--arms", "nope"], "--arms: unknown arm 'nope'"),
                       (["--starts", "nope"], "--starts"),
                       (["--arms", "paper", "paper"], "--arms repeats")):
        _, a = compare.parse(["--preset", "smoke", *bad])
        with pytest.raises(UserError, match=match):
            compare.arm_list(compare.base_config("smoke", a), a.starts, a.arms)


class _Killed(Exception):
    pass


@pytest.mark.slow
def test_compare_end_to_end_numbers_resume_and_figures(compare, tmp_path, monkeypatch, caplog):
    out = str(tmp_path / "cmp")
    # The CLI tests' segment (`support.TINY_PPO`: 8 steps, a constant learning rate):
    # the arms' tables and files are what this test reads, not the schedule.
    base = dataclasses.replace(
        TINY_BASE, ranker=dataclasses.replace(TINY_BASE.ranker, kind="outcome"),
        ppo=dataclasses.replace(TINY_BASE.ppo, num_steps=8, lr_schedule="constant"))
    starts, arms = ("pays_for_dying", "mine:score_gain=0.2,game_over=1"), (
        "fixed", "sailor", "sailor_random_judge")
    runs = compare.arm_list(base, starts, arms)
    real_run, calls = loop.run, []

    def first(cfg, folder, resume=False, progress=None, devices=None, label="SAILOR"):
        calls.append(os.path.basename(folder))
        if len(calls) == 3:  # the third arm: killed before it starts
            raise _Killed
        return real_run(cfg, folder, resume=resume, progress=progress)

    monkeypatch.setattr(loop, "run", first)
    with pytest.raises(_Killed):
        compare.compare(base, runs, out)
    assert calls == ["theta0.fixed", "pays_for_dying.fixed", "pays_for_dying.sailor"]
    calls.clear()
    monkeypatch.setattr(loop, "run", lambda cfg, folder, resume=False, progress=None,
                        devices=None, label="SAILOR": (calls.append(os.path.basename(folder))
                                       or real_run(cfg, folder, resume=resume, progress=progress)))
    rows = compare.compare(base, runs, out)
    assert calls == ["pays_for_dying.sailor", "pays_for_dying.sailor_random_judge",
                     "mine.fixed", "mine.sailor", "mine.sailor_random_judge"]
    assert [r["arm"] for r in rows] == [r[0] for r in runs]
    saved = json.load(open(os.path.join(out, "compare.json")))
    assert saved["env_steps_per_seed"] == 2 * 16 * 8
    assert saved["starts"]["mine"]["theta"] == [0.2] + [0.0] * 6 + [1.0]
    by = {r["arm"]: r for r in rows}
    scores = {a: r["per_seed"]["score"] for a, r in by.items()}
    for arm, r in by.items():  # every number from the arm's own results.json
        res = json.load(open(os.path.join(out, "variants", arm, "results.json")))
        assert scores[arm] == [e["score_mean"] for e in res["evaluation"]["per_seed"]]
        assert r["score"] == pytest.approx(report.mean_ci(scores[arm]))
        history = np.asarray(res["theta_history"])  # [warm-up + T + 1, S, F]
        np.testing.assert_allclose(history[0], [saved["starts"][r["start"]]["theta"]] * 2)
        if r["method"] == "fixed":
            assert history.shape == (3, 2, 8) and (history == history[0]).all()
        else:
            assert history.shape == (4, 2, 8)  # one warm-up update
        np.testing.assert_allclose(r["final_theta"], history[-1].mean(axis=0))
    arm = by["mine.sailor"]
    d = np.subtract(scores["mine.sailor"], scores["mine.fixed"])
    assert arm["vs_fixed_start"]["per_seed"] == pytest.approx(d.tolist())
    assert arm["worst_ratio_to_fixed"] == pytest.approx(
        min(np.divide(scores["mine.sailor"], scores["mine.fixed"])))
    assert arm["vs_random_judge"]["per_seed"] == pytest.approx(np.subtract(
        scores["mine.sailor"], scores["mine.sailor_random_judge"]).tolist())
    assert "vs_random_judge" not in by["mine.sailor_random_judge"]
    assert "vs_random_judge" not in by["mine.fixed"]
    gap = np.mean(scores["theta0.fixed"]) - np.mean(scores["mine.fixed"])
    if gap > 0:
        assert arm["recovery"]["fraction"] == pytest.approx(d.mean() / gap)
    else:  # a start no worse than theta0: no recovery fraction
        assert "recovery" not in arm
    assert by["mine.fixed"]["vs_theta0"]["per_seed"] == pytest.approx(
        np.subtract(scores["mine.fixed"], scores["theta0.fixed"]).tolist())
    md = open(os.path.join(out, "compare.md")).read()
    table, field, power, verdicts = md.split("\n\n", 3)
    judged = [r for r in rows if "vs_fixed_start" in r]
    assert verdicts.startswith("Verdicts") and verdicts.count("\n- ") == len(judged) == 4
    for r in judged:  # each line says the row's own verdict, computed from its numbers
        assert f"- {r['arm']} against its fixed start: {r['verdict']}" in verdicts
    assert table.count("\n") == 1 + 7 and "| worst seed |" in table and "| mine.sailor | " in table
    # 2 seeds: the power columns, not rliable's bootstrap (3 distinct resamples)
    assert field.count("\n") == 1 + 7 and "| IQM [95% bootstrap] |" not in field
    assert "| detectable at 80% power |" in field
    assert power.startswith("rliable's IQM, bootstrap means and P(X > Y) need 3 or more seeds.")
    assert ("±" in power or "no power estimate" in power) and "mine.sailor (2 " in power
    assert all("rliable" not in r and "p_improvement_vs_fixed_start" not in r for r in rows)
    assert arm["vs_fixed_start"]["power"]["paired_sd"] == pytest.approx(np.std(d, ddof=1))
    assert os.path.getsize(os.path.join(out, "figures", "profiles_mine.png")) > 1000
    assert saved["machine"] == json.load(open(os.path.join(out, "machine.json")))
    assert os.path.getsize(os.path.join(out, "figures", "theta_mine.png")) > 1000
    lines = open(os.path.join(out, "theta_trajectories.csv")).read().splitlines()
    assert len(lines) == 1 + 3 * 2 * 3 + 4 * 2 * 4
    # Running again reads every arm back and writes the same numbers.
    calls.clear()
    assert compare.compare(base, runs, out) == rows and calls == []
    more = compare.arm_list(base, starts, (*arms, "paper"))
    assert compare.compare(base, more, out, finished_only=True) == rows and calls == []
    with pytest.raises(UserError, match="--finished-only: theta0.fixed has not finished"):
        compare.compare(base, runs, str(tmp_path / "none"), finished_only=True)
    # A saved field that differs is refused, not mixed in.
    with pytest.raises(UserError, match="different configuration"):
        compare.compare(dataclasses.replace(base, eval=EvalConfig(episodes=8, max_len=400)),
                        compare.arm_list(dataclasses.replace(
                            base, eval=EvalConfig(episodes=8, max_len=400)), starts, arms), out)
    # --only: just the named runs (side by side in several processes), no table written.
    os.remove(os.path.join(out, "compare.md"))
    assert compare.compare(base, runs, out, only=("mine.fixed",)) == [] and calls == []
    assert not os.path.exists(os.path.join(out, "compare.md"))
    with pytest.raises(UserError, match="--only: mine.paper is not a run"):
        compare.compare(base, runs, out, only=("mine.paper",))
    # Figures of the finished comparison, in its order; an unfinished run is named and left out.
    plot = load_script("experiments/plot.py")
    paths = plot.main([out])
    assert sorted(os.path.basename(p) for p in paths) == sorted(
        f"{n}.{e}" for n in plot.FIGURES for e in ("png", "pdf"))
    assert list(plot.load_runs(out)) == [r[0] for r in runs]
    unfinished = os.path.join(out, "variants", "zz_unfinished")
    shutil.copytree(os.path.join(out, "variants", "mine.fixed"), unfinished)
    os.remove(os.path.join(unfinished, "results.json"))
    with caplog.at_level(logging.WARNING, logger="sailor_lab.variants"):
        assert list(plot.load_runs(out)) == [r[0] for r in runs]
    assert "zz_unfinished have not finished" in caplog.text


def test_a_kept_fixed_arm_is_the_same_cut_in_other_segments_and_is_read_back(
        compare, tmp_path, monkeypatch):
    def run(out: str, iterations: int, updates: int, arm: str = "fixed"):
        cfg = dataclasses.replace(TINY_BASE, iterations=iterations, ppo=dataclasses.replace(
            TINY_BASE.ppo, updates_per_segment=updates))
        return cfg, compare.arm_list(cfg, ("theta0",), (arm,)), str(tmp_path / out)

    def scores(rows: list[dict]) -> list[float]:
        return rows[0]["per_seed"]["score"]

    two_by_two = compare.compare(*run("a", 2, 2))
    assert scores(compare.compare(*run("b", 4, 1))) == scores(two_by_two)  # to the last digit
    calls = []
    monkeypatch.setattr(loop, "run", lambda *a, **k: calls.append(a) or pytest.fail("ran"))
    assert scores(compare.compare(*run("a", 4, 1))) == scores(two_by_two) and calls == []
    cfg, _, out = run("a", 4, 1)  # another judge, which a kept-fixed arm never calls
    other = dataclasses.replace(cfg, ranker=dataclasses.replace(cfg.ranker, kind="outcome"))
    assert other.ranker != TINY_BASE.ranker
    assert scores(compare.compare(other, compare.arm_list(other, ("theta0",), ("fixed",)),
                                  out)) == scores(two_by_two) and calls == []
    with pytest.raises(UserError, match="theta0.fixed' run with a different configuration"):
        compare.compare(*run("a", 3, 1))  # another total of PPO updates
    sailor = {u: dict((r[0], r[3]) for r in run("c", 4 // u, u, "sailor")[1])["theta0.sailor"]
              for u in (1, 2)}
    assert variants._differences(json.loads(config_json(sailor[2])), sailor[1]) == [
        "iterations: saved 2, given 4", "ppo.updates_per_segment: saved 2, given 1"]


@pytest.mark.slow
def test_blocks_pool_paired_seeds_resume_and_stay_on_one_cpu_type(compare, tmp_path,
                                                                   monkeypatch):
    """--blocks 2: each block a comparison of its own under its root seed, the pooled table
    their seeds concatenated in pairs; read back on rerun; a block refuses another CPU."""
    out = str(tmp_path / "pooled")
    runs = compare.arm_list(TINY_BASE, ("ones",), ("fixed",))
    rows = compare.compare(TINY_BASE, runs, out, blocks=2)
    blocks = [json.load(open(os.path.join(out, f"seed{r}", "compare.json"))) for r in (0, 1)]
    for r, block in enumerate(blocks):
        res = json.load(open(os.path.join(out, f"seed{r}", "variants", "ones.fixed",
                                          "results.json")))
        assert res["config"]["seed"] == r and block["base_config"]["seed"] == r
    pooled = json.load(open(os.path.join(out, "compare.json")))
    assert [b["seed"] for b in pooled["blocks"]] == [0, 1]
    assert pooled["blocks"][0]["machine"]["cpu_type"] == report.machine()["cpu_type"]
    by = {r["arm"]: r for r in rows}
    for arm in ("theta0.fixed", "ones.fixed"):
        per_block = [{r["arm"]: r for r in b["rows"]}[arm]["per_seed"]["score"] for b in blocks]
        assert by[arm]["per_seed"]["score"] == per_block[0] + per_block[1]
        assert per_block[0] != per_block[1]  # other root seeds, other games
    assert by["ones.fixed"]["vs_theta0"]["per_seed"] == pytest.approx(np.subtract(
        by["ones.fixed"]["per_seed"]["score"], by["theta0.fixed"]["per_seed"]["score"]))
    assert len(by["ones.fixed"]["per_seed"]["score"]) == 4
    monkeypatch.setattr(loop, "run", lambda *a, **k: pytest.fail("ran"))
    assert compare.compare(TINY_BASE, runs, out, blocks=2) == rows  # read back
    other = os.path.join(out, "seed1", "machine.json")
    with open(other) as f:
        saved = json.load(f)
    with open(other, "w") as f:
        json.dump(saved | {"cpu_type": "Other CPU, family 1 model 1"}, f)
    assert compare.compare(TINY_BASE, runs, out, blocks=2) == rows  # nothing to run: fine
    shutil.rmtree(os.path.join(out, "seed1", "variants", "ones.fixed"))
    with pytest.raises(UserError, match="seed1 ran on Other CPU, family 1 model 1, this "
                                        "machine is .*pair only within one CPU type"):
        compare.compare(TINY_BASE, runs, out, blocks=2)
    rows = compare.compare(TINY_BASE, runs, out, blocks=2, finished_only=True)
    assert rows == compare.compare(TINY_BASE, runs, os.path.join(out, "seed0"))  # block 0 only
    shutil.rmtree(os.path.join(out, "seed0", "variants", "theta0.fixed"))
    with pytest.raises(UserError, match="--finished-only: no block of .* has finished all"):
        compare.compare(TINY_BASE, runs, out, blocks=2, finished_only=True)


def test_arms_written_out_on_the_command_line(compare):
    """`NAME:field=value,...` in --arms: any SailorConfig field, typed by its default, from
    `SailorConfig()` or `base=ARM`; bad specs are refused with one line before any work."""
    _, args = compare.parse(["--preset", "smoke", "--starts", "theta0", "--arms", "fixed",
                             "no_heldout:alignment.heldout=0,alignment.survival_guard=false",
                             "paper_beta:base=paper,alignment.beta=2",
                             "few:tunable=('score_gain', 'empty_cells')"])
    runs = {r[0]: r[3] for r in compare.arm_list(compare.base_config("smoke", args),
                                                 args.starts, args.arms)}
    base = dataclasses.replace(compare.base_config("smoke", args), start=STARTS["theta0"].theta)
    assert list(runs) == ["theta0.fixed", "theta0.no_heldout", "theta0.paper_beta", "theta0.few"]
    assert runs["theta0.no_heldout"] == replace_fields(
        arm_config("sailor", base), {"alignment.heldout": 0.0,
                                     "alignment.survival_guard": False})
    assert runs["theta0.paper_beta"] == replace_fields(arm_config("paper", base),
                                                       {"alignment.beta": 2.0})
    assert runs["theta0.few"].tunable == ("score_gain", "empty_cells")
    _, table = compare.arm_table(args.arms)
    assert dict(table["no_heldout"].changes) == {"alignment.heldout": 0.0,
                                                 "alignment.survival_guard": False}
    for spelling in ("alignment.bo-calls", "--sailor.alignment.bo-calls", "alignment.bo_calls"):
        _, same = compare.arm_table([f"b:{spelling}=3"])  # the flag's spelling, or the field's
        assert dict(same["b"].changes) == {"alignment.bo_calls": 3}
    for spec, match in (
            ("x:alignment.helout=0", "no field 'alignment.helout'; did you mean "
                                     "'alignment.heldout'"),
            ("x:alignment.heldout=half", "alignment.heldout takes a float .* got 'half'"),
            ("x:iterations=2.5", "iterations takes a int"),
            ("x:alignment.heldout=2", "alignment.heldout must be in"),  # the config's check
            ("x:alignment.no_such=1", "no field 'alignment.no_such'$"),  # nothing near
            ("sailor:alignment.beta=2", "'sailor' is already an arm's name"),
            ("x:base=nope", "unknown base arm 'nope'"),
            ("x:", "expected NAME:field=value"),
            ("x:alignment.beta", "is not field=value")):
        _, a = compare.parse(["--preset", "smoke", "--arms", spec])
        with pytest.raises(UserError, match=f"^--arms.*{match}") as err:
            compare.arm_list(compare.base_config("smoke", a), a.starts, a.arms)
        assert "\n" not in str(err.value)
    _, a = compare.parse(["--preset", "smoke", "--arms", "x:alignment.beta=2",
                          "x:alignment.beta=3"])
    with pytest.raises(UserError, match="already an arm's name"):
        compare.arm_list(compare.base_config("smoke", a), a.starts, a.arms)


def test_a_written_out_arm_pools_over_blocks_and_is_read_back(compare, tmp_path, monkeypatch):
    out = str(tmp_path / "cli_arm")
    base = dataclasses.replace(TINY_BASE, iterations=1, warmup_updates=0,
                               ranker=dataclasses.replace(TINY_BASE.ranker, kind="outcome"))
    arms = ("fixed", "beta2:alignment.beta=2")
    runs = compare.arm_list(base, ("theta0",), arms)
    table = compare.arm_table(arms)[1]
    rows = compare.compare(base, runs, out, blocks=2, arms=table)
    pooled = json.load(open(os.path.join(out, "compare.json")))
    assert pooled["arms"]["beta2"] == {"alignment.beta": 2.0, "base": None}
    by = {r["arm"]: r for r in rows}
    assert len(by["theta0.beta2"]["per_seed"]["score"]) == 4
    assert "vs_fixed_start" in by["theta0.beta2"] and "vs_random_judge" not in by["theta0.beta2"]
    saved = json.load(open(os.path.join(out, "seed1", "variants", "theta0.beta2",
                                        "config.json")))
    assert saved["alignment"]["beta"] == 2.0 and saved["seed"] == 1
    monkeypatch.setattr(loop, "run", lambda *a, **k: pytest.fail("ran"))
    assert compare.compare(base, runs, out, blocks=2, arms=table) == rows  # read back


@pytest.mark.parametrize("per_seed, recovery, said", [
    ([100.0, 120.0, 80.0, 110.0], None, r"^a gain: \+102 \[\+75, \+130\] \(4/4 seeds higher\)$"),
    ([-100.0, -120.0, -80.0, -110.0], None, r"^a loss: -102 "),
    ([0.0, 0.0, 0.0], None, r"^level: the same final score on every one of 3 seeds$"),
    ([500.0, -400.0, 300.0, -200.0], None,
     r"^undecided at this size: no difference larger than ±719 \(95%\), \+50 \[-619, \+719\] "
     r"\(2/4 seeds higher\); about [\d,]+ paired seeds would detect ±50 \(paired SD 420\)$"),
    ([500.0, -400.0, 300.0, -200.0], {"fraction": 0.09, "ci_low": 0.03, "ci_high": 0.14},
     r"^the measures disagree: recovery 0.09 \[0.03, 0.14\] against a paired difference of "
     r"\+50 "),
    ([7.0], None, r"^undecided at this size: 1 seed gives no interval"),
])
def test_verdict_line(per_seed, recovery, said):
    from sailor_lab.comparison import verdict
    line = verdict(report.paired_difference(per_seed, [0.0] * len(per_seed)), recovery)
    assert re.search(said, line), line
    if line.startswith("undecided at this size: no"):  # N from the observed SD, by statsmodels
        sd = np.std(per_seed, ddof=1)
        assert f"about {seed_statistics.seeds_needed(50.0, sd):,} paired" in line


def test_against_another_arm_pairs_every_arm_with_it(compare):
    runs = compare.arm_list(TINY_BASE, ("theta0",), ("fixed", "sailor", "paper"))
    samples = {name: {"score": score, "tile_1024": [0.0] * 4, "tile_2048": [0.0] * 4,
                      "final_theta": [list(STARTS["theta0"].theta)] * 4}
               for name, score in (("theta0.fixed", [10.0, 20.0, 30.0, 40.0]),
                                   ("theta0.sailor", [15.0, 25.0, 35.0, 45.0]),
                                   ("theta0.paper", [5.0, 30.0, 20.0, 40.0]))}
    from sailor_lab.comparison import markdown, summarize
    rows = {r["arm"]: r for r in summarize(runs, samples, reps=200, against="paper")}
    assert rows["theta0.sailor"]["vs_against"]["per_seed"] == [10.0, -5.0, 15.0, 5.0]
    assert rows["theta0.sailor"]["against_arm"] == "theta0.paper"
    assert "p_improvement_vs_against" in rows["theta0.sailor"]
    assert "vs_against" not in rows["theta0.paper"] and "verdict" not in rows["theta0.paper"]
    assert rows["theta0.sailor"]["verdict"].startswith("undecided at this size")
    table = markdown(list(rows.values()))
    assert "- theta0.sailor against theta0.paper: undecided at this size" in table
    assert "| diff. to the arm compared with |" in table and "+6 [" in table  # mean 6.25
    assert "P(arm > arm compared with) [95%]" in table
    assert "paired difference to the arm compared with these seeds detect is ±" in table
    for r in rows.values():  # the field's numbers of every row from its own per-seed scores
        x = samples[r["arm"]]["score"]
        assert r["rliable"]["iqm"][0] == pytest.approx(scipy.stats.trim_mean(x, 0.25))
        assert r["rliable"]["mean"][0] == pytest.approx(np.mean(x))
        assert r["rliable"]["mean"][1] <= np.mean(x) <= r["rliable"]["mean"][2]
        assert r["rliable"]["reps"] == 200
    assert rows["theta0.sailor"]["p_improvement_vs_fixed_start"][0] == pytest.approx(np.mean(
        [(a > b) + 0.5 * (a == b) for a in samples["theta0.sailor"]["score"]
         for b in samples["theta0.fixed"]["score"]]))
    plain = {r["arm"]: r for r in summarize(runs, samples, reps=200)}
    assert plain["theta0.sailor"]["verdict"].startswith("a gain: +5 [+5, +5]")
    with pytest.raises(UserError, match="--against: 'nope' is not an arm of --arms"):
        compare.main(["--preset", "smoke", "--arms", "fixed", "sailor", "--against", "nope"])


_SCORES = st.lists(st.sampled_from([0.0, 1.0, 412.0, 944.0, 5e4]) | st.floats(0, 6e4),
                   min_size=2, max_size=9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), scores=_SCORES)
def test_the_statistics_of_finished_runs_never_raise(compare, data, scores):
    """Any finished runs, from 2 seeds, an SD of 0, equal arms and differences far larger than
    their SD included: `summarize`, `verdict` and the markdown tables give their rows."""
    from sailor_lab.comparison import markdown, summarize, verdict

    n = len(scores)
    shift = data.draw(st.sampled_from([0.0, 7.0, 1e4]) | st.floats(-5e4, 5e4))
    spread = data.draw(st.sampled_from([0.0, 1.0]) | st.floats(0, 3))
    other = [max(0.0, s + shift + spread * k) for k, s in enumerate(scores)]
    runs = compare.arm_list(TINY_BASE, ("theta0",), ("fixed", "sailor", "paper"))
    samples = {name: {"score": score, "tile_1024": [0.0] * n, "tile_2048": [0.0] * n,
                      "final_theta": [list(STARTS["theta0"].theta)] * n}
               for name, score in (("theta0.fixed", scores), ("theta0.sailor", other),
                                   ("theta0.paper", list(scores)))}
    rows = summarize(runs, samples, reps=50, against="paper")
    assert {r["arm"] for r in rows} == {"theta0.fixed", "theta0.sailor", "theta0.paper"}
    assert "theta0.sailor" in markdown(rows)
    line = verdict(report.paired_difference(other, scores))
    assert line.split(":")[0] in ("a gain", "a loss", "level", "undecided at this size")
    d = np.subtract(other, scores)
    n = seed_statistics.seeds_needed(abs(float(d.mean())), float(np.std(d, ddof=1)))
    assert n is None or n >= 2


def test_a_power_estimate_that_cannot_be_made_says_why(compare):
    """Every seed's difference the same (paired SD 0): the field table says there is no power
    estimate and why, instead of a number."""
    from sailor_lab.comparison import markdown, summarize

    runs = compare.arm_list(TINY_BASE, ("theta0",), ("fixed", "sailor"))
    samples = {name: {"score": score, "tile_1024": [0.0] * 3, "tile_2048": [0.0] * 3,
                      "final_theta": [list(STARTS["theta0"].theta)] * 3}
               for name, score in (("theta0.fixed", [100.0, 200.0, 300.0]),
                                   ("theta0.sailor", [150.0, 250.0, 350.0]))}
    text = markdown(summarize(runs, samples, reps=50))
    assert "no power estimate: the paired SD is 0" in text
    assert seed_statistics.seeds_needed(50.0, 0.0) is None


def test_the_tables_show_no_empty_column_and_no_score_below_zero(compare):
    """Two seeds far apart: the final score's t-interval is cut at 0 (a score is never
    negative), and no column is empty in every row of either table."""
    from sailor_lab.comparison import markdown, summarize

    runs = compare.arm_list(TINY_BASE, ("theta0",), ("fixed", "sailor"))
    samples = {name: {"score": score, "tile_1024": [0.0] * 2, "tile_2048": [0.0] * 2,
                      "final_theta": [list(STARTS["theta0"].theta)] * 2}
               for name, score in (("theta0.fixed", [100.0, 3000.0]),
                                   ("theta0.sailor", [200.0, 2900.0]))}
    text = markdown(summarize(runs, samples, reps=50))
    tables = [[line.split("|")[1:-1] for line in block.splitlines() if line.startswith("|")]
              for block in text.split("\n\n") if block.startswith("|")]
    assert len(tables) == 2
    for table in tables:
        body = table[2:]
        assert all(any(row[k].strip() for row in body) for k in range(len(table[0])))
    score = [h.strip() for h in tables[0][0]].index("final score [95% CI]")
    assert [row[score].strip().split(" [")[1].startswith("0,") for row in tables[0][2:]] == \
        [True, True]  # t-interval 1,550 [-16,874, +19,974] before the cut


def test_the_reference_arm_nobody_asked_for_says_why_it_runs(compare, tmp_path, capsys):
    """theta0 kept fixed runs whatever the starts and arms (the tables measure every row
    against it); where the command did not ask for it, a line says so."""
    for argv, said in ((["--starts", "ones", "--arms", "fixed", "sailor"], True),
                       (["--starts", "theta0", "--arms", "fixed", "sailor"], False)):
        with pytest.raises(UserError, match="--finished-only"):
            compare.main(["--preset", "smoke", *argv, "--finished-only",
                          "--out", str(tmp_path / "none")])
        printed = capsys.readouterr().out
        assert ("theta0.fixed runs too: the reference" in printed) is said


def test_a_variant_stopped_before_its_first_checkpoint_starts_over_keeping_its_logs(
        tmp_path, monkeypatch):
    """Running the comparison's command again is its way to continue: a variant stopped
    before its first checkpoint, with judge records in its logs, starts over (its logs and
    config moved to `stopped_<time>/`, nothing removed) instead of refusing to resume."""
    from rich.console import Console

    from sailor_jax.run import run_dir
    from sailor_lab import variants

    cfg = dataclasses.replace(TINY_BASE, ranker=dataclasses.replace(TINY_BASE.ranker,
                                                                     kind="outcome"))
    folder = tmp_path / "variants" / "theta0.sailor"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(run_dir.config_json(cfg))
    (folder / "llm.jsonl").write_text('{"verdict": 1}\n')
    (folder / "checkpoints").mkdir()
    with pytest.raises(UserError, match="no checkpoint to continue from"):
        run_dir.check_out_dir(str(folder), cfg, resume=True)  # what a resume would meet
    variants.check_variant("theta0.sailor", cfg, str(folder))  # no refusal
    calls = []
    monkeypatch.setattr(loop, "run", lambda c, f, resume=False, **_: calls.append(resume)
                        or run_dir.check_out_dir(f, c, resume))
    console = Console(record=True, width=200)
    variants.run_variant("theta0.sailor", cfg, str(folder), console)
    assert calls == [False]
    kept = [p for p in folder.iterdir() if p.name.startswith("stopped_")]
    assert len(kept) == 1 and (kept[0] / "llm.jsonl").read_text() == '{"verdict": 1}\n'
    assert (kept[0] / "config.json").exists() and not (folder / "config.json").exists()
    assert f"its logs are kept in {kept[0]}" in console.export_text()
