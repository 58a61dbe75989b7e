"""Runs of one tiny SAILOR config on several forced CPU devices, printed as one JSON line.

Not a test module: `tests/test_sharding.py` runs it in a subprocess, because the device count
(`XLA_FLAGS=--xla_force_host_platform_device_count=4`) must be set before JAX starts.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python tests/multidevice.py OUT

Runs (3 seeds + 3 baseline rows = 6 rows; 4 devices pad them to 8):
- `one`: uninterrupted on 1 device; `four`: uninterrupted on 4 devices.
- `killed`: on 4 devices, killed in the second iteration's judge (checkpoint 1 on disk),
  then resumed from copies of its folder on 1 (`resumed_on_1`) and 2 (`resumed_on_2`) devices.
Each run reports its theta history, evaluations and the device count of the runner state.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys

import jax
import numpy as np
from support import TINY  # this script runs from tests/, next to support.py

from sailor_jax.judges import OutcomeRanker
from sailor_jax.run import loop, phases

CFG = dataclasses.replace(TINY, iterations=2, num_seeds=3)
"""`support.TINY` (outcome judge) with 3 seeds, so 6 rows do not divide 4 devices."""


class DiesAfter(OutcomeRanker):
    """The outcome judge, killed (KeyboardInterrupt) on its second call."""

    calls = 0

    def rank_groups(self, groups):
        DiesAfter.calls += 1
        if DiesAfter.calls == 2:
            raise KeyboardInterrupt("simulated kill")
        return super().rank_groups(groups)



def summary(results, devices_seen: int | None = None) -> dict:
    return {"theta_history": np.asarray(results.theta_history).tolist(),
            "evaluation": results.evaluation["per_seed"],
            "baseline": results.baseline_evaluation["per_seed"],
            "devices_seen": devices_seen}


def run_and_see_devices(out: str, devices: int, resume: bool = False) -> dict:
    """`loop.run`, recording how many devices the runner's parameters live on."""
    seen = []
    original = phases.collect_batch

    def spy(ctx, runner_state, *args):
        seen.append(len(jax.tree.leaves(runner_state.params)[0].sharding.device_set))
        return original(ctx, runner_state, *args)

    phases.collect_batch = spy
    try:
        results = loop.run(CFG, out, resume=resume, devices=devices)
    finally:
        phases.collect_batch = original
    return summary(results, max(seen))


def main(root: str) -> None:
    report = {"device_count": jax.device_count(),
              "one": run_and_see_devices(f"{root}/one", 1),
              "four": run_and_see_devices(f"{root}/four", 4)}
    try:
        loop.run(CFG, f"{root}/killed", ranker=DiesAfter(), devices=4)
    except KeyboardInterrupt:
        pass
    for n in (1, 2):
        shutil.copytree(f"{root}/killed", f"{root}/killed_{n}")
        report[f"resumed_on_{n}"] = run_and_see_devices(f"{root}/killed_{n}", n, resume=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
