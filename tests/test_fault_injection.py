"""Fault injection: kill a SAILOR run at each phase boundary, or
damage its newest checkpoint; `--resume` must give the uninterrupted run's results and logs.

A kill is a `KeyboardInterrupt` raised from a monkeypatched function at the boundary, in the
second of two iterations (the first has been checkpointed): after the segment (before its
games are collected), after ranking (the judge has logged its prompts, before the
preferences and the update), after the update (theta updated and logged, before the
checkpoint), and mid-checkpoint (inside orbax, after its temporary folder exists). The
judge is the tiny offline LLM (`tests/llm_fixtures.py`) so that `llm.jsonl` is written.
Logs are compared record by record with the timing fields removed (`support.untimed`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import json
import logging
import os
import shutil

import numpy as np
import orbax.checkpoint as ocp
import pytest
from support import (
    TINY,
    assert_interrupted,
    assert_same_run,
    damage,
    files_under,
    kill_when,
    run_logs,
)

from sailor_jax import errors
from sailor_jax.config import PAPER, EvalConfig, LLMRankerConfig, RankerConfig
from sailor_jax.errors import UserError
from sailor_jax.run import loop, run_dir


@pytest.fixture(scope="module")
def cfg(tiny_llm_dir):
    """Two iterations, two seeds, the tiny LLM judging 2 pairs per seed (8 prompts each)."""
    llm = LLMRankerConfig(model=tiny_llm_dir, mode="pairwise", batch_size=8,
                          max_prompt_tokens=768, max_pairs_per_group=2, device="cpu")
    return dataclasses.replace(
        TINY, baseline=False, max_len=20, ranker=RankerConfig(kind="llm", llm=llm),
        alignment=dataclasses.replace(
            PAPER.alignment, method="bt_mcmc", mcmc_samples=200, mcmc_burn_in=50, update_workers=1),
        eval=EvalConfig(episodes=2, max_len=50))


@pytest.fixture(scope="module")
def reference(cfg, tmp_path_factory):
    """The uninterrupted run: its folder and results."""
    out = str(tmp_path_factory.mktemp("reference") / "run")
    results = loop.run(cfg, out)
    llm = run_logs(out)["llm.jsonl"]
    assert [sum(r["iteration"] == t for r in llm) for t in (0, 1)] == [10, 10]  # 8 + 2 each
    return out, results


def _kill_mid_checkpoint(monkeypatch, step: int) -> None:
    """Kill orbax's save of `step` after its temporary folder exists (the meta item's save)."""
    original = ocp.handlers.JsonCheckpointHandler.async_save

    async def killer(self, directory, *args, **kwargs):
        if f"{os.sep}{step}.orbax-checkpoint-tmp" in str(directory):
            raise KeyboardInterrupt(f"simulated kill while saving checkpoint {step}")
        return await original(self, directory, *args, **kwargs)

    monkeypatch.setattr(ocp.handlers.JsonCheckpointHandler, "async_save", killer)


KILLS = {
    "after_segment": lambda mp: kill_when(mp, "collect_batch", 2, 1),  # (ctx, runner, t)
    "after_ranking": lambda mp: kill_when(mp, "align_step", 5, 1),  # (..., cfg, t, ...)
    "after_update": lambda mp: kill_when(mp, "record_iteration", 2, 1, after=True),
    "mid_checkpoint": lambda mp: _kill_mid_checkpoint(mp, 2),
}


@pytest.mark.parametrize("kill", list(KILLS))
def test_kill_at_each_phase_boundary_then_resume_equals_uninterrupted(
        kill, cfg, reference, tmp_path, monkeypatch):
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        KILLS[kill](mp)
        assert_interrupted(lambda: loop.run(cfg, out), out)
    steps = sorted(os.listdir(os.path.join(out, "checkpoints")))
    assert steps[0] == "1" and "2" not in steps  # iteration 1 was never checkpointed
    assert_same_run(out, loop.run(cfg, out, resume=True), reference)


def test_pipelined_kill_with_a_judgement_in_flight_then_resume_equals_uninterrupted(
        cfg, tmp_path, monkeypatch):
    """Killed while saving checkpoint 2, with judge(1) running in the worker (it finishes and
    logs before the run returns); checkpoint 1 has judge(0) in flight: the resume drops every
    llm.jsonl record and judges iteration 0 again (`PipelinedHooks.after_restore`)."""
    piped = dataclasses.replace(cfg, pipeline=True)
    reference = str(tmp_path / "reference"), loop.run(piped, str(tmp_path / "reference"))
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        _kill_mid_checkpoint(mp, 2)
        assert_interrupted(lambda: loop.run(piped, out), out)
    with open(os.path.join(out, "llm.jsonl")) as f:
        assert {json.loads(line)["iteration"] for line in f} == {0, 1}
    assert_same_run(out, loop.run(piped, out, resume=True), reference)


def test_resume_without_a_checkpoint_keeps_the_judge_records(cfg, reference, tmp_path,
                                                             monkeypatch):
    """Killed in the first segment after judging, or `checkpoints/` deleted after
    a judged iteration: `--resume` is one line naming the logs, and nothing is removed."""
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        kill_when(mp, "align_step", 5, 0)
        with pytest.raises(errors.Interrupted, match="interrupted before the first checkpoint"):
            loop.run(cfg, out)
    assert os.path.getsize(os.path.join(out, "llm.jsonl")) > 0  # iteration 0 was judged
    deleted = str(tmp_path / "deleted")
    _unfinished_copy(reference[0], deleted)
    shutil.rmtree(os.path.join(deleted, "checkpoints"))
    for folder, logs in ((out, "llm.jsonl: 10 records"),
                         (deleted, "metrics.jsonl: 6 records, llm.jsonl: 20 records")):
        before = files_under(folder)
        for resume in (True, False):
            line = _error_line(lambda f=folder, r=resume: loop.run(cfg, f, resume=r))
            assert logs in line if resume else "llm.jsonl" in line, line
            assert "no checkpoint" in line, line
        assert files_under(folder) == before


def _unfinished_copy(source: str, out: str) -> None:
    """Copy the finished run `source` to `out` as if killed before writing results.json."""
    shutil.copytree(source, out)
    os.remove(os.path.join(out, "results.json"))


def _error_line(run) -> str:
    """The one `error:` line `errors.report_user_errors` prints for `run()` (exit 2)."""
    stderr = io.StringIO()
    with pytest.raises(SystemExit) as exit_, contextlib.redirect_stderr(stderr):
        errors.report_user_errors(lambda argv: run(), [])
    text = stderr.getvalue()
    assert exit_.value.code == 2 and text.startswith("error: ") and text.count("\n") == 1, text
    return text


@pytest.mark.parametrize("how", ["truncated_meta", "flipped_state_bytes"])
def test_damaged_newest_checkpoint_falls_back_to_the_older_one(how, cfg, reference, tmp_path,
                                                               caplog):
    out = str(tmp_path / "run")
    _unfinished_copy(reference[0], out)
    damage(os.path.join(out, "checkpoints", "2"), how)
    with caplog.at_level(logging.WARNING, logger="sailor_jax.run.runner"):
        resumed = loop.run(cfg, out, resume=True)
    warnings = [r.getMessage() for r in caplog.records if r.name == "sailor_jax.run.runner"]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert "step 2: " in warnings[0] and "continuing from checkpoint step 1" in warnings[0]
    assert "2.unusable" in os.listdir(os.path.join(out, "checkpoints"))
    assert_same_run(out, resumed, reference)


def test_no_checkpoint_restores_is_one_line_naming_the_folder(cfg, reference, tmp_path):
    out = str(tmp_path / "run")
    _unfinished_copy(reference[0], out)
    damage(os.path.join(out, "checkpoints", "2"), "truncated_meta")
    damage(os.path.join(out, "checkpoints", "1"), "flipped_state_bytes")
    with pytest.raises(UserError) as error:
        loop.run(cfg, out, resume=True)
    message = str(error.value)
    assert "\n" not in message and os.path.join(out, "checkpoints") in message
    assert "step 2: " in message and "step 1: " in message
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["1", "2"]  # nothing moved


def test_parallel_updates_killed_and_resumed_equal_an_uninterrupted_serial_run(tmp_path,
                                                                               monkeypatch):
    """BO updates of 3 seeds in 2 worker processes, killed after iteration 1's
    ranking and resumed, give the theta history and evaluation of a serial uninterrupted run."""
    base = dataclasses.replace(TINY, num_seeds=3, baseline=False)
    serial = dataclasses.replace(base, alignment=dataclasses.replace(
        base.alignment, update_workers=1))
    parallel = dataclasses.replace(base, alignment=dataclasses.replace(
        base.alignment, update_workers=2))
    reference = loop.run(serial, str(tmp_path / "serial"))
    assert any(u.accepted for r in reference.iterations for u in r.seeds)  # updates happened
    out = str(tmp_path / "parallel")
    with monkeypatch.context() as mp:
        kill_when(mp, "align_step", 5, 1)
        assert_interrupted(lambda: loop.run(parallel, out), out)
    resumed = loop.run(parallel, out, resume=True)
    np.testing.assert_array_equal(np.asarray(resumed.theta_history),
                                  np.asarray(reference.theta_history))
    assert resumed.preferences == reference.preferences
    assert resumed.evaluation == reference.evaluation


def _disk_full(monkeypatch, step: int) -> None:
    """orbax's save of `step` fails as on a full disk: `OSError(ENOSPC)` inside orbax, raised
    before its items' writes start. (Raised in one item's handler, the other item's
    TensorStore writes would go on in their threads after the save failed, and the in-process
    resume's cleanup of the step's temporary folder could race them: "Directory not empty". A
    run that fails ends its process, and its writes with it, before the user resumes.)"""
    original = ocp.handlers.CompositeCheckpointHandler.async_save

    async def full(self, directory, *args, **kwargs):
        if str(directory).endswith(f"{os.sep}{step}.orbax-checkpoint-tmp"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC),
                          os.path.join(str(directory), "state"))
        return await original(self, directory, *args, **kwargs)

    monkeypatch.setattr(ocp.handlers.CompositeCheckpointHandler, "async_save", full)


def test_disk_full_while_checkpointing_is_one_line_and_resume_is_exact(
        cfg, reference, tmp_path, monkeypatch):
    """A full disk while saving checkpoint 2 names the path and the free space;
    checkpoint 1 stays and a resume (on a disk with room) equals the uninterrupted run."""
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        _disk_full(mp, 2)
        line = _error_line(lambda: loop.run(cfg, out))
    assert "no space left on the device" in line and " MiB free" in line, line
    assert os.path.join(out, "checkpoints") in line and "segment 1" in line, line
    assert "--resume" in line
    assert "1" in os.listdir(os.path.join(out, "checkpoints"))
    assert_same_run(out, loop.run(cfg, out, resume=True), reference)


def _follow_restart_advice(line: str, out: str, cfg, reference) -> None:
    """Do what a stop before the first checkpoint advised (`run_dir.restart_advice`: the run
    judged, so its llm.jsonl is kept): move llm.jsonl away, run the same command again
    without --resume in the same folder; it finishes as the uninterrupted run."""
    assert ("run the same command again with another --out, or move llm.jsonl out of "
            f"{out} first (nothing was saved to continue from)") in line, line
    shutil.move(os.path.join(out, "llm.jsonl"), os.path.join(out, "..", "kept_llm.jsonl"))
    assert_same_run(out, loop.run(cfg, out), reference)


def test_disk_full_before_the_first_checkpoint_says_to_start_over_and_that_works(
        cfg, reference, tmp_path, monkeypatch):
    """A full disk while saving checkpoint 1: the line says the run ended before its first
    checkpoint and how to start over (not to --resume), and doing so finishes the run."""
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        _disk_full(mp, 1)
        line = _error_line(lambda: loop.run(cfg, out))
    assert "ended before its first checkpoint" in line and "--resume:" not in line, line
    _follow_restart_advice(line, out, cfg, reference)


def test_a_stop_before_the_first_checkpoint_says_how_to_start_over_and_that_works(
        cfg, reference, tmp_path, monkeypatch):
    """Ctrl-C before the first checkpoint: nothing to continue from, so the line says how to
    start over (not to --resume), and doing so finishes the run; a folder with no judge
    records is simply run again."""
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        kill_when(mp, "align_step", 5, 0)
        with pytest.raises(errors.Interrupted, match="^interrupted before the first "
                                                     "checkpoint; ") as e:
            loop.run(cfg, out)
    _follow_restart_advice(str(e.value), out, cfg, reference)
    unjudged = tmp_path / "unjudged"
    unjudged.mkdir()
    (unjudged / "metrics.jsonl").write_text("{}\n")
    assert run_dir.restart_advice(str(unjudged)) == (
        "run the same command again without --resume: it starts over there")


def test_orbax_logs_of_a_full_disk_are_not_printed(caplog):
    """orbax's writer threads log each failed write with its traceback (absl's logger); while
    a run owns its folder those of a full disk are dropped (the run says it once), others
    pass."""
    from sailor_jax.run import run_guard

    absl = logging.getLogger("absl")
    with caplog.at_level(logging.ERROR, logger="absl"), run_guard.quiet_full_disk():
        absl.error("RESOURCE_EXHAUSTED: Failed to write 14375 bytes: No space left on device")
        absl.error("something else went wrong")
    said = [r.getMessage() for r in caplog.records]
    assert said == ["something else went wrong"]


def test_log_write_refused_in_the_folder_is_one_line(cfg, tmp_path, monkeypatch):
    """The folder became unwritable: the judge's next `llm.jsonl` record is refused."""
    from sailor_jax import logging as sailor_logging

    out = str(tmp_path / "run")
    original = sailor_logging.JsonlSink.write

    def refuse(self, record):
        if (self.path or "").endswith("llm.jsonl") and self.context.get("iteration") == 1:
            raise PermissionError(errno.EACCES, "Permission denied", self.path)
        return original(self, record)

    monkeypatch.setattr(sailor_logging.JsonlSink, "write", refuse)
    line = _error_line(lambda: loop.run(cfg, out))
    assert f"cannot write {os.path.join(out, 'llm.jsonl')}: permission denied" in line, line
    assert "checkpoint of segment 1" in line


def test_a_cut_log_line_is_reported_when_resume_drops_it(cfg, reference, tmp_path, caplog):
    out = str(tmp_path / "run")
    _unfinished_copy(reference[0], out)
    path = os.path.join(out, "metrics.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines[:-1] + [lines[-1][: len(lines[-1]) // 2]])  # killed mid-write
    with caplog.at_level(logging.WARNING, logger="sailor_jax.run.runner"):
        resumed = loop.run(cfg, out, resume=True)
    warnings = [r.getMessage() for r in caplog.records if "not a whole record" in
                r.getMessage()]
    assert warnings == [f"resume: {path} line {len(lines)} is not a whole record (cut short "
                        "or garbled by a kill or a full disk) and is dropped"]
    assert resumed.evaluation == reference[1].evaluation  # the run itself is exact
    assert run_logs(out)["metrics.jsonl"] == run_logs(reference[0])["metrics.jsonl"][:-1]


GARBLED = {"metrics.jsonl": b"\xff\xfe\x80\x00 garbled",  # bytes a crash left, not UTF-8
           "llm.jsonl": b'{"iteration": 1, "event": "prompt", "text": "caf\xc3'}
"""Tails a killed run's logs may end in: none decodes as UTF-8 (a record cut inside a
two-byte character, in llm.jsonl)."""


def test_garbled_log_tails_are_dropped_with_a_warning_and_resume_is_exact(
        cfg, reference, tmp_path, monkeypatch, caplog):
    """Killed after iteration 1's ranking, then invalid UTF-8 appended to
    metrics.jsonl and llm.jsonl; --resume warns about each as a cut line (it raised
    UnicodeDecodeError) and gives the uninterrupted run's results and logs."""
    out = str(tmp_path / "run")
    with monkeypatch.context() as mp:
        KILLS["after_ranking"](mp)
        assert_interrupted(lambda: loop.run(cfg, out), out)
    lines = {}
    for name, tail in GARBLED.items():
        with open(os.path.join(out, name), "ab") as f:
            f.write(tail)
        with open(os.path.join(out, name), "rb") as f:
            lines[name] = len(f.readlines())
    with caplog.at_level(logging.WARNING, logger="sailor_jax.run.runner"):
        resumed = loop.run(cfg, out, resume=True)
    warnings = [r.getMessage() for r in caplog.records if "not a whole record" in
                r.getMessage()]
    assert warnings == [f"resume: {os.path.join(out, name)} line {lines[name]} is not a "
                        "whole record (cut short or garbled by a kill or a full disk) and is "
                        "dropped" for name in sorted(GARBLED)]
    assert_same_run(out, resumed, reference)
