"""Judge designs for SmolLM2 / Qwen on the strong-play pool and the graded pool (exploration).

    python benchmarks/results/judge_design_strong/designs.py DESIGN POOLS [--qwen] [--out F]

DESIGN is `<summary>[+<prompt>]` (`--mode pairwise`: the package's pairwise prompt, both
orders, with that summary; `--groups N`: the first N groups only): the summary each game is
shown as (`today`: the package's `summary_text`; `rich`, `stage`, `lean`, ... below) and the
prompt around it (default: the package's pointwise rubric; `plain`: no hints or rubric;
`far`: "how strong is the player").
POOLS: comma-separated `strong1`, `strong2` (the strong-play pool, seed 1 or 2, both views) and
`graded1`, `graded2` (the graded pool, 32 groups). One JSON line per (design, pool, view) is
appended to `--out`: accuracy with its 95% interval, Kendall tau, each group's expected
ratings (`group_scores`, so designs can be combined afterwards), the label bias
(`judge_design.bias_stats`), the cost (`judge_design.cost_stats`) and the machine. The designs
patch the package's summary and prompt functions in this process only.
"""
import argparse
import gzip
import importlib.util
import json
import os
import sys
import time

import numpy as np

import sailor_jax.judges.llm as llm_mod
from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import prompts, text
from sailor_jax.judges.hf_backend import load_model
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.logging import to_jsonable
from sailor_lab import judge_eval, report
from sailor_lab.strong_pool import VIEWS, StrongPoolArgs, build_strong_pool, draw_groups

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "judge_design", os.path.join(HERE, "..", "..", "judge_design.py"))
judge_design = importlib.util.module_from_spec(spec)
sys.modules["judge_design"] = judge_design
spec.loader.exec_module(judge_design)
CORNERS = [0, 3, 12, 15]


def mono(board):
    g = board.reshape(4, 4).astype(int)
    s = 0.0
    for line in list(g) + list(g.T):
        d = np.diff(line)
        inc, dec = (d > 0).sum(), (d < 0).sum()
        s += 1.0 if inc + dec == 0 else abs(inc - dec) / (inc + dec)
    return s / 8


def stats(batch, i):
    n = int(batch.lengths[i])
    b = np.asarray(batch.boards[i])[: n + 1].astype(int)
    top = b.max(1)
    corner = np.isin(b[:, CORNERS], top[:, None]).any(1) & (top > 0)
    fin = b[n]
    return dict(n=n, corner=float(corner[1:].mean()) if n else 0.0,
                mono=float(np.mean([mono(x) for x in b[1:]])) if n else mono(b[0]),
                tsum=int(np.where(fin > 0, 2 ** fin, 0).sum()), fin=fin)


def rich(batch, i):
    s = stats(batch, i)
    return (text.summary_text(batch, i) + f", largest tile in a corner on {100 * s['corner']:.0f}% "
            f"of moves, rows and columns {100 * s['mono']:.0f}% in order, tiles on the board "
            f"summing to {s['tsum']}")


def stage(batch, i):
    s = stats(batch, i)
    ending = "still going" if bool(batch.truncated[i]) else "game over"
    return (f"{s['n']} moves, largest tile {1 << int(s['fin'].max())}, tiles on the board "
            f"summing to {s['tsum']}, largest tile in a corner on {100 * s['corner']:.0f}% of "
            f"moves, rows and columns {100 * s['mono']:.0f}% in order, "
            f"{int((s['fin'] == 0).sum())} of 16 cells empty at the end, {ending}")


def lean(batch, i):
    s = stats(batch, i)
    return (f"largest tile {1 << int(s['fin'].max())}, tiles on the board summing to "
            f"{s['tsum']}, largest tile in a corner on {100 * s['corner']:.0f}% of moves, rows "
            f"and columns {100 * s['mono']:.0f}% in order")


def _often(share):
    return ("on every move" if share >= 1 else "on most moves" if share >= 0.75
            else "on some moves" if share >= 0.25 else "rarely")


def flags(batch, i):
    s = stats(batch, i)
    order = ("mostly in order" if s["mono"] >= 0.75 else "partly in order" if s["mono"] >= 0.5
             else "out of order")
    return (text.summary_text(batch, i) + f", the largest tile in a corner {_often(s['corner'])},"
            f" rows and columns {order}")


SUMMARIES = {"flags": flags, "today": text.summary_text, "rich": rich, "stage": stage, "lean": lean}
RATE = ("Rate how well the game was played from 1 (very poor) to 9 (excellent). "
        "Answer with a single digit from 1 to 9.")
PROMPTS = {
    "": prompts.pointwise_user_message,
    "plain": lambda t: f"A game of 2048 is summarised below.\n\nGame: {t}.\n\n{RATE}",
    "far": lambda t: (f"A stretch of a game of 2048 is summarised below.\n{prompts.STRATEGY_HINTS}"
                      f"\n\nGame: {t}.\n\nHow strong is the player? Rate from 1 (a beginner) to "
                      "9 (a master). Answer with a single digit from 1 to 9."),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("design")
    ap.add_argument("pools")
    ap.add_argument("--qwen", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "designs.jsonl.gz"))
    ap.add_argument("--mode", default="pointwise", choices=("pointwise", "pairwise"))
    ap.add_argument("--groups", type=int, default=32)
    a = ap.parse_args()
    summary, _, style = a.design.partition("+")
    llm_mod.summary_text = SUMMARIES[summary]
    prompts.pointwise_user_message = PROMPTS[style]
    if a.qwen:
        folder = os.path.expanduser("~/.cache/sailor_jax/qwen2.5-coder-1.5b")
        model, gguf, dtype = folder, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "bfloat16"
    else:
        model, gguf, dtype = None, None, "auto"
    backend = load_model(model, gguf, dtype, "auto")
    cfg = LLMRankerConfig(model=model, gguf_file=gguf, dtype=dtype, mode=a.mode,
                          batch_size=8, max_prompt_tokens=1536)
    for pool_name in a.pools.split(","):
        seed = int(pool_name[-1])
        if pool_name.startswith("strong"):
            args = StrongPoolArgs(seed=seed)
            pool = build_strong_pool(args)
            cases = [(view, *(x[: a.groups] for x in draw_groups(pool, args, view)))
                     for view in VIEWS]
        else:
            pargs = judge_eval.PoolArgs(groups=a.groups, seed=seed)
            pool, index = pargs.draw()
            cases = [("graded", judge_eval.group_batches(pool, index), index,
                      [pool.epsilon[i] for i in index])]
        for view, groups, _, truth in cases:
            judge = LLMRanker(cfg, backend=backend, keep_records=None)
            t0 = time.perf_counter()
            rankings = judge.rank_groups(groups)
            wall = time.perf_counter() - t0
            m = judge_eval.judge_metrics(rankings, truth, {})
            row = {"design": a.design + ("" if a.mode == "pointwise" else ":pairwise"),
                   "groups": len(groups), "model": "qwen2.5-coder-1.5b" if a.qwen else "smollm2",
                   "pool": pool_name, "view": view,
                   **{k: v for k, v in m.items() if k != "kendall_tau_per_group"},
                   **judge_design.bias_stats(judge.records),
                   **judge_design.cost_stats(judge.records),
                   "wall_seconds": wall, "seconds_per_group": wall / len(groups),
                   "example_prompt": judge.records[0]["prompt"],
                   "group_scores": [None if r is None or r.scores is None
                                    else np.asarray(r.scores).tolist()
                                    for r in rankings],
                   **report.machine()}
            with gzip.open(a.out, "at", encoding="utf-8") as f:
                f.write(json.dumps(to_jsonable(row)) + "\n")
            lo, hi = m["skill_order_accuracy_ci"]
            print(f"{a.design} {row['model']} {pool_name} {view}: "
                  f"{m['skill_order_accuracy']:.3f} [{lo:.3f}, {hi:.3f}] {wall:.0f} s",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
