"""How long the README's test command takes: a clean clone, an empty compilation cache.

    python benchmarks/suite_time.py --out benchmarks/results/suite_time      # the tests
    python benchmarks/suite_time.py --ci --out benchmarks/results/suite_time # .ci/run: install too

Clones this checkout's `HEAD` (or `--rev`) into a fresh temporary folder, so nothing the working
tree holds (build outputs, caches, uncommitted files) helps, points the tests' persistent JAX
compilation cache (`SAILOR_TEST_JAX_CACHE`) at a new empty folder, and runs there, with
`--durations=25` added through `PYTEST_ADDOPTS`:

- by default the README's test command (`python -m pytest -q -n 2`) with this interpreter, the
  clone first on `PYTHONPATH` so its package is the one tested;
- with `--ci`, `bash .ci/run`: CI's from-scratch install (a new virtual environment in the
  clone) and then the same command, as CI times it.

It writes `<out>/<rev>_<machine>.json.gz` (the command, the wall time in seconds, pytest's own
seconds and counts, the 25 slowest test phases, pytest's report of what failed, `lscpu` and the
machine) and prints a summary.
Run it with nothing else running: the time is the machine's, and machines differ 3-5x.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_lab import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_COMMAND = [sys.executable, "-m", "pytest", "-q", "-n", "2"]
"""The README's test command, run with this interpreter."""
SLOWEST = 25
"""Test phases listed (`--durations`)."""
SUMMARY = re.compile(r"=* ?(?P<counts>\d+ (?:passed|failed).*?) in (?P<seconds>[\d.]+)s")
DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>call|setup|teardown) +(?P<test>\S+)$")
FAILED_HEADER = re.compile(r"^=+ (FAILURES|ERRORS) =+$")
FAILURES_CHARS = 8000
"""Characters of pytest's failure report kept in the record."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """Time the test suite from a clean clone with an empty compilation cache."""

    out: str = "benchmarks/results/suite_time"
    """Folder for the JSON record (created)."""
    rev: str = "HEAD"
    """The commit to clone and test."""
    ci: bool = False
    """Run `bash .ci/run` (install and tests, as CI does) instead of the test command alone."""


def parse_pytest(output: str) -> dict:
    """pytest's summary (`counts` text and `seconds`) and its `--durations` rows from its
    output; `seconds` None and no rows when the output has none. Host-only."""
    lines = output.splitlines()
    summary = [m for m in map(SUMMARY.search, lines) if m]
    slowest = [{"seconds": float(m["seconds"]), "phase": m["phase"], "test": m["test"]}
               for m in map(DURATION.match, lines) if m]
    last = summary[-1] if summary else None
    return {"counts": last["counts"] if last else None,
            "pytest_seconds": float(last["seconds"]) if last else None, "slowest": slowest}


def failure_report(stdout: str, limit: int = FAILURES_CHARS) -> str:
    """pytest's report of what failed in its `stdout`: from its first `FAILURES` or `ERRORS`
    header up to its `--durations` rows (at most `limit` characters), then its short test
    summary; "" when nothing failed. Host-only."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if FAILED_HEADER.match(line)), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if "slowest" in lines[i]
                and lines[i].startswith("=")), len(lines))
    summary = next((i for i, line in enumerate(lines) if "short test summary" in line), None)
    report = "\n".join(lines[start:end])[:limit]
    return report + ("\n" + "\n".join(lines[summary:]) if summary is not None else "")


def run(args: Args) -> dict:
    """Clone, run, and return the record (see the module docstring). Host-only.

    Raises:
      UserError: `--rev` is not a commit of this checkout.
    """
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", f"{args.rev}^{{commit}}"],
                         capture_output=True, text=True)
    if sha.returncode != 0:
        raise UserError(f"--rev {args.rev}: not a commit of {ROOT}", "name a commit or branch")
    sha = sha.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="suite_time_") as work:
        clone, cache = os.path.join(work, "clone"), os.path.join(work, "jax_cache")
        subprocess.run(["git", "clone", "-q", "--no-hardlinks", ROOT, clone], check=True)
        subprocess.run(["git", "-C", clone, "checkout", "-q", sha], check=True)
        env = dict(os.environ, SAILOR_TEST_JAX_CACHE=cache,
                   PYTEST_ADDOPTS=f"--durations={SLOWEST}")
        if args.ci:
            command = ["bash", ".ci/run"]
            env.pop("VIRTUAL_ENV", None)
        else:
            command = TEST_COMMAND
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [clone, env.get("PYTHONPATH")]))
        t0 = time.perf_counter()
        done = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    output = done.stdout + done.stderr
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return {"rev": sha, "command": "bash .ci/run" if args.ci else "python -m pytest -q -n 2",
            "returncode": done.returncode, "wall_seconds": round(wall, 1),
            **parse_pytest(output), **report.machine(), "lscpu": lscpu,
            "failures": failure_report(done.stdout),
            "tail": output[-2000:] if done.returncode else ""}


def main(args: Args) -> dict:
    """Run, write `<out>/<rev>_<cpu>.json.gz`, print the summary; return the record."""
    record = run(args)
    os.makedirs(args.out, exist_ok=True)
    name = re.sub(r"\W+", "_", f"{record['rev'][:8]}_{'ci' if args.ci else 'tests'}_"
                  f"{record['cpu_type']}").strip("_")
    path = os.path.join(args.out, f"{name}.json.gz")
    with gzip.open(path, "wt", encoding="utf-8") as f:  # raw results are stored compressed
        json.dump(record, f, indent=1)
    print(f"{record['command']} at {record['rev'][:8]} on {record['cpu_type']}: "
          f"{record['wall_seconds']:.0f} s in all, pytest {record['pytest_seconds']} s "
          f"({record['counts']}), exit {record['returncode']}; {path}")
    for row in record["slowest"]:
        print(f"  {row['seconds']:7.1f} s  {row['phase']:8s} {row['test']}")
    if record["failures"]:
        print(record["failures"])
    return record


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
