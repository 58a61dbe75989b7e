"""benchmarks/repair_summary.py: every start of a repair run sorted into gross / mild / good and
checked against its target, on a made-up table whose numbers are worked out by hand."""

from __future__ import annotations

import gzip
import json

import pytest
from support import load_script

from sailor_jax.errors import UserError
from sailor_lab import report
from sailor_lab.starts import severity

summary_mod = load_script("benchmarks/repair_summary.py")

THETA0 = [100.0, 110.0, 90.0, 100.0]


def _row(start: str, method: str, scores: list[float], fixed: list[float] | None = None,
         random_judge: list[float] | None = None) -> dict:
    """A row as `comparison.summarize` writes it."""
    row = {"arm": f"{start}.{method}", "start": start, "method": method,
           "per_seed": {"score": scores}, "score": list(report.mean_ci(scores))}
    if fixed is not None:
        row["vs_fixed_start"] = report.paired_difference(scores, fixed)
        row["worst_ratio_to_fixed"] = min(a / b for a, b in zip(scores, fixed, strict=True))
        if start != "theta0":
            row["recovery"] = report.recovery_fraction(scores, fixed, THETA0)
    if random_judge is not None:
        row["vs_random_judge"] = report.paired_difference(scores, random_judge)
        row["random_judge_arm"] = f"{start}.sailor_value_random_judge"
    return row


def _table() -> list[dict]:
    gross1, gross2, mild = [10.0] * 4, [50.0, 55.0, 45.0, 50.0], [80.0, 88.0, 72.0, 80.0]
    return [
        _row("theta0", "fixed", THETA0),
        # recovery (91 - 10) / (100 - 10) = 0.9 on every seed: met
        _row("g1", "fixed", gross1), _row("g1", "sailor_value", [91, 101, 81, 91], gross1,
                                          random_judge=[11, 12, 10, 11]),
        # recovery (60 - 50) / (100 - 50) = 0.2: not met
        _row("g1", "sailor_value_random_judge", [11, 12, 10, 11], gross1),
        _row("g2", "fixed", gross2), _row("g2", "sailor_value", [60, 65, 55, 60], gross2),
        # 20% below theta0: mild; gains 10, 9, 11, 10, interval above 0: met
        _row("m1", "fixed", mild), _row("m1", "sailor_value", [90, 97, 83, 90], mild,
                                          random_judge=[81, 89, 73, 81]),
        _row("m1", "sailor_value_random_judge", [81, 89, 73, 81], mild),  # +1 on every seed
        # theta0: mean -6.25, interval holds 0, but seed 2 is 80 / 110 = 0.73 of its twin
        _row("theta0", "sailor_value", [95, 80, 99, 101], THETA0),
        _row("g3", "fixed", [1.0, 2.0, 3.0, 4.0]),  # its SAILOR arm has not run: left out
    ]


def test_severity_bands_are_the_screens():
    assert [severity(x) for x in (0.05, 0.10, 0.2, 0.30, 0.31, 0.99)] == \
        ["good", "mild", "mild", "mild", "gross", "gross"]


def test_summary_classes_targets_and_the_gross_distribution():
    s = summary_mod.summarize(_table(), "sailor_value")
    by = {x["start"]: x for x in s["starts"]}
    assert [x["start"] for x in s["starts"]] == ["g1", "g2", "m1", "theta0"]
    assert {k: (v["class"], v["met"]) for k, v in by.items()} == {
        "g1": ("gross", True), "g2": ("gross", False), "m1": ("mild", True),
        "theta0": ("good", False)}
    assert by["g1"]["recovery"]["fraction"] == pytest.approx(0.9)
    assert by["g2"]["recovery"]["fraction"] == pytest.approx(0.2)
    assert by["m1"]["shortfall"] == pytest.approx(0.2)
    assert by["theta0"]["worst_ratio"] == pytest.approx(80 / 110)
    assert by["g1"]["vs_random_judge"]["mean"] == pytest.approx(80.0)
    assert by["g1"]["random_judge"]["recovery"]["fraction"] == pytest.approx(1 / 90)
    assert by["g2"]["random_judge"] is None
    g = s["gross"]
    assert (g["n"], g["met"]) == (2, 1)
    assert [g[k] for k in ("min", "q25", "median", "q75", "max")] == \
        pytest.approx([0.2, 0.375, 0.55, 0.725, 0.9])


def test_main_reads_the_compressed_record_and_writes_table_json_and_figure(tmp_path, capsys):
    record = tmp_path / "run" / "repair.json.gz"
    record.parent.mkdir()
    record.write_bytes(gzip.compress(json.dumps({"rows": _table()}).encode()))
    out = tmp_path / "out"
    summary_mod.main(["--run", str(record.parent), "--method", "sailor_value", "--out", str(out)])
    table = capsys.readouterr().out
    assert "| g1 | gross (10, 90%) | recovery 0.90" in table
    assert "| 0.01 [" in table and "| +80 [" in table  # the control alone, SAILOR - control
    assert "| +1 [+1, +1] | +9 [" in table  # a mild start's control: its gain, not recovery
    assert "target (>= 0.8, lower end >= 0.5) met from 1." in table
    assert (out / "summary.md").read_text() == table.rstrip("\n") + "\n"
    stored = json.loads(gzip.decompress((out / "summary.json.gz").read_bytes()))
    assert [x["start"] for x in stored["starts"]] == ["g1", "g2", "m1", "theta0"]
    assert (out / "recovery.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input_names_the_flag(tmp_path):
    with pytest.raises(UserError, match="--run: no compare.json"):
        summary_mod.main(["--run", str(tmp_path)])
    with pytest.raises(UserError, match="--method: no sailor arm"):
        summary_mod.summarize(_table(), "sailor")
    with pytest.raises(UserError, match="no theta0.fixed row"):
        summary_mod.summarize(_table()[1:], "sailor_value")


def test_the_summary_reads_the_control_the_table_matched():
    """The table names each row's random-judge control; the summary reads that one. A stored
    table's row that names none, of an arm the arms table does not know, has no control."""
    rows = [dict(r, method="sailor_value_regret", arm=r["arm"].replace(
        ".sailor_value", ".sailor_value_regret"), random_judge_arm="g1.sailor_value_random_judge")
        if r["arm"] == "g1.sailor_value" else r for r in _table()]
    s = summary_mod.summarize(rows, "sailor_value_regret")
    (g1,) = [x for x in s["starts"] if x["start"] == "g1"]
    assert g1["random_judge"]["recovery"]["fraction"] == pytest.approx(1 / 90)
    del rows[[r["arm"] for r in rows].index("g1.sailor_value_regret")]["random_judge_arm"]
    (g1,) = [x for x in summary_mod.summarize(rows, "sailor_value_regret")["starts"]
             if x["start"] == "g1"]
    assert g1["random_judge"] is None  # an older table: the per-move control, not run here
