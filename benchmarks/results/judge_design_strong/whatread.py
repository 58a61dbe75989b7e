"""What SmolLM2's rating follows in windows: Spearman correlation of its expected rating with
each window statistic and with the player's skill, per summary design (output: whatread.txt).

    python benchmarks/results/judge_design_strong/whatread.py

64 windows of the strong development pool (every 1st of each run of P // 64), one group.
"""
import importlib.util
import os
import sys

import jax
import numpy as np
import scipy.stats

import sailor_jax.judges.llm as llm_mod
from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges.hf_backend import load_model
from sailor_jax.judges.llm import LLMRanker
from sailor_lab.strong_pool import StrongPoolArgs, build_strong_pool

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("designs", os.path.join(HERE, "designs.py"))
D = importlib.util.module_from_spec(spec)
sys.modules["designs"] = D
spec.loader.exec_module(D)


def main():
    backend = load_model(None, None, "auto", "auto")
    cfg = LLMRankerConfig(mode="pointwise", batch_size=8, max_prompt_tokens=1536)
    pool = build_strong_pool(StrongPoolArgs(seed=1))
    n = 64
    idx = np.arange(0, len(pool.player), len(pool.player) // n)[:n]
    batch = jax.tree.map(lambda x: np.asarray(x)[idx], pool.windows)
    st = [D.stats(batch, i) for i in range(n)]
    feats = {"points": batch.score, "maxtile": np.array([s["fin"].max() for s in st]),
             "tsum": np.array([s["tsum"] for s in st]),
             "corner": np.array([s["corner"] for s in st]),
             "mono": np.array([s["mono"] for s in st]),
             "empty": np.array([(s["fin"] == 0).sum() for s in st]),
             "skill": -pool.skill_rank[idx]}
    for design in ("today", "stage", "lean"):
        llm_mod.summary_text = D.SUMMARIES[design]
        judge = LLMRanker(cfg, backend=backend, keep_records=None)
        judge.rank_groups([batch])
        score = np.array([r["score"] for r in judge.records
                          if r.get("event") == "pointwise_prompt"])
        print(design, {k: round(float(scipy.stats.spearmanr(score, v).statistic), 2)
                       for k, v in feats.items()}, flush=True)


if __name__ == "__main__":
    main()
