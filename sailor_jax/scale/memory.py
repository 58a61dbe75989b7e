"""Will a run's training program fit in memory? Checked before anything is allocated.

Host-side. `check_fits` compares the training state of R rows (shapes only, from
`jax.eval_shape` of one seed's init) and, when that is not far below the limit, XLA's
compiled memory analysis of the segment (arguments + outputs - donated aliases + scratch)
with what one device has free: `memory_stats()` where the backend reports it (GPU, TPU),
otherwise the host's available RAM (`MemAvailable`; CPU devices share it). Rows are spread
over the devices, so the per-device need is the total divided by the device count (an
estimate: padding rows are ignored).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from sailor_jax.errors import UserError

SAFETY = 8.0
"""A state this many times smaller than the free memory fits without compiling to check."""


def tree_bytes(tree: Any) -> int:
    """Bytes of every leaf of a pytree of arrays or `jax.ShapeDtypeStruct`s."""
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def stacked(abstract: Any, rows: int) -> Any:
    """`abstract` (one seed's `ShapeDtypeStruct`s) with a leading axis of `rows`."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct((rows, *x.shape), x.dtype), abstract)


def host_available_bytes() -> int:
    """The host's available RAM (`MemAvailable` of /proc/meminfo, else free pages)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def available_bytes() -> tuple[int, str]:
    """`(free bytes, where)` of this process's first device: its memory, or the host's RAM on
    CPU (only a process's own devices report memory in a multi-process run)."""
    device = jax.local_devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0)), \
            f"{device.device_kind} memory"
    return host_available_bytes(), "available host RAM"


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def check_fits(init_one: Callable, key: jax.Array, rows: int, segment: Any, thetas: Any,
               devices: int, fix: str) -> None:
    """Raise `UserError` if `rows` training rows will not fit in one device's memory.

    Args:
      init_one: one seed's `init(key) -> state` (only traced, by `jax.eval_shape`).
      key: its key.
      rows: rows trained together (seeds, baseline rows).
      segment: the jitted `segment(state[R, ...], thetas) -> (state, metrics)`.
      thetas: `float32[R, F]` reward weights (or their `ShapeDtypeStruct`).
      devices: devices the rows are spread over.
      fix: which flag to lower, for the message.

    Raises:
      UserError: the state, or the compiled segment's memory, exceeds the free memory.
    """
    free, where = available_bytes()
    state = stacked(jax.eval_shape(init_one, key), rows)
    need = tree_bytes(state) / devices
    if need * SAFETY < free:
        return
    what = "training state"
    if need <= free:
        abstract_thetas = jax.ShapeDtypeStruct(np.shape(thetas), np.float32)
        stats = segment.lower(state, abstract_thetas).compile().memory_analysis()
        if stats is not None:
            what = "training segment (compiled: arguments, outputs and scratch)"
            need = (stats.argument_size_in_bytes + stats.output_size_in_bytes
                    - stats.alias_size_in_bytes + stats.temp_size_in_bytes) / devices
    if need > free:
        raise UserError(f"{rows} rows do not fit in memory: the {what} needs about "
                        f"{_gib(need)} per device, {where} is {_gib(free)}", fix)
