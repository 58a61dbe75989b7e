"""What SmolLM2's own state holds of a window's skill: a linear readout of its last hidden state.

    python benchmarks/results/judge_windows/state_probe.py --start theta0 --json

The model reads each window's summary (`judges.text.summary_text`) in a short prompt (the
system prompt, then "A game of 2048: <summary>."), and the hidden state of the last token
(the last layer) is the window's view; a linear score of it is fitted on the development
windows' (agent, reference) pairs by logistic regression on differences (as
`sailor_lab.view_ceiling.fit_pairwise_linear`, standardised, L2 with C = 0.01) and scored on
the confirmation windows. A development probe, not a judge of the package: it shows whether
the model's reading keeps what its 1-9 rating loses.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time

import numpy as np

from sailor_jax.cli import parse_args
from sailor_jax.judges import hf_backend, prompts
from sailor_jax.judges.text import summary_text
from sailor_lab import report, view_ceiling
from sailor_lab.sailor_windows import WindowSet

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclasses.dataclass(frozen=True)
class Args:
    """Linear readout of SmolLM2's state on the stored windows."""

    start: str = "theta0"
    """The start whose groups are read (theta0, pays_for_dying, or all)."""
    c: float = 0.01
    """Inverse L2 strength of the logistic regression."""
    batch: int = 16
    """Prompts per forward pass."""
    json: bool = False
    """Print the record as one JSON line."""


def states(backend, windows: WindowSet, batch: int) -> tuple[np.ndarray, float]:
    """`float32[G, M, D]` last-layer state at the last prompt token; seconds per window."""
    import torch

    texts = [summary_text(g, i) for g in windows.groups() for i in range(g.lengths.shape[0])]
    rendered = [backend.render_chat(prompts.SYSTEM_PROMPT, f"A game of 2048: {t}.", "")
                for t in texts]
    out, t0 = [], time.perf_counter()
    with torch.inference_mode():
        for k in range(0, len(rendered), batch):
            ids, mask = backend._encode(rendered[k:k + batch])
            position_ids = (mask.long().cumsum(-1) - 1).clamp(min=0)
            hidden = backend.model(input_ids=ids, attention_mask=mask, position_ids=position_ids,
                                   output_hidden_states=True).hidden_states[-1]
            out.append(hidden[:, -1, :].float().numpy())
    seconds = (time.perf_counter() - t0) / len(rendered)
    m = int(windows.batch.lengths.shape[1])
    return np.concatenate(out).reshape(windows.num_groups, m, -1), seconds


def main(args: Args) -> dict:
    sets = {name: WindowSet.load(os.path.join(HERE, f"{name}.npz"))
            for name in ("development", "confirmation")}
    if args.start != "all":
        sets = {k: w.select(w.start == args.start) for k, w in sets.items()}
    backend = hf_backend.load_model(None, None, "float32", "cpu")
    (x_dev, s_dev), (x_conf, s_conf) = (states(backend, w, args.batch) for w in sets.values())
    dev, conf = sets["development"], sets["confirmation"]
    from sklearn.linear_model import LogisticRegression

    flat = x_dev.reshape(-1, x_dev.shape[2])
    mean, scale = flat.mean(0), flat.std(0) + 1e-6
    diffs, labels = view_ceiling._cross_pairs(dev, (x_dev - mean) / scale)
    diffs, labels = np.concatenate([diffs, -diffs]), np.concatenate([labels, 1 - labels])
    w = LogisticRegression(fit_intercept=False, C=args.c, max_iter=3000).fit(diffs, labels)
    score = lambda x: ((x - mean) / scale) @ w.coef_[0]  # noqa: E731
    record = {"start": args.start, "c": args.c,
              "development": view_ceiling.score_accuracy(dev, score(x_dev))["accuracy"],
              **view_ceiling.score_accuracy(conf, score(x_conf)),
              "groups": [dev.num_groups, conf.num_groups],
              "seconds_per_window": (s_dev + s_conf) / 2, **report.machine()}
    print(json.dumps(record) if args.json else record, file=sys.stdout, flush=True)
    return record


if __name__ == "__main__":
    main(parse_args(Args, sys.argv[1:]))
