"""Two `sailor.py` processes on one folder, Ctrl-C during a run and `--resume`, each a
separate process of the real script, then `--resume` of the finished run (the script's `main`
in the test's process); and SIGTERM to a `train_ppo.py` run, then `--resume`.

One run `A` (the tiny offline LLM judge, TensorBoard on) is started; while it holds the
folder a second run `B` with the same `--out` must end with one `error:` line naming A's
process id and change nothing; then A gets SIGINT (one line, exit 130), `--resume`
finishes it, and a `--resume` of the finished run prints its table and changes no file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from support import PAPER_UPDATE, ROOT, TINY_PPO, TINY_TRAIN_PPO, files_under, load_script

from sailor_jax.errors import INTERRUPT_STATUS, TERMINATE_STATUS
from sailor_jax.run import run_dir

SAILOR = os.path.join(ROOT, "experiments", "sailor.py")
TIMEOUT_S = 240
ITERATIONS = 3
"""Long enough that run A is still mid-run when it is stopped (SIGSTOP, within 50 ms of its
first checkpoint being seen; it stays stopped while run B starts and ends): 2 more iterations
and the final evaluation, seconds of A's own work against those milliseconds."""


def _command(out: str, llm: str) -> list[str]:
    """A run of `ITERATIONS` iterations: long enough to be caught while it runs."""
    return [sys.executable, SAILOR, "--preset", "smoke", "--out", out,
               "--sailor.ranker.kind", "llm",
            "--sailor.iterations", str(ITERATIONS), "--sailor.num-seeds", "1",
            "--sailor.trajectories", "4", *PAPER_UPDATE, "--sailor.ranker.llm.mode", "pairwise",
            "--sailor.max-len", "20", "--sailor.eval.episodes", "2", "--sailor.eval.max-len",
            "50", *TINY_PPO, "--sailor.ranker.llm.model", llm, "--sailor.ranker.llm.device",
            "cpu", "--sailor.ranker.llm.batch-size", "2", "--sailor.ranker.llm.max-pairs-per-group",
            "6", "--sailor.alignment.bo-calls", "6", "--sailor.alignment.bo-initial-points", "3"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SAILOR_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    return env


def _lines(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def _wait_for(condition, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        assert process.poll() is None, f"run ended before {what}: {process.communicate()}"
        assert time.monotonic() < deadline, f"no {what} after {TIMEOUT_S} s"
        time.sleep(0.05)


AS_FROM_A_SHELL = ("import os, signal, sys; "
                   "signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
                   "signal.signal(signal.SIGINT, signal.SIG_DFL); "
                   "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")
"""Run A through this (it execs the command in the same process): SIGINT unblocked and at its
default action, as for a run started from a shell. Twice (a loaded run and a clean-clone CI
run, 2026-11-26) run A of the full suite exited 0 after its Ctrl-C with nothing on stderr,
which is what an ignored or blocked SIGINT inherited from the test worker would do; neither
reproduced outside the full suite (16 tries), so the cause is not known; a failure now
reports A's signal masks."""


def _signal_state(pid: int) -> str:
    """The process's state and its ignored / caught signal masks (Linux `/proc`), for the
    message of a failed assertion."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            return ", ".join(line.replace("\t", " ") for line in f.read().splitlines()
                             if line.startswith(("State", "SigIgn", "SigCgt", "SigPnd",
                                                 "ShdPnd", "SigBlk")))
    except OSError as error:
        return f"no /proc status ({error})"


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def _resume_finishes(command, cwd, env, out: str, segments: int) -> None:
    """`command --resume` exits 0 and `metrics.jsonl` then holds each record once, for every
    segment `0..segments-1`."""
    resumed = subprocess.run([*command, "--resume"], cwd=cwd, env=env,
                             capture_output=True, text=True, timeout=TIMEOUT_S)
    assert resumed.returncode == 0, resumed.stderr
    with open(os.path.join(out, "metrics.jsonl"), encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    keys = [(r["segment"], r["step"], tuple(sorted(r))) for r in records]
    assert len(keys) == len(set(keys))  # no record twice
    assert {r["segment"] for r in records} == set(range(segments))


@pytest.mark.slow
def test_second_run_ctrl_c_resume_and_finished_resume(tmp_path, tiny_llm_dir, capsys):
    out = str(tmp_path / "run")
    command, env = _command(out, tiny_llm_dir), _env()
    llm = os.path.join(out, "llm.jsonl")
    a = subprocess.Popen([sys.executable, "-c", AS_FROM_A_SHELL, *command[1:]], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = os.path.join(out, ".lock")
        _wait_for(lambda: os.path.exists(lock) and open(lock).read() == str(a.pid)
                  and _lines(llm) > 0 and run_dir.saved_steps(out), a,
                  "judge records and a checkpoint")
        config = open(os.path.join(out, "config.json"), "rb").read()
        # A is stopped while B runs (a stopped process keeps its lock), and its Ctrl-C is sent
        # while it is stopped, so that it lands where A stopped, mid-run: waiting for more
        # judge records after SIGCONT let A finish first under load (exit 0, twice).
        a.send_signal(signal.SIGSTOP)
        try:
            b = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=TIMEOUT_S)
        finally:
            at_sigint = f"A at the Ctrl-C: {_signal_state(a.pid)}, {_lines(llm)} judge records"
            a.send_signal(signal.SIGINT)  # pending until SIGCONT
            a.send_signal(signal.SIGCONT)
        assert b.returncode == 2, b.stderr
        assert _error_lines(b.stderr) == [
            f"error: --out {out}: another run (pid {a.pid}) is using this folder (wait for it "
            "to end, or choose another --out)"]
        stdout, stderr = a.communicate(timeout=TIMEOUT_S)
    finally:
        if a.poll() is None:
            a.kill()
    assert a.returncode == INTERRUPT_STATUS, (at_sigint, stderr, stdout[-1500:])
    assert _error_lines(stderr) == [
        f"error: interrupted; continue with --resume (--out {out})"], stderr
    assert open(os.path.join(out, "config.json"), "rb").read() == config
    assert len(os.listdir(os.path.join(out, "tb"))) == 1  # B wrote no event file

    _resume_finishes(command, tmp_path, env, out, ITERATIONS)

    # The finished run's `--resume`: the script's `main` in this process (no process boundary
    # to test here; it returns normally where the script exits 0).
    before = files_under(out)
    capsys.readouterr()
    load_script("experiments/sailor.py").main([*command[2:], "--resume"])
    printed = capsys.readouterr().out
    assert "final agents" in printed and "results:" in printed
    assert files_under(out) == before  # no TensorBoard file, results.json as it was


TRAIN_PPO = os.path.join(ROOT, "experiments", "train_ppo.py")
SEGMENTS = 30
"""Tiny segments (16 envs x 8 steps): the run is still training when the first checkpoint
is seen and SIGTERM sent."""


@pytest.mark.slow
def test_sigterm_says_how_to_continue_and_resume_finishes(tmp_path):
    """SIGTERM (a scheduler's stop, `kill`) gives Ctrl-C's one line with
    `terminated`, exit 143 (128 + SIGTERM); `--resume` then finishes the run."""
    out = str(tmp_path / "run")
    command = [sys.executable, TRAIN_PPO, "--out", out, "--train.total-timesteps",
               str(SEGMENTS * 16 * 8), "--train.num-seeds", "2", *TINY_TRAIN_PPO,
               "--train.eval.episodes", "2", "--train.eval.max-len", "50",
               "--train.no-evaluate-random", "--train.no-tensorboard"]
    run = subprocess.Popen(command, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: run_dir.saved_steps(out), run, "a checkpoint")
        run.send_signal(signal.SIGTERM)
        _, stderr = run.communicate(timeout=TIMEOUT_S)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == TERMINATE_STATUS == 143, stderr
    # One line and nothing else: a SIGTERM during a checkpoint save once left orbax threads
    # that printed "Event loop is closed" tracebacks at shutdown (`errors.stops_held`).
    assert _error_lines(stderr) == [f"error: terminated; continue with --resume (--out {out})"
                                    ], stderr
    assert run_dir.saved_steps(out)[-1] < SEGMENTS  # stopped mid-run
    _resume_finishes(command, tmp_path, _env(), out, SEGMENTS)
