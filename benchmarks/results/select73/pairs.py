"""Paired differences between the arms of a comparison folder, seed by seed.

    python benchmarks/results/select73/pairs.py RUN_DIR A:B [A:B ...]

A and B are variant names (`theta0.select`, `theta0.fixed`, ...); prints mean [95% t-CI] of
A - B over seeds and how many seeds A is higher, from each variant's results.json (a
comparison's `variants/<name>/results.json`, or this folder's `variants/<name>.results.json.gz`:
`pairs.py benchmarks/results/select73 theta0.select:theta0.fixed`)."""

import gzip
import json
import os
import sys

from sailor_lab.report import mean_ci, paired_difference


def scores(run: str, name: str) -> list[float]:
    stored = os.path.join(run, "variants", f"{name}.results.json.gz")
    with (gzip.open(stored, "rt", encoding="utf-8") if os.path.exists(stored) else
          open(os.path.join(run, "variants", name, "results.json"), encoding="utf-8")) as f:
        return [s["score_mean"] for s in json.load(f)["evaluation"]["per_seed"]]


if __name__ == "__main__":
    run = sys.argv[1]
    for pair in sys.argv[2:]:
        a, b = pair.split(":")
        sa, sb = scores(run, a), scores(run, b)
        d = paired_difference(sa, sb)
        m, lo, hi = mean_ci(sa)
        print(f"{a} {m:,.0f} [{lo:,.0f}, {hi:,.0f}] - {b}: {d['mean']:+,.0f} "
              f"[{d['ci_low']:+,.0f}, {d['ci_high']:+,.0f}] ({d['wins']}/{len(sa)} higher)")
