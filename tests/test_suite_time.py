"""The suite-time benchmark (`benchmarks/suite_time.py`): its reading of pytest's output and
its refusal of a bad revision (the full clone-and-run is the benchmark itself, not a test)."""

from __future__ import annotations

import pytest
from test_experiments import _load

OUTPUT = """\
........................................................................ [ 99%]
============================= slowest 25 durations =============================
129.92s call     tests/test_gpu_check.py::test_tiny_check_runs_its_parts
29.10s setup    tests/test_smollm2.py::test_embedded_smollm2_pairwise_label_mass
0.01s teardown tests/test_run_dir.py::test_a_failed_write_is_a_user_error
1 failed, 1379 passed, 1 skipped in 1627.23s (0:27:07)
"""


def test_pytest_summary_and_slowest_phases_are_read():
    bench = _load("benchmarks/suite_time.py")
    read = bench.parse_pytest(OUTPUT)
    assert read["counts"] == "1 failed, 1379 passed, 1 skipped"
    assert read["pytest_seconds"] == 1627.23
    assert read["slowest"] == [
        {"seconds": 129.92, "phase": "call",
         "test": "tests/test_gpu_check.py::test_tiny_check_runs_its_parts"},
        {"seconds": 29.10, "phase": "setup",
         "test": "tests/test_smollm2.py::test_embedded_smollm2_pairwise_label_mass"},
        {"seconds": 0.01, "phase": "teardown",
         "test": "tests/test_run_dir.py::test_a_failed_write_is_a_user_error"}]
    assert bench.parse_pytest("no summary") == {"counts": None, "pytest_seconds": None,
                                                "slowest": []}


def test_a_revision_that_is_no_commit_is_refused(tmp_path):
    bench = _load("benchmarks/suite_time.py")
    with pytest.raises(bench.UserError, match="--rev no-such-rev: not a commit"):
        bench.run(bench.Args(rev="no-such-rev", out=str(tmp_path)))
