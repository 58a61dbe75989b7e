"""Pointwise LLM judging: one 1-9 rating per trajectory, read from next-token probabilities.

Host-only, NumPy (the model runs through `hf_backend.LLMBackend`; `LLMRanker` orchestrates).

Each trajectory is shown alone and the model is asked for a rating on `prompts.
POINTWISE_RATINGS` (1..9) after the answer prefix "Rating:". With `p_r` the full-vocabulary
next-token probability of rating `r`'s label token, the trajectory's score is the expected
rating under the distribution restricted to the labels,

    score = sum_r r * p_r / sum_r p_r,        label mass = sum_r p_r,

(the label mass is logged; ~0 means the model does not answer with a digit there). The ranking
sorts by score (ties: lower index first) and its `pairwise_prob` is a logistic
(Bradley-Terry-style) link on rating differences,

    pairwise_prob[i, j] = sigmoid((score_i - score_j) / TEMPERATURE),

so `pairwise_prob[i, j] > 0.5` iff `score_i > score_j`, `P + P.T = 1` and the diagonal is 0.5;
the temperature (in rating points) sets how confident a one-point difference is (T = 1: 0.73).
Every trajectory is judged on its own, so there is no position bias by construction, and a group
of M costs `M` prompts instead of the pairwise `M (M - 1)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.special

from sailor_jax.judges import prompts
from sailor_jax.judges.hf_backend import LLMBackend
from sailor_jax.types import Ranking

ANSWER_FORMS = ((prompts.POINTWISE_ANSWER_PREFIX, " {}"),
                (prompts.POINTWISE_ANSWER_PREFIX + " ", "{}"))
"""(answer prefix, label format) tried in order by `rating_labels`: " 7" after "Rating:", else
"7" after "Rating: "."""
TEMPERATURE = 1.0
"""Logistic scale of `rating_ranking`'s `pairwise_prob`, in rating points."""


def _single_token(backend: LLMBackend, prompt: str, label: str) -> int | None:
    """The id `t` with `ids(prompt + label) == ids(prompt) + [t]`, else None."""
    base, full = list(backend.token_ids(prompt)), list(backend.token_ids(prompt + label))
    if len(full) == len(base) + 1 and full[: len(base)] == base:
        return int(full[-1])
    return None


def rating_labels(backend: LLMBackend) -> tuple[str, tuple[int, ...]]:
    """Find the answer prefix and the token id of each rating label.

    Host-only. A form of `ANSWER_FORMS` is accepted when, for every rating `r`, the rendered
    prompt followed by the label tokenises as the prompt's tokens plus exactly one token (the
    tokenise-the-difference check of `LLMBackend.label_token_id`, made strict) and the nine
    tokens are distinct.

    Args:
      backend: the loaded tokenizer and model, or an `EndpointBackend` (tokenized here or by
        its server; on its chat API the labels' texts "1".."9" instead of ids, and the chat
        API drops the prefix).

    Returns:
      `(answer_prefix, ids)`: the prefix to end prompts with and `len(POINTWISE_RATINGS)` ids.

    Raises:
      ValueError: no form gives every rating a single distinct token.
    """
    if getattr(backend, "api", None) == "chat":  # an endpoint's chat API: labels as text
        return ANSWER_FORMS[0][0], tuple(str(r) for r in prompts.POINTWISE_RATINGS)
    tried = []
    for prefix, label_format in ANSWER_FORMS:
        prompt = backend.render_chat(prompts.SYSTEM_PROMPT, prompts.pointwise_user_message("x"),
                                     prefix)
        ids = [_single_token(backend, prompt, label_format.format(r))
               for r in prompts.POINTWISE_RATINGS]
        if None not in ids and len(set(ids)) == len(ids):
            return prefix, tuple(int(i) for i in ids)
        tried.append(f"{prefix!r} + {label_format.format('<r>')!r}: ids {ids}")
    raise ValueError("pointwise mode needs each rating 1-9 to be one distinct token after the "
                     f"answer prefix; this tokenizer gives {'; '.join(tried)}")


def prompt_jobs(sizes: Sequence[int]) -> np.ndarray:
    """`int64[N, 2]` rows `(group, trajectory)`, group-major, one per prompt.

    Host-only. Groups with fewer than 2 trajectories get no prompt (nothing to rank).
    """
    rows = [(g, i) for g, m in enumerate(sizes) if m >= 2 for i in range(m)]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def expected_rating(logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected rating and label mass of each prompt from its label log-probabilities.

    Host-only.

    Args:
      logp: `float[N, R]` full-vocabulary next-token log-probabilities of the labels of
        `prompts.POINTWISE_RATINGS` (column r - 1 = rating r).

    Returns:
      `(score float64[N] in [1, R], mass float64[N] in [0, 1])`; score is NaN where the mass
      underflows to 0.
    """
    p = np.exp(np.asarray(logp, dtype=np.float64))
    mass = p.sum(axis=1)
    ratings = np.asarray(prompts.POINTWISE_RATINGS, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = (p @ ratings) / mass
    return score, mass


def rating_ranking(scores: np.ndarray, temperature: float = TEMPERATURE) -> Ranking | None:
    """Sort trajectories by score; pairwise_prob = the logistic link of the module docstring.

    Host-only.

    Args:
      scores: `float[M]` expected ratings (higher is better).
      temperature: logistic scale in rating points (> 0).

    Returns:
      `Ranking(order int32[M], scores float32[M], pairwise_prob float32[M, M])` (ties keep the
      lower index first), or None when a score is not finite (the judge failed on the group).
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)):
        return None
    order = np.argsort(-scores, kind="stable").astype(np.int32)
    prob = scipy.special.expit((scores[:, None] - scores[None, :]) / temperature)
    return Ranking(order=order, scores=scores.astype(np.float32),
                   pairwise_prob=prob.astype(np.float32))


def _num(x: float) -> float | None:
    """`float(x)`, or None where not finite (keeps the JSONL log strict JSON)."""
    return float(x) if np.isfinite(x) else None


def prompt_records(
    jobs: np.ndarray, texts: Sequence[str], tokens: Sequence[int], logp: np.ndarray,
    seconds: np.ndarray,
) -> list[dict[str, Any]]:
    """One "pointwise_prompt" log record per prompt. Host-only.

    Args:
      jobs: `int[N, 2]` `(group, trajectory)` rows of `prompt_jobs`.
      texts: the `N` rendered prompts.
      tokens: `N` prompt token counts.
      logp: `float[N, R]` label log-probabilities (column r - 1 = rating r).
      seconds: `float[N]` model seconds per prompt.

    Returns:
      Records with the prompt, `prompt_tokens`, `logp` (per rating, as logged the source of
      truth for `label_mass` and `score`), `label_mass`, `score` and `seconds`.
    """
    score, mass = expected_rating(logp)
    records = []
    for k, (g, i) in enumerate(np.asarray(jobs).tolist()):
        record = {"event": "pointwise_prompt", "group": g, "trajectory": i}
        record |= {"prompt": texts[k], "prompt_tokens": int(tokens[k])}
        record |= {"logp": [_num(x) for x in logp[k]], "label_mass": _num(mass[k])}
        records.append(record | {"score": _num(score[k]), "seconds": float(seconds[k])})
    return records


def group_rankings(
    sizes: Sequence[int], jobs: np.ndarray, score: np.ndarray, mass: np.ndarray,
) -> tuple[list[Ranking | None], list[dict[str, Any]]]:
    """Rank each group by its trajectories' scores. Host-only.

    Args:
      sizes: `M_g` of each group.
      jobs: `int[N, 2]` `(group, trajectory)` rows of `prompt_jobs`.
      score: `float[N]` expected rating of each prompt.
      mass: `float[N]` label mass of each prompt.

    Returns:
      Per group the ranking (`Ranking(order=arange(M))` for groups of 0 or 1 trajectories,
      None where a score is not finite) and a "group" log record (judged groups only).
    """
    out: list[Ranking | None] = [Ranking(order=np.arange(m, dtype=np.int32)) for m in sizes]
    records = []
    for g, m in enumerate(sizes):
        rows = jobs[:, 0] == g
        if not rows.any():
            continue
        per_traj = np.full(m, np.nan)
        per_traj[jobs[rows, 1]] = score[rows]
        out[g] = ranking = rating_ranking(per_traj)
        records.append({
            "event": "group", "mode": "pointwise", "group": g, "m": m,
            "label_mass_mean": _num(np.mean(mass[rows])),
            "order": None if ranking is None else ranking.order.tolist(),
            "scores": [_num(s) for s in per_traj],
        })
    return out, records


def rank_from_logprobs(
    sizes: Sequence[int], jobs: np.ndarray, texts: Sequence[str], tokens: Sequence[int],
    logp: np.ndarray, seconds: np.ndarray,
) -> tuple[list[Ranking | None], list[dict[str, Any]], float]:
    """Score every prompt, rank every group and build the log records. Host-only.

    Args:
      sizes: `M_g` of each group.
      jobs: `int[N, 2]` rows of `prompt_jobs(sizes)`.
      texts: the `N` rendered prompts.
      tokens: `N` prompt token counts.
      logp: `float[N, R]` label log-probabilities from `LLMBackend.next_token_logprobs`.
      seconds: `float[N]` model seconds per prompt.

    Returns:
      `(rankings, records, mean_label_mass)`: one ranking per group; the "pointwise_prompt"
      records then the "group" records; the mean label mass over all prompts (NaN if none).
    """
    score, mass = expected_rating(logp)
    rankings, group_records = group_rankings(sizes, jobs, score, mass)
    records = prompt_records(jobs, texts, tokens, logp, seconds) + group_records
    return rankings, records, float(np.mean(mass)) if len(mass) else float("nan")
