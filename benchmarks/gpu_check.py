"""The prepared GPU check: throughput, the judge's cost and the main job, each under a deadline.

    python benchmarks/gpu_check.py --out runs/gpu_check                 # one H100: ~9 minutes
    python benchmarks/gpu_check.py --tiny --out runs/gpu_check_tiny     # toy sizes, any CPU

Parts (`PARTS`), each its own process, killed at its deadline (`--deadlines`, seconds) so a
slow part cannot eat the rest; a part writes a row as each measurement ends, so a part stopped
at its deadline keeps the rows it finished:
- `env`: random legal moves with `phi` and `theta . phi` (throughput.py's `env_features`),
  batch 2^12 .. 2^22.
- `ppo`: the PPO segment (`ppo_train_seeds`): 8 vmapped seeds x {256, 2048, 16384} envs
  per seed, the (64, 64) trunk (`afterstates_64`) and the (256, 256) default; env steps/s summed
  over seeds, XLA's memory need, and the FLOPs per env step from XLA's cost analysis
  (`throughput.cost_per_env_step`), so each row reads as TFLOP/s and a fraction of the card's
  peak (`PEAK_TFLOPS`).
- `reference`: recipe `v0` (PureJaxRL's PPO function: two 2x256 tanh towers on the one-hot
  board, 128 steps, 4 epochs x 4 minibatches, written as PureJaxRL writes it).
- `census`: `benchmarks/census.py` at 16,384 envs, each trunk as it runs now and with the
  embedding first layer as the gather it ran as before (`:gather`), each arm's call traced by
  `jax.profiler` and summarised to its top ops (`trace_summary`).
- `judge`: a model of Qwen2.5-1.5B-Instruct's configuration with random weights and a
  tokenizer trained here (`sailor_lab.random_model`: the machine has no model hub; the timing is
  real, the verdicts are not), bf16, saved and loaded through the judge's real path; pointwise
  windows/s and prompt tokens/s at batch 8 .. 64.
- `main_llm`, `main_expert`: the `gpu` preset of `experiments/sailor.py` for 4 iterations judged by
  that model, and by the expert; per-phase seconds and the host's share (`phases.phase_table`).
- `decide_expert`, `decide_llm`: the decisive question at ~5M env steps per seed
  (`experiments/compare.py` in blocks: SAILOR from theta0 against theta0 kept fixed, blocks of
  16 paired seeds from root seed 200, as many as finish by the deadline; the aim is 64), judged
  by the expert, and by the 1.5B LLM where its weights are on the machine
  (`gpu_parts.DECIDE_MODEL_ENV`; the device has no network and receives at most 64 MiB, so
  without them the part records that it was skipped). Each block's per-seed scores, then the
  pooled paired difference, its power and rliable's statistics (`sailor_lab.seed_statistics`).

Writes `OUT/<part>.json` (status, deadline, wall-clock, rows; every row names the device) and
`OUT/summary.md` / `OUT/summary.json`: at most 8 files come back from the device tool, so run
at most 6 parts a call. Models and run
folders go to `--work` (default: a temporary folder). `--tiny` runs every part at toy sizes
(the test suite runs it on the CPU, so the script is known to work before device time is spent).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from sailor_jax.cli import parse_args
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.logging import json_line

HERE = os.path.dirname(os.path.abspath(__file__))
DEADLINES = {"env": 30, "ppo": 200, "reference": 45, "census": 150, "judge": 60,
             "main_llm": 120, "main_expert": 90, "decide_expert": 540, "decide_llm": 540}
"""Seconds per part on one H100 (695 in all), set from the first H100 run: its 4
iterations of the `gpu` preset need about 70 s with the expert, PureJaxRL's compile over 30 s;
the census (never run on a GPU) is given 150 s; each decisive part 540 s, a call of its own.
The device tool runs at most 600 s a command: run the parts in calls (`benchmarks/gpu/check.sh`'s
header)."""
PARTS = tuple(DEADLINES)
"""The parts, in the order they run (`gpu/gpu_parts.py` runs each in its own process)."""
TINY_DEADLINE = 600
"""Seconds per part with `--tiny` (generous: CI machines differ 3-5x in speed)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Args:
    """The prepared GPU check."""

    out: str = "runs/gpu_check"
    """Folder for the part JSON files and the summary (created)."""
    work: str | None = None
    """Folder for the judge model and the main job's run folders (default: a temporary one)."""
    tiny: bool = False
    """Every part at toy sizes (minutes on a CPU)."""
    parts: tuple[str, ...] = PARTS
    """Which parts to run, in this order."""
    deadlines: tuple[int, ...] | None = None
    """Seconds per part, in the order of --parts (default `DEADLINES`; 600 each with --tiny)."""
    part: str | None = None
    """Internal: run one part in this process (what the check starts per part)."""
    part_deadline: float | None = None
    """Internal: the part's deadline in seconds (the main job stops itself before it)."""


PEAK_TFLOPS = {"H100": (66.9, 494.7), "H200": (66.9, 494.7)}
"""Dense peaks (FP32, TF32 tensor cores) of the SXM cards, in TFLOP/s (NVIDIA's H100 and H200
datasheets; sparse figures halved). XLA runs f32 matmuls on tensor cores (TF32) or not depending
on the precision it picks: both fractions are shown."""


def _peaks(device_kind: str) -> tuple[float, float] | None:
    return next((p for k, p in PEAK_TFLOPS.items() if k in device_kind), None)


def summary_tables(results: list[dict]) -> dict[str, list[dict]]:
    """One table (a list of row dicts) per measured thing, from the parts' rows. Host-only."""
    rows = [r for result in results for r in result["rows"]]
    flops = {r["recipe"]: r["flops_per_env_step"] for r in rows if r["benchmark"] == "flops"}
    tables: dict[str, list[dict]] = {"env_features": [], "ppo": [], "judge": [], "main_job": [],
                                     "decide": []}
    for r in rows:
        if r["benchmark"] == "env_features":
            tables["env_features"].append({"batch": r["num_envs"], "env_steps_per_s": r["sps"],
                                           "compile_s": r["compile_s"]})
        elif r["benchmark"] == "ppo_train_seeds":
            tflops = r["sps"] * flops[r["recipe"]] / 1e12 if r["recipe"] in flops else None
            peaks = _peaks(r["device_kind"])
            tables["ppo"].append({
                "part": r["part"], "recipe": r["recipe"], "seeds": r["num_seeds"],
                "envs_per_seed": r["num_envs"], "env_steps_per_s": r["sps"],
                "tflops": tflops, "fp32_peak_share": tflops / peaks[0] if tflops and peaks
                else None, "tf32_peak_share": tflops / peaks[1] if tflops and peaks else None,
                "memory_gib": (r["temp_gib"] or 0) + (r["state_gib"] or 0),
                "compile_s": r["compile_s"]})
        elif r["benchmark"] == "judge_pointwise":
            tables["judge"].append({k: r[k] for k in ("batch_size", "windows_per_s",
                                                      "prompt_tokens_per_s",
                                                      "prompt_tokens_per_window")})
        elif r["benchmark"] == "decide_pooled":
            tables["decide"].append({"judge": r["judge"], "seeds": r["seeds"],
                                     **{k: r.get(k) for k in ("mean", "ci_low", "ci_high",
                                                              "wins", "paired_sd",
                                                              "detectable_80")},
                                     "wall_s": r["wall_s"]})
        elif r["benchmark"] == "main_job":
            per = r.get("per_iteration_s", {})
            tables["main_job"].append({"judge": r["judge"], "finished": r.get("finished"),
                                       "iterations": r.get("iterations", 0), **per,
                                       "host_share": r.get("host_share"),
                                       "compile_s": r.get("compile_s"), "wall_s": r["wall_s"]})
    return tables


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return "-" if value is None else str(value)


def summary_markdown(results: list[dict]) -> str:
    """The summary: each part's status, then one markdown table per measured thing."""
    machine = next((r for result in results for r in result["rows"]), {})
    lines = [f"# GPU check: {machine.get('device_kind', '?')} ({machine.get('cpu', '?')}), "
             f"jax {machine.get('jax', '?')}", "",
             "| part | status | seconds | deadline | rows |", "| --- | --- | ---: | ---: | ---: |"]
    lines += [f"| {r['part']} | {r['status']} | {r['wall_s']:.0f} | {r['deadline_s']} | "
              f"{len(r['rows'])} |" for r in results]
    for name, table in summary_tables(results).items():
        if table:
            lines += ["", f"## {name}", "", "| " + " | ".join(table[0]) + " |",
                      "|" + "---|" * len(table[0])]
            lines += ["| " + " | ".join(_cell(v) for v in row.values()) + " |" for row in table]
    return "\n".join(lines) + "\n"


def _check(args: Args) -> list[int]:
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        raise UserError(f"--parts: unknown part {unknown[0]!r}", f"choose from {list(PARTS)}")
    if args.deadlines is None:
        return [TINY_DEADLINE if args.tiny else DEADLINES[p] for p in args.parts]
    if len(args.deadlines) != len(args.parts) or min(args.deadlines) <= 0:
        raise UserError(f"--deadlines: need {len(args.parts)} positive seconds (one per part of "
                        f"--parts), got {list(args.deadlines)}")
    return list(args.deadlines)


def _run_child(args: Args, part: str, deadline: int, work: str) -> dict:
    """Start `part` in its own process group; kill the group at the deadline. Host-only."""
    rows_path = os.path.join(work, f"{part}.jsonl")
    if os.path.exists(rows_path):
        os.remove(rows_path)
    cmd = [sys.executable, os.path.abspath(__file__), "--part", part, "--out", args.out,
           "--work", work, "--part-deadline", str(deadline), *(["--tiny"] if args.tiny else [])]
    log_path = os.path.join(work, f"{part}.log")
    t0 = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True, env={**os.environ,
                                                              "PYTHONUNBUFFERED": "1"})
        try:
            rc = child.wait(timeout=deadline)
            status = "done" if rc == 0 else f"failed (exit status {rc})"
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            status = "stopped at its deadline"
    rows = []
    if os.path.exists(rows_path):
        with open(rows_path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    with open(log_path, encoding="utf-8", errors="replace") as f:
        log_tail = f.read()[-3000:]
    return {"part": part, "status": status, "deadline_s": deadline,
            "wall_s": time.perf_counter() - t0, "tiny": args.tiny, "rows": rows,
            "log_tail": log_tail}


def main(args: Args) -> list[dict]:
    """Run the parts one after another (or, with `--part`, one part here); write the files.

    Raises:
      UserError: an unknown part, or deadlines that do not match the parts.
    """
    if args.part is not None:
        # Only a part's process imports the parts and the benchmarks they run: the check
        # itself parses, starts the parts and writes the summary.
        sys.path.insert(0, os.path.join(HERE, "gpu"))
        from gpu_parts import run_part

        run_part(args.part, args.tiny, args.work or tempfile.mkdtemp(prefix="gpu_check_"),
                 args.part_deadline)
        return []
    deadlines = _check(args)
    os.makedirs(args.out, exist_ok=True)
    work = args.work or tempfile.mkdtemp(prefix="gpu_check_")
    os.makedirs(work, exist_ok=True)
    results = []
    for part, deadline in zip(args.parts, deadlines, strict=True):
        result = _run_child(args, part, deadline, work)
        results.append(result)
        with open(os.path.join(args.out, f"{part}.json"), "w", encoding="utf-8") as f:
            f.write(json_line(result) + "\n")
        print(f"{part}: {result['status']} after {result['wall_s']:.0f} s, "
              f"{len(result['rows'])} rows", flush=True)
    text = summary_markdown(results)
    with open(os.path.join(args.out, "summary.md"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        f.write(json_line({"parts": [{k: r[k] for k in ("part", "status", "deadline_s", "wall_s")}
                                     for r in results],
                           "tables": summary_tables(results)}) + "\n")
    print(text, flush=True)
    return results


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
