"""The destinations kept fixed against theta0 kept fixed, seed by seed, pooled over the root
seeds run (from the committed `repair.json.gz` tables).

    cd benchmarks/results/dest49_cpu && python pool.py > pooled.md

A destination is the mean over 8 seeds of a `sailor_value_regret --value-compare sum` arm's
final theta (`benchmarks/destination.py`), trained from scratch and kept fixed. Seed s of both
arms of one root seed starts from the same network and games: the differences are paired.
"""

import functools
import gzip
import json
import os

from sailor_jax.run.repair_table import worst_ratio

from sailor_lab import report

HERE = os.path.dirname(os.path.abspath(__file__))
TABLES = {"root seed 0": ".", "root seed 1": "seed1", "root seed 2": "seed2"}


@functools.cache
def rows(folder: str) -> dict[str, dict]:
    """The rows of one committed repair table, by arm."""
    path = os.path.join(HERE, folder, "repair.json.gz")
    if not os.path.exists(path):
        return {}
    with gzip.open(path, "rt") as f:
        return {r["arm"]: r for r in json.load(f)["rows"]}


def scores(folder: str, arm: str) -> list[float] | None:
    row = rows(folder).get(arm)
    return None if row is None else row["per_seed"]["score"]


def line(name: str, dest: list[float], theta0: list[float]) -> str:
    d = report.paired_difference(dest, theta0)
    ratio = sum(dest) / sum(theta0)
    return (f"| {name} | {len(dest)} | {ratio:.2f} | {d['mean']:+,.0f} [{d['ci_low']:+,.0f}, "
            f"{d['ci_high']:+,.0f}] ({d['wins']}/{len(dest)}) | {worst_ratio(dest, theta0):.2f} |")


def main() -> None:
    arms = sorted(a for a in rows(".") if a.endswith("_dest.fixed"))
    print("| destination kept fixed | seeds | score / theta0's | minus theta0 kept fixed "
          "[95% t-CI] (seeds higher) | worst seed / theta0 twin |")
    print("|---|---:|---:|---:|---:|")
    for arm in arms:
        pooled_dest, pooled_theta0 = [], []
        for name, folder in TABLES.items():
            dest, theta0 = scores(folder, arm), scores(folder, "theta0.fixed")
            if dest is None:
                continue
            pooled_dest += dest
            pooled_theta0 += theta0
            print(line(f"{arm.removesuffix('.fixed')}, {name}", dest, theta0))
        if len(pooled_dest) > 8:
            print(line(f"{arm.removesuffix('.fixed')}, all", pooled_dest, pooled_theta0))
            # root seed 0 picked it (the best of four on those seeds): the others confirm
            print(line(f"{arm.removesuffix('.fixed')}, root seeds 1-2 (not used to pick it)",
                       pooled_dest[8:], pooled_theta0[8:]))


if __name__ == "__main__":
    main()
