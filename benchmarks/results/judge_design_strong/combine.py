"""Designs combined afterwards: each group's ratings of several designs (from `designs.py`'s
`group_scores`), standardised within the group and averaged, scored as one judge.

    python benchmarks/results/judge_design_strong/combine.py [SCORES] --sets today+stage ...
"""
import argparse
import gzip
import itertools
import json
import os

import numpy as np

from sailor_jax.types import Ranking
from sailor_lab import judge_eval
from sailor_lab.strong_pool import StrongPoolArgs, build_strong_pool, draw_groups

HERE = os.path.dirname(os.path.abspath(__file__))


def truths(pool_name, view):
    seed = int(pool_name[-1])
    if pool_name.startswith("strong"):
        args = StrongPoolArgs(seed=seed)
        return draw_groups(build_strong_pool(args), args, view)[2]
    pool, index = judge_eval.PoolArgs(groups=32, seed=seed).draw()
    return [pool.epsilon[i] for i in index]


def standardise(scores):
    s = np.asarray(scores, np.float64)
    sd = s.std()
    return (s - s.mean()) / sd if sd > 0 else s * 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scores", nargs="?", default=os.path.join(HERE, "scores.jsonl.gz"))
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--size", type=int, default=2)
    a = ap.parse_args()
    rows = [json.loads(x) for x in gzip.open(a.scores, "rt")]
    rows = [r for r in rows if r["model"] == a.model]
    by = {(r["design"], r["pool"], r["view"]): r["group_scores"] for r in rows}
    designs = sorted({r["design"] for r in rows})
    cases = sorted({(r["pool"], r["view"]) for r in rows})
    truth = {c: truths(*c) for c in cases}
    for size in range(1, a.size + 1):
        for combo in itertools.combinations(designs, size):
            cells = []
            for case in cases:
                if any(len(by.get((d, *case), ())) != len(truth[case]) for d in combo):
                    cells.append("   -  ")
                    continue
                rankings = []
                for g in range(len(truth[case])):
                    z = sum(standardise(by[(d, *case)][g]) for d in combo)
                    rankings.append(Ranking(order=np.argsort(-z, kind="stable").astype(np.int32)))
                acc = judge_eval.judge_metrics(rankings, truth[case], {})["skill_order_accuracy"]
                cells.append(f"{acc:.3f}")
            cols = "  ".join(f"{c[0]}.{c[1]}={x}" for c, x in zip(cases, cells, strict=True))
            print(f"{' + '.join(combo):40s} {cols}")


if __name__ == "__main__":
    main()
