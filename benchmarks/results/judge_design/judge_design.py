"""Judge designs for one LLM, measured on one graded-skill pool: what it is shown and asked.

    python benchmarks/results/judge_design/judge_design.py --llm.model FOLDER \\
        --llm.gguf-file FILE --seed 1 --designs summary_pointwise summary_pairwise \\
        --out benchmarks/results/judge_design/dev.jsonl.gz

The model is loaded once and every design of `--designs` (the table `DESIGNS`: a name and the
`LLMRankerConfig` fields it sets) ranks the same `--groups` groups of the pool
(`judge_eval.PoolArgs`, seed `--seed`). One JSON line per design is appended to `--out` as it
finishes; a design already in the file is skipped, so a killed run continues by running the
same command again. Each line holds the skill-order accuracy with its 95% interval over groups,
Kendall's tau with skill, the position bias (pairwise: mean probability the first-shown game
wins before the orders are combined, and the share above 0.5) or the label bias (pointwise: the
mean and spread of the expected ratings), the label mass, the distinct prompts and the model
seconds per distinct prompt (a prompt repeated across groups is run once), and the machine.

Designs are chosen on a development pool (`--seed 1`) and the adopted one is confirmed once on a
fresh pool (`--seed 2`); both numbers are reported (docs/judges.md).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import sys
import time
from typing import Annotated

import numpy as np
import tyro

from sailor_jax.cli import parse_args
from sailor_jax.config import LLMRankerConfig
from sailor_jax.errors import UserError, report_user_errors
from sailor_jax.judges.hf_backend import load_model
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.logging import to_jsonable
from sailor_lab import judge_eval, report

PoolFlags = Annotated[judge_eval.PoolArgs, tyro.conf.OmitArgPrefixes]
"""Pool settings as flags without a prefix (`--seed`, `--groups`, ...)."""

DESIGNS: dict[str, dict] = {
    "summary_pointwise": {"mode": "pointwise"},
    "summary_pairwise": {"mode": "pairwise"},
    "summary_pairwise12": {"mode": "pairwise", "max_pairs_per_group": 12},
}
"""Named judge designs: the `LLMRankerConfig` fields each sets (the rest from `--llm`). Every
design shows the games' summaries (the names say so, as the stored records name them)."""


@dataclasses.dataclass(frozen=True)
class Args:
    """Measure LLM judge designs on one graded-skill pool."""

    llm: LLMRankerConfig = LLMRankerConfig()
    """The model and the fields no design sets (`--llm.model`, `--llm.gguf-file`, ...)."""
    designs: tuple[str, ...] = ("summary_pointwise", "summary_pairwise")
    """Designs to measure, in order (names of `DESIGNS`)."""
    pool: PoolFlags = judge_eval.PoolArgs(groups=32, seed=1)
    """The graded-skill pool and group draw (`--seed`: 1 = development, 2 = confirmation;
    `--groups`: 32 on the judge curve's axis; `--epsilons`, `--m`, ...)."""
    out: str = "benchmarks/results/judge_design/dev.jsonl.gz"
    """JSONL file the records are appended to (gzipped when it ends in .gz, as raw results
    are kept; designs already in it are skipped)."""


def bias_stats(records: list[dict]) -> dict:
    """Position bias (pairwise) or label bias (pointwise) from the judge's prompt records."""
    pair = [r for r in records if r.get("event") == "pairwise_prompt"]
    point = [r for r in records if r.get("event") == "pointwise_prompt"]
    if pair:
        p = np.array([r["p_first"] for r in pair])
        return {"p_first_mean": float(p.mean()), "position_bias": float(np.mean(p > 0.5)),
                "label_mass": float(np.mean([r["label_mass"] for r in pair]))}
    if point:
        s = np.array([r["score"] for r in point if r["score"] is not None])
        top = [int(np.nanargmax([x if x is not None else -np.inf for x in r["logp"]])) + 1
               for r in point]
        return {"rating_mean": float(s.mean()), "rating_sd": float(s.std()),
                "rating_range": [float(s.min()), float(s.max())],
                "most_likely_rating_share": float(np.bincount(top).max() / len(top)),
                "label_mass": float(np.mean([r["label_mass"] for r in point]))}
    return {}


def cost_stats(records: list[dict]) -> dict:
    """Distinct prompts, their model seconds and tokens (repeats carry 0 seconds)."""
    prompts = [r for r in records if r.get("event") in ("pairwise_prompt", "pointwise_prompt")]
    seen, seconds, tokens = set(), 0.0, 0
    for r in prompts:
        if r["prompt"] not in seen:
            seen.add(r["prompt"])
            seconds += r["seconds"]
            tokens += r["prompt_tokens"]
    n = max(len(seen), 1)
    return {"prompts": len(prompts), "distinct_prompts": len(seen),
            "seconds_per_distinct_prompt": seconds / n, "tokens_per_distinct_prompt": tokens / n,
            "model_seconds": seconds}


def write_prompts(records: list[dict], out: str, design: str) -> str:
    """The judge's records of one design, gzipped JSONL beside `out` (`<out stem>.<design>.
    jsonl.gz`): every distinct prompt once with its label log-probabilities, and every group's
    verdict; the raw results the design's line summarises."""
    path = f"{_stem(out)}.{design}.jsonl.gz"
    seen = set()
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for r in records:
            if r.get("event", "").endswith("_prompt"):
                if r["prompt"] in seen:
                    continue
                seen.add(r["prompt"])
            f.write(json.dumps(to_jsonable(r)) + "\n")
    return path


def _stem(out: str) -> str:
    """`out` without its `.jsonl` / `.jsonl.gz` ending."""
    for ending in (".jsonl.gz", ".jsonl"):
        if out.endswith(ending):
            return out[: -len(ending)]
    return os.path.splitext(out)[0]


def _open(path: str, mode: str):
    """`path` as text, through gzip when it ends in .gz (appending adds a gzip member)."""
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def done_designs(path: str) -> set[str]:
    """Names of the designs already recorded in `path` (none if it does not exist)."""
    if not os.path.exists(path):
        return set()
    with _open(path, "r") as f:
        return {json.loads(line)["design"] for line in f if line.strip()}


def main(args: Args) -> list[dict]:
    """Measure the designs not yet in `args.out`; return their records. Host-only.

    Raises:
      UserError: an unknown design name (before anything is played or loaded).
    """
    unknown = [d for d in args.designs if d not in DESIGNS]
    if unknown:
        raise UserError(f"--designs: unknown {', '.join(unknown)}",
                        f"choose from {', '.join(DESIGNS)}")
    todo = [d for d in args.designs if d not in done_designs(args.out)]
    if not todo:
        return []
    pool_args = args.pool
    pool, index = pool_args.draw()
    groups = judge_eval.group_batches(pool, index)
    epsilons = [pool.epsilon[i] for i in index]
    t0 = time.perf_counter()
    backend = load_model(args.llm.model, args.llm.gguf_file, args.llm.dtype, args.llm.device)
    load_s = time.perf_counter() - t0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    out = []
    for name in todo:
        cfg = dataclasses.replace(args.llm, **DESIGNS[name])
        judge = LLMRanker(cfg, backend=backend, keep_records=None)
        t0 = time.perf_counter()
        rankings = judge.rank_groups(groups)
        wall = time.perf_counter() - t0
        metrics = judge_eval.judge_metrics(rankings, epsilons, {})
        record = {"design": name, **DESIGNS[name], "model": args.llm.model,
                  "gguf_file": args.llm.gguf_file, "dtype": str(backend.dtype),
                  **{k: v for k, v in metrics.items() if k != "kendall_tau_per_group"},
                  **bias_stats(judge.records), **cost_stats(judge.records),
                  "wall_seconds": wall, "load_seconds": load_s, **pool_args.record(),
                  **report.machine()}
        write_prompts(judge.records, args.out, name)
        with _open(args.out, "a") as f:
            f.write(json.dumps(to_jsonable(record)) + "\n")
        lo, hi = record["skill_order_accuracy_ci"]
        print(f"{name}: skill-order accuracy {record['skill_order_accuracy']:.3f} "
              f"[{lo:.3f}, {hi:.3f}], tau {record['kendall_tau']:+.3f}, "
              f"{record['seconds_per_distinct_prompt']:.2f} s per distinct prompt "
              f"({record['distinct_prompts']}), {wall:.0f} s", file=sys.stderr, flush=True)
        out.append(record)
    return out


if __name__ == "__main__":
    report_user_errors(lambda argv: main(parse_args(Args, argv)))
