"""What a `jax.profiler` trace spent its time on: the top ops by self time. Host-only; the
census benchmark's (`benchmarks/census.py --profile`).

`profile_call(fn, folder)` traces one call of a compiled function (`jax.profiler.trace` with
a Perfetto trace, readable without TensorBoard's profile plugin) and `top_ops(path)` reads
that trace back: the XLA ops (kernels on a GPU, thunks on a CPU) by the time spent in them
and not in an op nested inside them (self time), summed over the call.

Which events are ops: those of the device processes (`/device:...`) where the trace has any;
on a CPU, which has none, those of the host's threads other than Python's (the runtime's
client and worker threads run the thunks).
"""

from __future__ import annotations

import collections
import glob
import gzip
import json
import os
import time
from collections.abc import Callable

import jax


def profile_call(fn: Callable[[], object], folder: str, top: int = 12) -> dict:
    """Trace one call of `fn` (already compiled and warmed up) into `folder`.

    Returns:
      `{"traced_s": wall seconds of the traced call, **top_ops(...)}`.

    Raises:
      FileNotFoundError: the profiler wrote no Perfetto trace.
    """
    os.makedirs(folder, exist_ok=True)
    with jax.profiler.trace(folder, create_perfetto_trace=True):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        seconds = time.perf_counter() - t0
    traces = sorted(glob.glob(os.path.join(folder, "**", "perfetto_trace.json.gz"),
                              recursive=True), key=os.path.getmtime)
    if not traces:
        raise FileNotFoundError(f"no perfetto_trace.json.gz under {folder}")
    return {"traced_s": seconds, **top_ops(traces[-1], top)}


def _names(events: list[dict], kind: str) -> dict:
    return {(e["pid"], e.get("tid")) if kind == "thread_name" else e["pid"]: e["args"]["name"]
            for e in events if e.get("ph") == "M" and e.get("name") == kind}


def _self_times(spans: list[dict]) -> collections.Counter:
    """Self time (us) by name of one thread's complete events (nested ones subtracted)."""
    out: collections.Counter = collections.Counter()
    stack: list[tuple[float, str]] = []  # (end, name) of the open events
    for e in sorted(spans, key=lambda e: (e["ts"], -e.get("dur", 0))):
        start, dur = e["ts"], e.get("dur", 0)
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:
            out[stack[-1][1]] -= dur
        out[e["name"]] += dur
        stack.append((start + dur, e["name"]))
    return out


def top_ops(path: str, top: int = 12) -> dict:
    """The ops of the Perfetto trace `path` (`.json.gz`) by summed self time.

    Returns:
      `{"op_time_s": summed self time of every op, "where": "device" or "host threads",
      "top_ops": [[name, seconds, share of op_time_s], ...] (at most `top`, largest first)}`.
    """
    with gzip.open(path, "rt", encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    processes, threads = _names(events, "process_name"), _names(events, "thread_name")
    devices = {pid for pid, name in processes.items() if "/device:" in name}

    def is_op(e: dict) -> bool:
        if devices:
            return e["pid"] in devices
        return threads.get((e["pid"], e.get("tid")), "") != "python"

    spans: dict[tuple, list[dict]] = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and is_op(e):
            spans[(e["pid"], e.get("tid"))].append(e)
    totals: collections.Counter = collections.Counter()
    for thread in spans.values():
        totals.update(_self_times(thread))
    total = sum(max(v, 0.0) for v in totals.values())
    ranked = [[name, us / 1e6, us / total if total else float("nan")]
              for name, us in totals.most_common(top) if us > 0]
    return {"op_time_s": total / 1e6, "where": "device" if devices else "host threads",
            "top_ops": ranked}
