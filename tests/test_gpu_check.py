"""`benchmarks/gpu_check.py --tiny`: the prepared GPU check's parts run at toy sizes on the CPU
and write their rows, JSON and the summary, so the script is known to work before device time
is spent; a part past its deadline is stopped and recorded as such; bad flags are one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import ROOT, TINY_PPO, load_script

sys.path.insert(0, os.path.join(ROOT, "benchmarks", "gpu"))

SCRIPT = os.path.join(ROOT, "benchmarks", "gpu_check.py")


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *argv], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": ROOT})


def _part_rows(work, name: str) -> list[dict]:
    """Part `name` at toy sizes run in this process (`gpu_parts.run_part`): its rows."""
    import gpu_parts

    gpu_parts.run_part(name, True, str(work), load_script("benchmarks/gpu_check.py").TINY_DEADLINE)
    with open(os.path.join(work, f"{name}.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _part(out, name: str) -> dict:
    with open(os.path.join(out, f"{name}.json"), encoding="utf-8") as f:
        return json.load(f)


TESTED_PARTS = ("env", "ppo", "reference", "judge", "main_llm")
"""The parts run here. The other two cost a minute each and run code tested elsewhere: `census`
is `census.run` at toy sizes with a profile (tests/test_census.py), `main_expert` is
`main_llm`'s main job with the expert judge. The decisive parts run in their own test:
`decide_llm` there, and `decide_expert` is the same comparison with the expert judge."""


def test_tiny_check_runs_a_part_in_its_own_process_and_writes_the_summary(tmp_path):
    """The script end to end: a part in its own process, its JSON, the summary files."""
    out = tmp_path / "out"
    done = _run("--tiny", "--parts", "env", "--out", str(out), "--work", str(tmp_path / "work"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(os.listdir(out)) == ["env.json", "summary.json", "summary.md"]
    part = _part(out, "env")
    assert part["status"] == "done" and part["tiny"] and part["deadline_s"] > 0, part["log_tail"]
    assert part["rows"] and all(r["part"] == "env" and r["device_kind"] and r["jax"]
                                for r in part["rows"])
    summary = json.loads((out / "summary.json").read_text())
    assert [p["part"] for p in summary["parts"]] == ["env"]
    assert summary["tables"]["env_features"][0]["env_steps_per_s"] > 0
    assert "| env | done |" in (out / "summary.md").read_text()


def _ppo_table(tables, rows):
    ppo = [r for r in tables["ppo"] if r["part"] == "ppo"]
    assert ppo and all(r["env_steps_per_s"] > 0 and r["tflops"] > 0 for r in ppo)
    flops = [r for r in rows if r["benchmark"] == "flops"]
    assert flops and all(r["flops_per_env_step"] > 0 for r in flops)


def _reference_table(tables, rows):
    assert {r["recipe"] for r in tables["ppo"] if r["part"] == "reference"} == {"v0"}


def _judge_table(tables, rows):
    judge = tables["judge"]
    assert [r["batch_size"] for r in judge] == [2, 4]
    assert all(r["windows_per_s"] > 0 and r["prompt_tokens_per_window"] > 10 for r in judge)


def _main_table(tables, rows):
    main = {r["judge"]: r for r in tables["main_job"]}
    assert set(main) == {"main_llm"}
    for row in main.values():
        assert row["finished"] and row["iterations"] == 1 and 0 <= row["host_share"] <= 1
        assert row["train"] > 0 and row["rank"] > 0


TABLE_CHECKS = {"ppo": ("ppo", _ppo_table), "reference": ("ppo", _reference_table),
                "judge": ("judge", _judge_table), "main_llm": ("main_job", _main_table)}
"""The summary table each part's rows fill, and what they put there (`env`'s: the script's
test above)."""


def test_the_tiny_main_job_trains_the_cli_tests_ppo():
    """`gpu_parts.TINY`'s main job asks for every flag of `TINY_PPO` with its value (a copy:
    benchmarks do not import the tests), so its segment program stays the CLI tests'."""
    import gpu_parts

    args = gpu_parts.TINY.main_args
    asked = dict(zip(args[::2], args[1::2], strict=True))
    assert {flag: asked.get(flag) for flag in TINY_PPO[::2]} == dict(
        zip(TINY_PPO[::2], TINY_PPO[1::2], strict=True))


def test_every_tested_part_is_a_part_of_the_check():
    assert set(TESTED_PARTS) < set(load_script("benchmarks/gpu_check.py").PARTS)
    assert set(TABLE_CHECKS) | {"env"} == set(TESTED_PARTS)


@pytest.mark.slow
@pytest.mark.parametrize("names", [("ppo",), ("reference",), ("judge", "main_llm")],
                         ids=lambda names: "+".join(names))
def test_tiny_parts_write_the_rows_of_their_summary_tables(tmp_path, names):
    """Tested parts at toy sizes, in the check's order in one work folder (`main_llm` judges
    with the model `judge` saved there), each run here (`gpu_parts.run_part`; the process each
    part gets is the script's test above): its rows, its summary table and markdown."""
    check = load_script("benchmarks/gpu_check.py")
    assert list(names) == [p for p in check.PARTS if p in names]
    for name in names:
        rows = _part_rows(tmp_path, name)
        assert rows
        for row in rows:
            assert row["part"] == name and row["device_kind"] and row["jax"]
        results = [{"part": name, "status": "done", "deadline_s": check.TINY_DEADLINE,
                    "wall_s": 1.0, "rows": rows}]
        table, check_table = TABLE_CHECKS[name]
        tables = check.summary_tables(results)
        assert [t for t, t_rows in tables.items() if t_rows] == [table]
        check_table(tables, rows)
        summary = check.summary_markdown(results)
        assert f"| {name} | done |" in summary and f"## {table}" in summary


@pytest.mark.slow
def test_tiny_decisive_part_pools_its_blocks(tmp_path):
    """decide_llm at toy sizes: 2 blocks of 1 paired seed (root seeds 200, 201), each block's
    scores per arm from its own results.json, then the pooled difference with its power (the
    part run here; `experiments/compare.py` in its own process, as on the device)."""
    work = tmp_path / "work"
    work.mkdir()
    rows = _part_rows(work, "decide_llm")
    *blocks, pooled = rows
    assert [b["root_seed"] for b in blocks] == [200, 201]
    scores = {"theta0.fixed": [], "theta0.sailor": []}
    for b in blocks:
        for arm in scores:
            res = json.loads((work / "decide_llm" / f"seed{b['root_seed']}" / "variants" / arm
                              / "results.json").read_text())
            assert b["scores"][arm] == [e["score_mean"] for e in res["evaluation"]["per_seed"]]
            if arm == "theta0.sailor":
                assert res["config"]["ranker"]["kind"] == "llm"
            scores[arm] += b["scores"][arm]
    d = [a - b for a, b in zip(scores["theta0.sailor"], scores["theta0.fixed"], strict=True)]
    assert pooled["benchmark"] == "decide_pooled" and pooled["seeds"] == 2
    assert pooled["mean"] == pytest.approx(sum(d) / 2) and pooled["returncode"] == 0
    assert pooled["detectable_80"] >= 0 and "--blocks 2" in pooled["command"]
    assert 0 <= pooled["p_improvement"][0] <= 1 and set(pooled["rliable"]) == {"fixed", "sailor"}
    compared = json.loads((work / "decide_llm" / "compare.json").read_text())["rows"]
    assert all("rliable" not in r for r in compared)  # 2 seeds: no bootstrap in the tables
    table = load_script("benchmarks/gpu_check.py").summary_tables([{"rows": rows}])["decide"]
    assert [(r["judge"], r["seeds"]) for r in table] == [("llm", 2)]


def test_the_llm_decisive_part_without_the_model_says_so(tmp_path, monkeypatch):
    import gpu_parts

    rows = []
    monkeypatch.setenv(gpu_parts.DECIDE_MODEL_ENV, str(tmp_path / "absent"))
    gpu_parts.part_decide(gpu_parts.FULL, rows.append, str(tmp_path), "llm", 1e12)
    assert len(rows) == 1 and rows[0]["skipped"].startswith(f"no judge model at {tmp_path}")
    assert gpu_parts.DECIDE_MODEL_ENV in rows[0]["skipped"]


def test_a_part_past_its_deadline_is_stopped_and_recorded(tmp_path):
    done = _run("--tiny", "--parts", "ppo", "--deadlines", "1", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    part = _part(tmp_path, "ppo")
    assert part["status"] == "stopped at its deadline" and part["rows"] == []
    assert part["wall_s"] < 30


@pytest.mark.parametrize("argv, flag", [(["--parts", "warp"], "--parts"),
                                        (["--parts", "env", "judge", "--deadlines", "5"],
                                         "--deadlines"),
                                        (["--parts", "env", "--deadlines", "0"], "--deadlines")])
def test_bad_flags_are_one_error_line(tmp_path, argv, flag):
    done = _run(*argv, "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}"), done.stderr
    assert not (tmp_path / "out").exists()
