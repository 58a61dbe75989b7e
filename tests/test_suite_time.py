"""The suite-time benchmark (`benchmarks/suite_time.py`): its reading of pytest's output and
its refusal of a bad revision (the full clone-and-run is the benchmark itself, not a test)."""

from __future__ import annotations

import pytest
from support import load_script

OUTPUT = """\
........................................................................ [ 99%]
============================= slowest 25 durations =============================
129.92s call     tests/test_gpu_check.py::test_tiny_check_runs_its_parts
29.10s setup    tests/test_smollm2.py::test_embedded_smollm2_pairwise_label_mass
0.01s teardown tests/test_run_dir.py::test_a_failed_write_is_a_user_error
1 failed, 1379 passed, 1 skipped in 1627.23s (0:27:07)
"""


def test_pytest_summary_and_slowest_phases_are_read():
    bench = load_script("benchmarks/suite_time.py")
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


def test_the_failure_report_is_kept():
    bench = load_script("benchmarks/suite_time.py")
    failed = ("....F.. [100%]\n=================== FAILURES ===================\n"
              "___ test_x ___\n    assert 1 == 2\nE   assert 1 == 2\n"
              "============ slowest 25 durations ============\n0.50s call     tests/t.py::test_x\n"
              "=========== short test summary info ===========\n"
              "FAILED tests/t.py::test_x - assert 1 == 2\n1 failed, 6 passed in 1.00s\n")
    report = bench.failure_report(failed)
    assert report.startswith("=================== FAILURES") and "E   assert 1 == 2" in report
    assert "0.50s call" not in report and report.endswith("1 failed, 6 passed in 1.00s")
    assert bench.failure_report(OUTPUT) == ""


def test_a_revision_that_is_no_commit_is_refused(tmp_path):
    bench = load_script("benchmarks/suite_time.py")
    with pytest.raises(bench.UserError, match="--rev no-such-rev: not a commit"):
        bench.run(bench.Args(rev="no-such-rev", out=str(tmp_path)))


def test_the_record_is_written_compressed_and_summarised(tmp_path, monkeypatch, capsys):
    import gzip
    import json

    bench = load_script("benchmarks/suite_time.py")
    record = {"rev": "0123456789abcdef", "command": "python -m pytest -q -n 2", "returncode": 0,
              "wall_seconds": 12.5, **bench.parse_pytest(OUTPUT),
              "cpu_type": "Some CPU, family 1 model 2", "lscpu": "", "failures": "", "tail": ""}
    monkeypatch.setattr(bench, "run", lambda args: record)
    assert bench.main(bench.Args(out=str(tmp_path))) == record
    path = tmp_path / "01234567_tests_Some_CPU_family_1_model_2.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        assert json.load(f) == record
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("python -m pytest -q -n 2 at 01234567 on Some CPU, family 1 "
                                 "model 2: 12 s in all, pytest 1627.23 s")
    assert len(printed) == 1 + 3 and "tests/test_gpu_check.py::" in printed[1]
