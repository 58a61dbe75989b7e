"""Committed raw results: kept gzip-compressed, every file still loads, and the tree stays small.

The raw results under `benchmarks/results/` are stored as `name.json.gz` / `.jsonl.gz` /
`.csv.gz` so that the tracked tree can be copied to a GPU machine (64 MiB at most travel; the
project keeps 40 MiB). `logging.open_text` reads a plain file and its compressed copy alike, and
the readers (`SailorResults.load`, `variants.load_runs`, `report.read_csv`, `phases.py`,
`compare_recipes.py`) go through it.
"""

from __future__ import annotations

import csv
import glob
import gzip
import json
import os
import shutil
import subprocess

import pytest
from support import ROOT, load_script

from sailor_jax.logging import open_text, stored_path
from sailor_jax.run import run_dir
from sailor_jax.run.results import SailorResults
from sailor_lab import report
from sailor_lab.variants import load_runs

RESULTS = os.path.join(ROOT, "benchmarks", "results")
TREE_LIMIT_MIB = 40
RAW_SUFFIXES = (".json", ".jsonl", ".csv")


def _tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked tree cannot be listed")
    return [name for name in out.decode().split("\0") if name]


def test_tracked_tree_fits_the_gpu_copy():
    sizes = {f: os.path.getsize(os.path.join(ROOT, f)) for f in _tracked_files()
             if os.path.isfile(os.path.join(ROOT, f))}
    total_mib = sum(sizes.values()) / 2**20
    largest = sorted(sizes, key=sizes.get)[-3:]
    assert total_mib <= TREE_LIMIT_MIB, f"tracked files {total_mib:.1f} MiB; largest {largest}"


def test_raw_results_are_compressed_and_every_file_loads():
    stored = sorted(glob.glob(os.path.join(RESULTS, "**", "*"), recursive=True))
    plain = [p for p in stored if p.endswith(RAW_SUFFIXES)]
    assert not plain, f"uncompressed raw results (gzip -9 -n them): {plain[:5]}"
    compressed = [p for p in stored if p.endswith(tuple(s + ".gz" for s in RAW_SUFFIXES))]
    assert len(compressed) > 100  # the repair, ablation and main-job folders
    for path in compressed:
        with open_text(path, newline="") as f:
            if path.endswith(".json.gz"):
                assert isinstance(json.load(f), (dict, list)), path
            elif path.endswith(".jsonl.gz"):
                lines = [json.loads(x) for x in f if x.strip()]
                assert lines and all(isinstance(x, dict) for x in lines), path
            else:
                rows = list(csv.reader(f))
                assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows), path


def test_committed_sailor_runs_load_through_the_readers():
    runs = load_runs(os.path.join(RESULTS, "judge_floor", "blocks", "seed500"))
    assert len(runs) >= 4
    for name, results in runs.items():
        assert results.evaluation["episodes"] > 0, name
    table = report.read_csv(os.path.join(RESULTS, "ablations_cpu", "ablations.csv.gz"))
    assert table and all(row["seeds"] >= 1 for row in table)


def test_open_text_reads_plain_and_gzip_alike(tmp_path):
    text = '{"a": 1}\n{"b": "é"}\n'
    plain, packed = tmp_path / "x.jsonl", tmp_path / "y.jsonl.gz"
    plain.write_text(text, encoding="utf-8")
    with gzip.open(packed, "wt", encoding="utf-8") as f:
        f.write(text)
    with open_text(str(plain)) as f:
        assert f.read() == text
    with open_text(str(packed)) as f:
        assert f.read() == text
    with open_text(str(tmp_path / "y.jsonl")) as f:  # the plain name of a compressed file
        assert f.read() == text
    assert stored_path(str(tmp_path / "y.jsonl")) == str(packed)
    assert stored_path(str(plain)) == str(plain)
    assert stored_path(str(tmp_path / "none.json")) == str(tmp_path / "none.json")
    with pytest.raises(FileNotFoundError):
        open_text(str(tmp_path / "none.json"))


def test_a_run_folder_loads_the_same_after_compression(tmp_path):
    source = os.path.join(RESULTS, "main_job_guarded_20261126", "sailor_smoke")
    folder = tmp_path / "run"
    shutil.copytree(source, folder)
    packed = SailorResults.load(str(folder))
    for name in ("results.json", "config.json"):
        with gzip.open(folder / f"{name}.gz", "rb") as f:
            (folder / name).write_bytes(f.read())
        os.remove(folder / f"{name}.gz")
    assert run_dir.finished(str(folder))
    assert SailorResults.load(str(folder)) == packed


def test_phase_table_and_curve_lines_read_compressed_files(tmp_path):
    phases = load_script("benchmarks/phases.py")
    compare = load_script("benchmarks/compare_recipes.py")
    metrics = [{"segment": k, "time/train": 2.0, "time/collect": 0.5, "time/rank": 0.25,
                "time/update": 0.25, "time/checkpoint": 0.0} for k in range(3)]
    results = {"timings": {"compile": 3.0, "eval": 1.0, "checkpoint": 0.0}}
    with gzip.open(tmp_path / "metrics.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(m) + "\n" for m in metrics))
    with gzip.open(tmp_path / "results.json.gz", "wt") as f:
        json.dump(results, f)
    table = phases.phase_table(str(tmp_path))
    assert table["iterations"] == 3
    assert table["host_share"] == pytest.approx(1.0 / 3.0)
    curve = {"recipe": "r", "env_steps": 10, "score_mean": 1.0}
    with gzip.open(tmp_path / "curve.jsonl.gz", "wt") as f:
        f.write(json.dumps(curve) + "\n")
    assert compare.read_lines(str(tmp_path / "curve.jsonl.gz")) == [curve]
    assert compare.read_lines(str(tmp_path / "curve.jsonl")) == [curve]
