"""Pairwise LLM verdicts to rankings: the host-side arithmetic of `LLMRanker`'s pairwise mode.

Each judged pair `(a, b)` is shown in both orders; the next-token log-probabilities of the
labels " A" / " B" give `p_first = pA / (pA + pB)` per prompt, combined as
`P(a > b) = 0.5 * (p_first(a first) + 1 - p_first(b first))` (cancels position bias), and a
Bradley-Terry fit turns `P` into a `Ranking`. `pA + pB` before normalising is the "label
mass" (~0 means a wrong label token). Host-only; `llm.LLMRanker` builds the prompts and runs
the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sailor_jax.judges import bradley_terry
from sailor_jax.types import Ranking

BT_L2 = 0.01
"""L2 penalty on the Bradley-Terry log-strengths of a group's fit (`rank_from_pairs`)."""


def label_probabilities(logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(p_first float[N], mass float[N])` from `float[N, 2]` label log-probabilities (A, B).

    A prompt with no label mass (both `-inf`: an endpoint's answer named no label) gets
    `p_first = 0.5`, no preference.
    """
    mass = np.exp(logp).sum(axis=1)
    with np.errstate(invalid="ignore"):
        p_first = 1.0 / (1.0 + np.exp(logp[:, 1] - logp[:, 0]))  # pA / (pA + pB)
    return np.where(mass > 0, p_first, 0.5), mass


def prompt_records(jobs: Sequence[tuple[int, int, int]], texts: Sequence[str],
                   tokens: Sequence[int], logp: np.ndarray, p_first: np.ndarray,
                   mass: np.ndarray, seconds: np.ndarray) -> list[dict[str, Any]]:
    """One "pairwise_prompt" log record per prompt.

    Args:
      jobs: `N` `(group, first shown, second shown)` rows, two per pair (both orders).
      texts: the `N` rendered prompts; tokens: their `N` token counts.
      logp: `float[N, 2]` label log-probabilities, and their `label_probabilities`
        `p_first`, `mass` (`float[N]` each); seconds: `float[N]` model seconds.
    """
    records = []
    for k, (g, first, second) in enumerate(jobs):
        record = {"event": "pairwise_prompt", "group": g, "first": first, "second": second}
        record |= {"prompt": texts[k], "prompt_tokens": tokens[k]}
        record |= {"logp_A": float(logp[k, 0]), "logp_B": float(logp[k, 1])}
        record |= {"label_mass": float(mass[k]), "p_first": float(p_first[k])}
        records.append(record | {"seconds": float(seconds[k])})
    return records


def group_rankings(sizes: Sequence[int], pairs: Sequence[np.ndarray], p_first: np.ndarray,
                   mass: np.ndarray, l2: float = BT_L2
                   ) -> tuple[list[Ranking | None], list[dict[str, Any]]]:
    """Debias both orders, fit Bradley-Terry per group, and one "group" log record each.

    Args:
      sizes: `M_g` of each group.
      pairs: per group the `int[P_g, 2]` judged pairs, in the order of the prompts (each pair
        as two consecutive prompts: a first, then b first).
      p_first, mass: `float[2 * sum P_g]` of `label_probabilities` for all prompts,
        group-major.
      l2: the Bradley-Terry fit's L2 penalty (> 0).

    Returns:
      Per group the ranking (None when it has >= 2 trajectories and no pair could be
      judged, or no prompt of it had any label mass) and its log record.
    """
    out, records, offset = [], [], 0
    for g, (m, group_pairs) in enumerate(zip(sizes, pairs, strict=True)):
        n = 2 * len(group_pairs)
        p, w = p_first[offset: offset + n], mass[offset: offset + n]
        offset += n
        prob = bradley_terry.debiased_prob(p[0::2], p[1::2])
        ranking = bradley_terry.rank_from_pairs(m, group_pairs, prob, l2=l2) \
            if not len(w) or np.any(w > 0) else None
        record = {"event": "group", "mode": "pairwise", "group": g, "m": m}
        record |= {"pairs": group_pairs.tolist(), "prob": [float(x) for x in prob]}
        record["label_mass_mean"] = float(np.mean(w)) if len(w) else None
        record["order"] = None if ranking is None else ranking.order.tolist()
        record["scores"] = None if ranking is None else ranking.scores.tolist()
        out.append(ranking)
        records.append(record)
    return out, records
