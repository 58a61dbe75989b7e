"""What SAILOR's updates did in the blocks of a decisive row: accepted, refused by the held-out
test, refused by the survival guard, or no gain (the update did not lower the fitted pairs'
error), per block and pooled, warm-up included.

    python benchmarks/results/decide_theta0/updates.py runs/decide_theta0/expert theta0.sailor

Reads `seed<ROOT>/variants/<ARM>/results.json` of every block: each seed's update's `outcome`
field; results written before that field existed carry the outcome only in the message
(`alignment/heldout.py`'s wording then), which is read for them."""

import json
import os
import sys
from collections import Counter


def outcome(seed: dict) -> str:
    if "outcome" in seed:
        return {"moved": "accepted"}.get(seed["outcome"], seed["outcome"])
    if seed.get("accepted"):
        return "accepted"
    message = seed.get("message", "")
    if "held-out rejected" in message:
        return "held out"
    if "survival guard rejected" in message:
        return "guard"
    return "no judge" if seed.get("judge_failed") else "no gain"


if __name__ == "__main__":
    run, arm = sys.argv[1], sys.argv[2]
    total = Counter()
    for block in sorted(d for d in os.listdir(run) if d.startswith("seed")):
        path = os.path.join(run, block, "variants", arm, "results.json")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
        counts = Counter(outcome(s) for it in results["warmup"] + results["iterations"]
                         for s in it["seeds"])
        total += counts
        print(block, sum(counts.values()), dict(counts))
    print("all", sum(total.values()), {k: f"{v} ({v / sum(total.values()):.1%})"
                                       for k, v in total.most_common()})
