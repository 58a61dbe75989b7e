"""Two local CPU processes as one JAX program (`--distributed`) against one process.

`experiments/sailor.py` runs a tiny SAILOR config (outcome judge) twice: as 2 processes
joined by `jax.distributed` (one CPU device each, the seed rows sharded over both; process 0
judges and broadcasts theta), and as its `main` in the test's own process (one CPU device).
Process 0's results must equal the single process's, and only process 0 writes files. Every
process is bounded in time.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from support import PAPER_UPDATE, ROOT, load_script

SAILOR = os.path.join(ROOT, "experiments", "sailor.py")
TIMEOUT_S = 400
FLAGS = ["--preset", "smoke", "--sailor.ranker.kind", "outcome", "--sailor.iterations", "2",
         "--sailor.num-seeds", "2", "--sailor.trajectories", "4", "--sailor.max-len", "60",
         *PAPER_UPDATE,  # theta moves on 4 games, so the comparison has teeth
         "--sailor.ppo.num-envs", "16", "--sailor.ppo.num-steps", "8",
         "--sailor.ppo.updates-per-segment", "1", "--sailor.ppo.network.hidden-sizes", "16",
         "--sailor.alignment.bo-calls", "6", "--sailor.alignment.bo-initial-points", "3",
         "--sailor.alignment.update-workers", "1",  # as support.TINY
         "--sailor.eval.episodes", "4", "--sailor.eval.max-len", "300",
         "--sailor.no-tensorboard"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _env(**more: str) -> dict:
    """One CPU device per process (no forced device count); the session's other XLA flags
    (conftest's fast-compile optimisation level) are kept: every run here gets the same.
    `more`: further variables (how a process joins the program)."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", **more)
    env["XLA_FLAGS"] = " ".join(
        f for f in env.get("XLA_FLAGS", "").split()
        if not f.startswith("--xla_force_host_platform_device_count"))
    return env


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    """Wait for every process (bounded); kill them all if one overruns."""
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=TIMEOUT_S)
            results.append((p.returncode, out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
    port = _free_port()
    multi, single = str(tmp_path / "multi"), str(tmp_path / "single")
    procs = [subprocess.Popen(
        [sys.executable, SAILOR, *FLAGS, "--out", multi, "--distributed"],
        env=_env(JAX_COORDINATOR_ADDRESS=f"localhost:{port}", JAX_NUM_PROCESSES="2",
                 JAX_PROCESS_ID=str(i)), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True) for i in (0, 1)]
    finished = _finish(procs)
    for rc, _ in finished:  # every process's output on failure, not only the first's
        assert rc == 0, "\n\n".join(f"process {i}, exit {r}:\n{o[-3000:]}"
                                     for i, (r, o) in enumerate(finished))
    assert "results:" in finished[0][1] and "results:" not in finished[1][1]  # 1 is quiet
    # The single-process reference: the script's `main` in this process (one CPU device, the
    # session's XLA flags, as the processes above), after them.
    load_script("experiments/sailor.py").main([*FLAGS, "--out", single])
    with open(os.path.join(multi, "results.json")) as f:
        a = json.load(f)
    with open(os.path.join(single, "results.json")) as f:
        b = json.load(f)
    assert a["theta_history"] == b["theta_history"]
    assert a["theta_history"][-1] != a["theta_history"][0]  # theta moved: the check has teeth
    assert a["preferences"] == b["preferences"]
    assert a["evaluation"]["per_seed"] == b["evaluation"]["per_seed"]
    assert a["baseline_evaluation"]["per_seed"] == b["baseline_evaluation"]["per_seed"]
    with open(os.path.join(multi, "metrics.jsonl")) as f:
        records = [json.loads(line) for line in f]
    assert sum("iteration" in r for r in records) == 2  # process 0 alone logged


def test_distributed_without_a_coordinator_fails_clearly():
    out = subprocess.run([sys.executable, SAILOR, "--distributed"],
                         env=_env(JAX_NUM_PROCESSES="2"), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    assert out.stderr.startswith("error: --distributed") and "JAX_COORDINATOR_ADDRESS=HOST:PORT" \
        in out.stderr, out.stderr
