"""Pool theta0's per-seed scores over the four root seeds (32 paired seeds) from the committed
`repair.json.gz` tables (the run folders of root seeds 0 and 1 are gone; the tables hold each
arm's per-seed final greedy scores).

    cd benchmarks/results/repair49_theta0_32 && python pool.py > pooled.md

value: `sailor_value` (the recommended SAILOR, the expert's value verdict); regret as sums:
`sailor_value_regret` run with `--value-compare sum`. Seed s of every arm of one root seed
starts from the same network and games, so differences are paired per seed.
"""

import functools
import gzip
import json
import os

from sailor_jax.run.repair_table import worst_ratio

from sailor_lab import report

HERE = os.path.dirname(os.path.abspath(__file__))
VALUE = ("repair49_cpu", "repair49_seed1_cpu", "repair49_theta0_seed2_cpu",
         "repair49_theta0_seed3_cpu")
REGRET_AS_SUMS = ("repair49_regsum_cpu", "repair49_regsum_seed1_cpu",
                  "repair49_theta0_seed2_cpu", "repair49_theta0_seed3_cpu")


@functools.cache
def rows(folder: str) -> dict[str, dict]:
    """The rows of one committed repair table, by arm (each table read once)."""
    with gzip.open(os.path.join(HERE, "..", folder, "repair.json.gz"), "rt") as f:
        return {r["arm"]: r for r in json.load(f)["rows"]}


def scores(folder: str, arm: str) -> list[float]:
    return rows(folder)[arm]["per_seed"]["score"]


def line(name: str, a: list[float], b: list[float], worst: str) -> str:
    d = report.paired_difference(a, b)
    return (f"| {name} | {d['mean']:+,.0f} [{d['ci_low']:+,.0f}, {d['ci_high']:+,.0f}] "
            f"({d['wins']}/{len(d['per_seed'])}) | {worst} |")


def main() -> None:
    sets = []
    for k, (fv, fr) in enumerate(zip(VALUE, REGRET_AS_SUMS, strict=True)):
        fixed = scores(fv, "theta0.fixed")
        assert scores(fr, "theta0.fixed") == fixed, (fv, fr)  # the same reference runs
        sets.append((f"root seed {k}", fixed, scores(fv, "theta0.sailor_value"),
                     scores(fr, "theta0.sailor_value_regret")))
    pooled = ("all 32", *([x for s in sets for x in s[i]] for i in (1, 2, 3)))
    print("| seeds | comparison | paired diff. [95% t-CI] (seeds higher) "
          "| worst seed / fixed twin |")
    print("|---|---|---:|---:|")
    for name, fixed, value, regsum in [*sets, pooled]:
        for label, a, b, w in (("value - kept fixed", value, fixed, worst_ratio(value, fixed)),
                               ("regret as sums - kept fixed", regsum, fixed,
                                worst_ratio(regsum, fixed)),
                               ("regret as sums - value", regsum, value, None)):
            print(line(f"{name} | {label}", a, b, "" if w is None else f"{w:.2f}"))


if __name__ == "__main__":
    main()
