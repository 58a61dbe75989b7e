"""experiments/repair.py: arms, the repair table's numbers from the runs, resume."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pytest
from test_ablations import TINY
from test_experiments import _load

from sailor_jax import report
from sailor_jax.alignment import heldout
from sailor_jax.config.starts import STARTS
from sailor_jax.errors import UserError
from sailor_jax.judges import factory
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.run import loop, repair_arms, repair_table, variants
from sailor_jax.run.run_dir import config_json


@pytest.fixture(scope="module")
def repair():
    return _load("experiments/repair.py")


def test_arm_configs_change_only_the_start_and_the_reward_learning(repair):
    base = repair.PRESETS["cpu"].base
    assert base.num_seeds >= 8 and base.iterations >= 16 and base.ranker.kind == "expert"
    assert base.alignment == type(base.alignment)()  # the default update
    start = STARTS["pays_for_dying"]
    for method in repair_arms.METHODS:
        cfg = repair_arms.arm_config(start, method, base, trust_region=0.1)
        assert cfg.theta0 == start.theta and not cfg.baseline and cfg.tunable is None
        assert cfg.self_align == (method != "fixed")
        if method in repair_arms.VALUE_JUDGES:
            continue  # the issue-34 arms: below
        assert dataclasses.replace(cfg, theta0=None, self_align=True, alignment=base.alignment,
                                   ranker=base.ranker) == dataclasses.replace(base, self_align=True)
        assert cfg.ranker.kind == ("random" if method == "sailor_random_judge" else "expert")
        assert cfg.alignment.trust_region == (0.1 if method == "sailor_trust" else None)
        assert cfg.alignment.method == ("bt_mcmc" if method == "sailor_bt_mcmc" else "bo")
    args = dataclasses.replace(repair.PRESETS["cpu"], window=50, trajectories=12,
                               reference_games=4, heldout=0.25, value_step=0.4,
                               survival_floor=0.5)
    for method, (kind, verdict) in repair_arms.VALUE_JUDGES.items():
        cfg = repair_arms.arm_config(start, method, base, 0.1, args)
        assert (cfg.ranker.kind, cfg.ranker.expert_verdict) == (kind, verdict)
        assert (cfg.window, cfg.trajectories, cfg.reference_games) == (50, 12, 4)
        assert cfg.preferences.compare == repair_arms.COMPARED_AS.get(method, "auto")
        assert (cfg.alignment.method, cfg.alignment.heldout,
                cfg.alignment.mcmc_trust_region) == ("bt_mcmc", 0.25, 0.4)
        assert (cfg.alignment.beta, cfg.alignment.survival_guard, cfg.alignment.heldout_z) \
            == (5.0, True, 1.0)
        assert cfg.alignment.survival_floor == 0.5
        bo = repair_arms.arm_config(start, method, base, 0.1,
                               dataclasses.replace(args, value_update="bo"))
        assert (bo.alignment.method, bo.alignment.trust_region) == ("bo", 0.4)
        assert dataclasses.replace(
            cfg, theta0=None, self_align=True, alignment=base.alignment, ranker=base.ranker,
            window=0, trajectories=8, reference_games=0, preferences=base.preferences
        ) == dataclasses.replace(base, self_align=True)  # nothing else changes
    with pytest.raises(UserError, match="unknown arm 'nope'"):
        repair_arms.arm_config(start, "nope", base)
    args = repair.PRESETS["cpu"]
    names = [a[0] for a in repair_arms.arms(args)]
    assert names[0] == repair.REFERENCE and len(names) == 1 + 3 * 2
    assert "ones.sailor" in names and "pays_for_dying.fixed" in names
    with_theta0 = [a[0] for a in repair_arms.arms(dataclasses.replace(args, starts=("theta0",),
                                                                  methods=("fixed", "sailor")))]
    assert with_theta0 == [repair.REFERENCE, "theta0.sailor"]  # the reference is its fixed arm
    for bad, match in ((("ones", "ones"), "repeats"), (("theta0:score_gain=1",), "theta0"),
                       (("nope",), "unknown start")):
        with pytest.raises(UserError, match=match):
            repair_arms.arms(dataclasses.replace(args, starts=bad))


class _Killed(Exception):
    pass


def test_each_value_arm_has_a_control_that_differs_only_in_the_judge(repair):
    """The random-judge control of a sailor_value* arm runs the same update and compares
    `R_theta` the same way (sums or per-move means) as the arm: only the judge's order
    differs. The regret verdict's is its own control, not the value verdict's."""
    base = repair.PRESETS["cpu"].base
    start = STARTS["timid"]
    controls = {}
    for method in repair_arms.VALUE_JUDGES:
        if method in repair_table.CONTROLS or method == "sailor_value_llm":  # below: no load
            continue
        control = repair_table.random_judge_control(method)
        controls[method] = control
        arm = repair_arms.arm_config(start, method, base)
        ctrl = repair_arms.arm_config(start, control, base)
        assert ctrl.ranker.kind == "random"
        compared = [heldout.resolve_comparison(c.preferences.compare,
                                               factory.make_ranker(c.ranker).aggregate)
                    for c in (arm, ctrl)]
        assert compared[0] == compared[1]
        assert dataclasses.replace(ctrl, ranker=arm.ranker,
                                   preferences=arm.preferences) == arm
    assert controls == {"sailor_value": "sailor_value_random_judge",
                        "sailor_value_regret": "sailor_value_regret_random_judge",
                        "sailor_value_outcome": "sailor_value_random_judge"}
    assert heldout.resolve_comparison(
        "auto", factory.make_ranker(repair_arms.arm_config(
            start, "sailor_value_regret", base).ranker).aggregate) == "mean"
    assert repair_table.random_judge_control("sailor_trust") == "sailor_random_judge"
    assert repair_table.random_judge_control("sailor_value_llm") == "sailor_value_random_judge"
    assert LLMRanker.aggregate == "sum"  # the LLM's verdict: a whole-window impression
    # --value-compare sum: every value arm and its control rank R_theta by sums.
    preset = repair.PRESETS["cpu"]
    args = dataclasses.replace(preset, value_compare="sum")
    for method in repair_arms.VALUE_JUDGES:
        cfg = repair_arms.arm_config(start, method, base, args=args)
        assert cfg.preferences.compare == "sum"
        as_preset = repair_arms.arm_config(start, method, base, args=preset)
        assert dataclasses.replace(cfg, preferences=as_preset.preferences) == as_preset


def test_repair_end_to_end_numbers_and_resume(repair, tmp_path, monkeypatch):
    out = str(tmp_path / "rep")
    argv = ["--preset", "smoke", "--out", out, *TINY, "--base.ranker.kind", "outcome",
            "--starts", "pays_for_dying", "mine:score_gain=0.2,game_over=1",
            "--methods", "fixed", "sailor", "sailor_random_judge"]
    real_run = loop.run
    calls = []

    def first(cfg, folder, resume=False, progress=None, devices=None):
        calls.append(os.path.basename(folder))
        if len(calls) == 3:  # the third arm: killed before it starts
            raise _Killed
        return real_run(cfg, folder, resume=resume, progress=progress)

    monkeypatch.setattr(loop, "run", first)
    with pytest.raises(_Killed):
        repair.main(argv)
    assert calls == ["theta0.fixed", "pays_for_dying.fixed", "pays_for_dying.sailor"]
    calls.clear()
    monkeypatch.setattr(loop, "run", lambda cfg, folder, resume=False, progress=None,
                        devices=None: (calls.append(os.path.basename(folder))
                                       or real_run(cfg, folder, resume=resume, progress=progress)))
    rows = repair.main(argv)
    assert calls == ["pays_for_dying.sailor", "pays_for_dying.sailor_random_judge",
                     "mine.fixed", "mine.sailor", "mine.sailor_random_judge"]
    assert [r["arm"] for r in rows] == [
        "theta0.fixed", "pays_for_dying.fixed", "pays_for_dying.sailor",
        "pays_for_dying.sailor_random_judge", "mine.fixed", "mine.sailor",
        "mine.sailor_random_judge"]
    saved = json.load(open(os.path.join(out, "repair.json")))
    assert saved["env_steps_per_seed"] == 2 * 16 * 32
    assert saved["starts"]["mine"]["theta"] == [0.2] + [0.0] * 6 + [1.0]
    by = {r["arm"]: r for r in rows}
    scores = {a: r["per_seed"]["score"] for a, r in by.items()}
    for arm, r in by.items():  # every number from the arm's own results.json
        res = json.load(open(os.path.join(out, "variants", arm, "results.json")))
        assert scores[arm] == [e["score_mean"] for e in res["evaluation"]["per_seed"]]
        assert r["score"] == pytest.approx(report.mean_ci(scores[arm]))
        history = np.asarray(res["theta_history"])  # [T+1, S, F]
        assert history.shape == (3, 2, 8)
        np.testing.assert_allclose(history[0], [saved["starts"][r["start"]]["theta"]] * 2)
        if r["method"] == "fixed":
            assert (history == history[0]).all()
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
    md = open(os.path.join(out, "repair.md")).read()
    assert md.count("\n") == 2 + 7 and "| worst seed |" in md and "| mine.sailor | " in md
    assert os.path.getsize(os.path.join(out, "figures", "theta_mine.png")) > 1000
    lines = open(os.path.join(out, "theta_trajectories.csv")).read().splitlines()
    assert len(lines) == 1 + 7 * 2 * 3
    # A third run reads every arm back and writes the same numbers.
    calls.clear()
    assert repair.main(argv) == rows and calls == []
    # --finished-only with an arm that never ran: the table of the finished ones, nothing run.
    at = argv.index("--methods") + 1
    more = [*argv[:at], "sailor_value", *argv[at:]]
    assert repair.main([*more, "--finished-only"]) == rows and calls == []
    with pytest.raises(UserError, match="--finished-only: theta0.fixed has not finished"):
        repair.main(["--preset", "smoke", "--out", str(tmp_path / "none"), "--finished-only"])
    # A variant saved before a config field existed reads back while the field is at its
    # default; a saved value that differs is refused.
    path = os.path.join(out, "variants", "mine.fixed", "results.json")
    saved_results = json.load(open(path))
    del saved_results["config"]["alignment"]["survival_guard"]
    json.dump(saved_results, open(path, "w"))
    calls.clear()
    assert repair.main(argv) == rows and calls == []
    saved_results["config"]["alignment"]["heldout_z"] = 2.0
    json.dump(saved_results, open(path, "w"))
    with pytest.raises(UserError, match="mine.fixed' run with a different configuration"):
        repair.main(argv)
    saved_results["config"]["alignment"]["heldout_z"] = 1.0
    json.dump(saved_results, open(path, "w"))
    # --only: just the named arms (side by side in several processes), no table written.
    os.remove(os.path.join(out, "repair.md"))
    assert repair.main([*argv, "--only", "mine.fixed"]) == [] and calls == []
    assert not os.path.exists(os.path.join(out, "repair.md"))
    with pytest.raises(UserError, match="--only: mine.sailor_trust is not an arm"):
        repair.main([*argv, "--only", "mine.sailor_trust"])

    class Ran(Exception):
        pass

    def record(cfg, folder, **_):
        calls.append(os.path.basename(folder))
        raise Ran
    monkeypatch.setattr(loop, "run", record)
    with pytest.raises(Ran):  # a fresh --out: the named arm runs first, not the reference
        repair.main([str(tmp_path / "fresh") if a == out else a for a in argv]
                    + ["--only", "pays_for_dying.sailor"])
    assert calls == ["pays_for_dying.sailor"]


def test_a_kept_fixed_arm_is_the_same_cut_in_other_segments_and_is_read_back(
        repair, tmp_path, monkeypatch):
    def argv(out: str, iterations: int, updates: int) -> list[str]:
        return ["--preset", "smoke", "--out", str(tmp_path / out), *TINY, "--starts", "theta0",
                "--methods", "fixed", "--base.iterations", str(iterations),
                "--base.ppo.updates-per-segment", str(updates)]

    def scores(rows: list[dict]) -> list[float]:
        return rows[0]["per_seed"]["score"]

    two_by_two = repair.main(argv("a", 2, 2))
    assert scores(repair.main(argv("b", 4, 1))) == scores(two_by_two)  # same to the last digit
    calls = []
    monkeypatch.setattr(loop, "run", lambda *a, **k: calls.append(a) or pytest.fail("ran"))
    assert scores(repair.main(argv("a", 4, 1))) == scores(two_by_two) and calls == []
    with pytest.raises(UserError, match="theta0.fixed' run with a different configuration"):
        repair.main(argv("a", 3, 1))  # another total of PPO updates
    def config(iterations: int, updates: int, method: str):
        args = repair.parse(argv("c", iterations, updates) + ["--methods", method])[1]
        return dict((a[0], a[3]) for a in repair_arms.arms(args))[f"theta0.{method}"]

    saved = json.loads(config_json(config(2, 2, "sailor_value")))  # a SAILOR arm: refused
    assert variants._differences(saved, config(4, 1, "sailor_value")) == [
        "iterations: saved 2, given 4", "ppo.updates_per_segment: saved 2, given 1"]
    saved = json.loads(config_json(config(2, 2, "fixed")))
    assert variants._differences(saved, config(4, 1, "fixed")) == []


def test_the_llm_arm_is_the_expert_arm_judged_by_the_llm_the_base_names(repair):
    """`sailor_value_llm` with `--value-compare sum` is the recommended SAILOR judged by the LLM
    of `--base.ranker.llm`: the expert's arm with only the judge's kind changed."""
    _, args = repair.parse(["--preset", "cpu", "--value-compare", "sum", "--warmup-updates", "8",
                            "--survival-floor", "0.5", "--base.ranker.llm.view", "summary",
                            "--base.ranker.llm.mode", "pointwise", "--starts", "pays_for_dying",
                            "--methods", "sailor_value_regret", "sailor_value_llm"])
    by_name = {name: cfg for name, _, _, cfg in repair_arms.arms(args)}
    llm, expert = by_name["pays_for_dying.sailor_value_llm"], by_name[
        "pays_for_dying.sailor_value_regret"]
    assert llm.ranker.kind == "llm" and llm.ranker.llm.view == "summary"
    assert llm.ranker.llm.mode == "pointwise"
    assert dataclasses.replace(llm, ranker=expert.ranker) == expert
