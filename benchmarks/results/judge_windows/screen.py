"""Screen LLM judge designs on a stored window set (a development probe, not the package's).

    DT=float32 BS=8 python benchmarks/results/judge_windows/screen.py SET.npz GROUPS today,qfirst

Each design renders every window's summary into a prompt; the label log-probabilities give the
expected rating, and other readouts of the same log-probabilities are scored after; accuracy
as `view_ceiling.score_accuracy` (ties 1/2). One JSON line per design, then a line per readout.
"""

import json
import os
import sys
import time

import numpy as np
import torch

from sailor_jax.judges import hf_backend, pointwise, prompts
from sailor_jax.judges.text import summary_text
from sailor_lab import view_ceiling
from sailor_lab.sailor_windows import WindowSet

path, ngroups, designs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
dtype, bs = os.environ.get("DT", "float32"), int(os.environ.get("BS", "8"))
w = WindowSet.load(path)
if ngroups < w.num_groups:
    w = w.select(np.sort(np.random.default_rng(0).choice(w.num_groups, ngroups, replace=False)))
groups = w.groups()
be = hf_backend.load_model(None, None, dtype, "cpu")
prefix, ids = pointwise.rating_labels(be)
S, H, R = prompts.SYSTEM_PROMPT, prompts.STRATEGY_HINTS, prompts.POINTWISE_RUBRIC
Q = ("Rate how well the game was played from 1 (very poor) to 9 (excellent). "
     "Answer with a single digit from 1 to 9.")


def today(t):
    return be.render_chat(S, prompts.pointwise_user_message(t), prefix)


def qfirst(t):
    return be.render_chat(S, f"A game of 2048 is summarised below.\n{H}\n{R}\n{Q}\n\nGame: {t}.",
                          prefix)


DESIGNS = {"today": today, "qfirst": qfirst}
texts = [[summary_text(g, i) for i in range(16)] for g in groups]
saved = {}
for d in designs:
    rendered = [DESIGNS[d](t) for ts in texts for t in ts]
    t0 = time.perf_counter()
    logp, _ = be.next_token_logprobs(rendered, ids, bs)
    dt = (time.perf_counter() - t0) / len(rendered)
    score, mass = pointwise.expected_rating(logp)
    acc = view_ceiling.score_accuracy(w, score.reshape(len(groups), 16))
    a = acc["accuracy"]
    print(json.dumps({"design": d, "dtype": dtype, "bs": bs, "groups": len(groups), "accuracy": a,
                      "ci": acc["accuracy_ci"], "s_per_window": dt,
                      "evidence_per_s": (2 * a - 1) ** 2 / dt, "mass": float(mass.mean()),
                      "threads": torch.get_num_threads()}), flush=True)
    saved[d] = logp
content_free = be.next_token_logprobs([DESIGNS[d]("N/A") for d in designs], ids, 1)[0]
r = np.arange(1, 10)
for k, d in enumerate(designs):
    logp = saved[d]
    p = np.exp(logp) / np.exp(logp).sum(1, keepdims=True)
    pc = np.exp(logp - content_free[k])
    pc = pc / pc.sum(1, keepdims=True)
    reads = {"expected": p @ r, "calibrated": pc @ r,
             "hi_lo": np.log(p[:, 6:].sum(1)) - np.log(p[:, :6].sum(1)),
             "top": logp[:, 8] - logp[:, 6], "l7": logp[:, 6], "l8": logp[:, 7], "l6": logp[:, 5]}
    for name, sc in reads.items():
        acc = view_ceiling.score_accuracy(w, sc.reshape(len(groups), 16))
        print(d, name, round(acc["accuracy"], 3), [round(x, 3) for x in acc["accuracy_ci"]])
