"""Many theta updates at once: the seeds' updates of one SAILOR iteration in worker processes.

Host-only. `update_many` runs `updates.update_theta` for every call, serially or in joblib's
reusable loky worker processes (started once, never forked from the JAX process); the results
are the same either way.
"""

from __future__ import annotations

import os

from joblib.externals.loky import get_reusable_executor

from sailor_jax.alignment.updates import UpdateResult, update_theta

__all__ = ["resolve_workers", "update_many"]
def resolve_workers(workers: int, num_tasks: int) -> int:
    """Processes for `num_tasks` updates: `workers`, or (0) one per CPU core this process may
    use, never more than the tasks. Host-only."""
    if workers == 0:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    return max(1, min(workers, num_tasks))


def update_many(calls: list[tuple], workers: int = 0) -> list[UpdateResult]:
    """`update_theta(*call)` for every call, in worker processes when more than one is used.

    Host-only. The calls are independent (each carries its own NumPy generator), and every
    update runs single-threaded, so the results equal a serial loop's bit for bit whatever
    `workers` is. Workers are joblib's reusable loky processes (started once, kept while
    calls keep coming; they never fork the JAX process).

    Args:
      calls: positional arguments of `update_theta`, one tuple per update (e.g. per seed).
      workers: processes (`resolve_workers`: 0 = one per core, 1 = serial in this process).

    Returns:
      One `UpdateResult` per call, in order.

    Raises:
      ValueError: as `update_theta`, for the first bad call.
    """
    n = resolve_workers(workers, len(calls))
    if n == 1:
        return [update_theta(*call) for call in calls]
    # The workers' samplers run on the CPU: a GPU's runtime is not started in each of them.
    executor = get_reusable_executor(max_workers=n, env={"JAX_PLATFORMS": "cpu"})
    return list(executor.map(update_theta, *zip(*calls, strict=True)))
