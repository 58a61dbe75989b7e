"""Tests for `benchmarks/phases.py` (the phase table) and the runner's per-segment
`time/checkpoint` record it reads."""

from __future__ import annotations

import json

import pytest
from support import load_script


@pytest.fixture(scope="module")
def phases():
    return load_script("benchmarks/phases.py")


def _write_run(folder, rows, timings):
    with open(folder / "metrics.jsonl", "w") as f:
        for segment, times in enumerate(rows):
            f.write(json.dumps({"step": 8, "segment": segment, "charts/SPS": 1.0}) + "\n")
            for name, value in times.items():  # as the hooks and the runner log them
                f.write(json.dumps({"step": 8, "segment": segment, f"time/{name}": value})
                        + "\n")
    (folder / "results.json").write_text(json.dumps({"timings": timings}))


def test_phase_table_leaves_out_the_first_iteration_and_computes_the_host_share(phases,
                                                                              tmp_path):
    rows = [{"train": 10.0, "collect": 5.0, "rank": 1.0, "update": 2.0, "checkpoint": 0.5},
            {"train": 8.0, "collect": 0.5, "rank": 1.0, "update": 0.4, "checkpoint": 0.1},
            {"train": 6.0, "collect": 0.5, "rank": 1.0, "update": 0.6, "checkpoint": 0.1}]
    _write_run(tmp_path, rows, {"compile": 7.0, "eval": 3.0, "checkpoint": 0.7})
    table = phases.phase_table(str(tmp_path))
    assert table["iterations"] == 3 and table["steady_iterations"] == 2
    assert table["per_iteration_s"] == pytest.approx(
        {"train": 7.0, "collect": 0.5, "rank": 1.0, "update": 0.5, "checkpoint": 0.1})
    assert table["host_share"] == pytest.approx(2.1 / 9.1)  # everything but train
    assert table["update_over_train"] == pytest.approx(0.5 / 7.0)
    assert (table["compile_s"], table["final_eval_s"]) == (7.0, 3.0)


def test_phase_table_of_a_run_without_checkpoint_records_spreads_the_total(phases, tmp_path):
    rows = [{"train": 4.0, "collect": 1.0, "rank": 0.0, "update": 1.0}]
    _write_run(tmp_path, rows, {"compile": 1.0, "eval": 1.0, "checkpoint": 2.0})
    table = phases.phase_table(str(tmp_path))
    assert table["per_iteration_s"]["checkpoint"] == 2.0
    assert table["host_share"] == pytest.approx(4.0 / 8.0)


def test_unknown_setting_is_a_user_error(phases):
    from sailor_jax.errors import UserError

    with pytest.raises(UserError, match="unknown setting 'warp'"):
        phases.main(phases.Args(settings=("warp",)))
