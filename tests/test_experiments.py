"""Smoke tests: each experiments/ and benchmarks/ CLI runs end-to-end with tiny budgets."""

from __future__ import annotations

import json
import os
import re

import pytest
from support import TINY_PPO, TINY_TRAIN_PPO, load_script

from sailor_jax.errors import UserError
from sailor_jax.run.results import OUTCOMES, Outcome, SeedUpdate
from sailor_lab.starts import STARTS


def test_sailor_cli_presets_parse_and_override():
    sailor = load_script("experiments/sailor.py")
    for name in sailor.PRESETS:
        preset, args = sailor.parse(["--preset", name, "--out", "x"])
        assert preset == name and args.sailor == sailor.PRESETS[name] and args.out == "x"
    _, args = sailor.parse(["--preset", "cpu", "--sailor.iterations", "3",
                            "--sailor.ranker.llm.model", "some/model"])
    assert args.sailor.iterations == 3 and args.sailor.ranker.llm.model == "some/model"
    assert args.sailor.num_seeds == sailor.PRESETS["cpu"].num_seeds
    with pytest.raises(SystemExit):
        sailor.parse(["--preset", "nope"])


def test_sailor_presets_run_the_guarded_update_measured_in_the_repair_table():
    """Every preset runs `SailorConfig()`'s recommended update over its budget and judge: the
    settings of compare.py's sailor arm except the judge (pointwise LLM; the `smoke` preset's
    first run, from `pays_for_dying`, the expert)."""
    sailor = load_script("experiments/sailor.py")
    for name, cfg in sailor.PRESETS.items():
        a = cfg.alignment
        assert (a.method, a.heldout, a.beta, a.mcmc_trust_region, a.survival_guard) \
            == ("bt_mcmc", 0.5, 5.0, 0.3, True), name
        assert cfg.preferences.compare == "sum" and cfg.window == 100, name  # "auto" before
        # 2026-11-28, the same comparison under an LLM judge
        assert 0 < cfg.reference_games == cfg.trajectories // 2, name
        assert cfg.ranker.kind == ("expert" if name == "smoke" else "llm"), name
        assert cfg.ranker.llm.mode == "pointwise", name
    assert sailor.PRESETS["smoke"].start == STARTS["pays_for_dying"].theta
    cpu = sailor.PRESETS["cpu"]
    steps = cpu.iterations * cpu.ppo.updates_per_segment * cpu.ppo.num_envs * cpu.ppo.num_steps
    assert (cpu.iterations, cpu.trajectories, steps) == (32, 16, 1_048_576)


def test_theta_history_shows_what_fits_first_and_last_always():
    sailor = load_script("experiments/sailor.py")
    assert sailor.shown_iterations(3, 17) == [0, 1, 2]
    assert sailor.shown_iterations(33, 17) == list(range(0, 33, 2))
    for columns in range(2, 70):
        for fit in range(2, 20):
            shown = sailor.shown_iterations(columns, fit)
            assert shown[0] == 0 and shown[-1] == columns - 1, (columns, fit)
            assert len(shown) == min(columns, fit) and shown == sorted(set(shown))


def test_sailor_cli_runs_end_to_end(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps table cells at a narrow width
    sailor = load_script("experiments/sailor.py")
    out = str(tmp_path / "run")
    sailor.main(["--preset", "smoke", "--out", out, "--sailor.iterations", "1",
                 "--sailor.warmup-updates", "2",
                 "--sailor.ranker.kind", "outcome", "--sailor.trajectories", "4",
                 "--sailor.reference-games", "2", "--sailor.window", "30",
                 "--sailor.max-len", "60", "--sailor.eval.episodes", "4",
                 "--sailor.eval.max-len", "300", "--sailor.no-tensorboard", *TINY_PPO])
    printed = capsys.readouterr().out
    assert "theta history" in printed and "pays_for_dying kept fixed" in printed
    assert "theta0 kept fixed" not in printed  # the smoke preset's start is pays_for_dying
    assert "columns: itN is the theta segment N trained on (it-2 is the start, the warm-up's 2 " \
        "updates make it-1..it0)" in " ".join(printed.split())
    said = re.search(r"SAILOR against pays_for_dying kept fixed, paired by seed: (.*)", printed)
    assert said and said.group(1).split(":")[0] in (
        "a gain", "a loss", "level", "undecided at this size", "the measures disagree"), printed
    assert "start=pays_for_dying " in printed.splitlines()[0]
    # to a pipe, each warm-up update is a line before the first iteration's
    lines = printed.splitlines()
    warm = [k for k, line in enumerate(lines) if line.startswith("SAILOR  warm-up ")]
    first = next(k for k, line in enumerate(lines) if ": 1/1 iterations" in line)
    assert [lines[k].split(":")[0].split(", ")[0] for k in warm] == [
        "SAILOR  warm-up 1/2 updates", "SAILOR  warm-up 2/2 updates"] and warm[-1] < first
    header = next(line for line in printed.splitlines() if "feature" in line).split()
    # columns numbered as theta_trajectories.csv: it-2 is the start, it0 the warm-up's result
    assert [c for c in header if c.startswith("it")] == ["it-2", "it-1", "it0", "it1"]
    results = json.load(open(os.path.join(out, "results.json")))
    assert results["ranker"]["kind"] == "outcome"
    assert len(results["theta_history"]) == 1 + 2 + 1  # the start, 2 warm-up updates, 1 iteration
    assert len(results["warmup"]) == 2
    # what each update did to theta, per column and in all, in the words the line explains
    said = [sailor.update_outcome([SeedUpdate.from_json(u)])
            for r in results["warmup"] + results["iterations"] for u in r["seeds"]]
    assert len(said) == 3 and set(said) <= set(OUTCOMES)
    row = next(line for line in printed.splitlines() if line.lstrip("│ ").startswith("update"))
    assert [w for w in said if w in row] == said
    assert any(line.startswith("theta updates: ") for line in printed.splitlines())
    moved = sum(w == "moved" for w in said)
    history = results["theta_history"]
    changed = sum(h != n for h, n in zip(history, history[1:], strict=False))
    assert moved == changed  # "moved" exactly where theta changed


def test_update_outcome_reads_the_recorded_outcome_not_the_message():
    """The summary's `update` row says `SeedUpdate.outcome` (set where the update was decided:
    tests/test_heldout.py and test_theta_update.py check each value on the real paths); the
    message's wording does not enter."""
    sailor = load_script("experiments/sailor.py")
    said = [sailor.update_outcome([SeedUpdate(outcome=o, message="held-out rejected: ...")])
            for o in OUTCOMES]
    assert said == list(OUTCOMES)
    assert sailor.update_outcome([SeedUpdate(message="survival guard rejected")]) == "-"
    seeds = [SeedUpdate(outcome=o) for o in ("moved", "guard", "moved", None)]
    assert sailor.update_outcome(seeds) == "2/4 moved"


def test_train_ppo_cli_runs_and_resumes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    train_ppo = load_script("experiments/train_ppo.py")
    out = str(tmp_path / "ppo")
    argv = ["--out", out, "--train.total-timesteps", "200", "--train.num-seeds", "2",
            *TINY_TRAIN_PPO, "--train.eval.episodes", "4", "--train.eval.max-len", "300",
            "--train.no-tensorboard"]
    results = train_ppo.main(train_ppo.parse(argv))
    assert results["env_steps_per_seed"] == 256
    assert len(results["evaluation"]["per_seed"]) == 2
    assert results["random_policy_evaluation"]["episodes"] == 8
    printed = capsys.readouterr().out
    assert "uniform random legal" in printed
    assert ("training 256 env steps per seed x 2 seeds: 2 segments of 128 "
            "(--train.total-timesteps 200 rounded up to whole segments)") in printed
    with pytest.raises(ValueError, match="already holds a run"):
        train_ppo.main(train_ppo.parse(argv))
    results_json = open(os.path.join(out, "results.json")).read()
    again = train_ppo.main(train_ppo.parse([*argv, "--resume"]))
    assert again == json.loads(results_json)  # finished: read back, nothing trained again
    assert open(os.path.join(out, "results.json")).read() == results_json
    metrics = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    assert any("charts/episodic_return" in m for m in metrics)


def test_throughput_benchmark_prints_json(capsys):
    bench = load_script("benchmarks/throughput.py")
    bench.main(bench.parse_args(bench.Args, [
        "--json", "--only", "env_random", "env_features", "--num-envs", "32",
        "--env-steps", "4", "--repeats", "1"]))
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["name"] for r in rows] == ["env_random", "env_features"]
    for r in rows:
        assert r["sps"] > 0 and r["compile_s"] > 0 and r["jax"] and r["pgx"] and r["device"]


def test_throughput_ppo_rows_report_devices_and_memory(capsys):
    """The rows of the default recipe's segment (the (256, 256) trunk) at 8 envs per seed; the
    2-seed row's program is the one the GPU check's tiny ppo part times."""
    bench = load_script("benchmarks/throughput.py")
    bench.main(bench.parse_args(bench.Args, [
        "--json", "--only", "ppo_train_seeds", "ppo_train_envs", "--num-envs", "8",
        "--ppo-updates", "1", "--num-seeds", "2", "--repeats", "1", "--devices", "1"]))
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["name"], r["num_seeds"]) for r in rows] == [("ppo_train_seeds", 2),
                                                           ("ppo_train_envs", 1)]
    for r in rows:
        assert r["devices"] == 1 and r["device_kind"] and r["sps"] > 0
        assert r["temp_gib"] > 0 and r["state_gib"] > 0


def test_sailor_cli_checks_out_before_printing_anything(tmp_path, capsys):
    """`--out` naming a file: one error line, and no run header before it."""
    sailor = load_script("experiments/sailor.py")
    a_file = tmp_path / "results.txt"
    a_file.write_text("not a folder")
    with pytest.raises(UserError, match="is a file, not a folder"):
        sailor.main(["--preset", "smoke", "--out", str(a_file / "run")])
    assert capsys.readouterr().out == ""


def test_an_outcome_is_an_enum_that_results_json_stores_as_its_word():
    """`SeedUpdate.outcome` is an `Outcome`; `results.json` holds its word, and reading it
    back gives the enum again (a word no outcome has is refused)."""
    for outcome in Outcome:
        update = SeedUpdate(outcome=outcome)
        stored = json.loads(json.dumps(update.to_json()))
        assert stored["outcome"] == outcome.value
        assert SeedUpdate.from_json(stored).outcome is outcome
    with pytest.raises(ValueError):
        SeedUpdate.from_json({"outcome": "accepted"})
