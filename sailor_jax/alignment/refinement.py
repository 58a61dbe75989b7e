"""LLM-guided reward refinement: when the judge and R_theta agree but the agent stalls. Host-only.

Stretch goal 5.2 of the seed plan and the "active" step of Zeng et al. (2024), "Learning Reward
for Robot Skills Using Large Language Models via Self-Alignment". Preference-based updates stop
once R_theta orders every sampled trajectory as the judge does (no discordant pairs), even when
the agent's game score has stopped improving. Refinement then asks the LLM a short question:
which single feature weight should be raised or lowered? The answer is parsed robustly
(`suggestion.parse_suggestion`); an invalid answer is logged and ignored. A valid one makes the
search interval of that weight one-sided, `[w + min_step, w + max_step]` (raise) or
`[w - max_step, w - min_step]` (lower), within the bounds, with every other weight fixed, and
the usual Bayesian-optimisation update picks the point of that interval that best keeps
R_theta's agreement with the judge on all judged pairs (accepted when the weighted pair error
does not increase).

Off by default (`RefineConfig.enabled`); `loop.SailorConfig.refine` switches it on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sailor_jax.alignment.preferences import all_judged_pairs
from sailor_jax.alignment.suggestion import Suggestion, parse_suggestion
from sailor_jax.alignment.updates import UpdateResult, update_theta
from sailor_jax.config import AlignmentConfig, LLMRankerConfig, RefineConfig
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges import hf_backend
from sailor_jax.judges.base import Ranker
from sailor_jax.judges.hf_backend import LLMBackend
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.logging import JsonlSink
from sailor_jax.types import Ranking

SYSTEM_PROMPT = "You are an expert 2048 player who designs reward functions for game agents."

ANSWER_PREFIX = "I would"
"""The assistant turn starts with this; the parsed answer is prefix + generated text. Without
it SmolLM2-135M answered "The agent should choose score_gain ..." (no direction); with it,
"I would choose to raise the score_gain feature." (measured on the embedded model)."""
MAX_NEW_TOKENS = 40
"""Most tokens the advisor may generate after `ANSWER_PREFIX`."""


def refinement_prompt(spec: RewardSpec, theta, stats: dict[str, Any]) -> str:
    """The advisor's user message: features, current weights, recent statistics. Host-only.

    Args:
      spec: names, bounds and tunable mask (only tunable features may be named).
      theta: `float[F]` current weights.
      stats: recent statistics, e.g. `{"game_score_per_iteration": [...],
        "mean_feature_per_move": {name: value}}`; rendered one per line.
    """
    tunable = [n for n, t in zip(spec.names, spec.tunable, strict=True) if t]
    weights = "\n".join(f"  {n}: {float(w):+.3f}" + ("" if n in tunable else " (fixed)")
                        for n, w in zip(spec.names, np.asarray(theta), strict=True))
    lines = []
    for key, value in stats.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:+.3f}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            value = ", ".join(f"{v:.0f}" if isinstance(v, float) else str(v) for v in value)
        lines.append(f"  {key.replace('_', ' ')}: {value}")
    return (
        "An agent learns 2048 from the reward R = sum over features of weight * feature.\n"
        f"Current weights:\n{weights}\n"
        f"Recent statistics:\n" + "\n".join(lines) + "\n"
        "The reward already orders the agent's games like an expert judge, but the game score "
        "has stopped improving. Which single weight should change to help the agent reach "
        "larger tiles? Choose one of: " + ", ".join(tunable) + ".\n"
        "Answer with one line: raise <feature> or lower <feature>."
    )


def one_sided_box(theta, suggestion: Suggestion, spec: RewardSpec, cfg: RefineConfig
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The search box of a refinement step: one-sided for the suggested weight, fixed elsewhere.

    Returns:
      `(lower, upper)` `float64[F]`; for the suggested entry `[w + min_step, w + max_step]`
      (raise) or `[w - max_step, w - min_step]` (lower), clipped to the spec bounds (empty,
      lower > upper, when the weight is already within `min_step` of its bound); every other
      entry is pinned to its current value.
    """
    theta = np.asarray(theta, np.float64)
    lo, hi = theta.copy(), theta.copy()
    k, w = suggestion.index, theta[suggestion.index]
    if suggestion.direction > 0:
        lo[k], hi[k] = w + cfg.min_step, min(w + cfg.max_step, spec.upper[k])
    else:
        lo[k], hi[k] = max(w - cfg.max_step, spec.lower[k]), w - cfg.min_step
    return lo, hi


def refine_theta(theta, Phi, ranking: Ranking, suggestion: Suggestion, spec: RewardSpec,
                 alignment: AlignmentConfig, cfg: RefineConfig,
                 rng: np.random.Generator | int) -> UpdateResult:
    """Move the suggested weight into its one-sided interval, keeping agreement with the judge.

    Bayesian optimisation (`alignment.updates.update_theta` with method "bo", the objective "error")
    over the one-sided interval of the suggested weight only, on all judged pairs; accepted
    when the weighted pair error does not increase (ties accepted: the move is the point).

    Args:
      theta: `float[F]` current weights; Phi: `float[M, F]` trajectory feature sums;
      ranking: the judge's ranking of the `M` trajectories; suggestion: the parsed advice;
      spec, alignment, cfg: bounds, BO budget, step sizes; rng: generator or seed.

    Returns:
      `UpdateResult` (theta unchanged when rejected or when the interval is empty).
    """
    bo = dataclasses.replace(alignment, method="bo", objective="error", trust_region=None)
    box = one_sided_box(theta, suggestion, spec, cfg)
    result = update_theta(theta, Phi, all_judged_pairs(ranking), spec, bo, rng, box=box,
                          accept_ties=True)
    k = suggestion.index
    if box[0][k] > box[1][k]:
        verb, bound = ("raise", spec.upper[k]) if suggestion.direction > 0 else (
            "lower", spec.lower[k])
        result = dataclasses.replace(result, message=(
            f"cannot {verb} {suggestion.feature}: {float(np.asarray(theta)[k]):+.3f} is within "
            f"min_step={cfg.min_step} of its bound {bound:+.3f}; theta unchanged"))
    return result


@runtime_checkable
class Advisor(Protocol):
    """Answers "which single weight should change?" (`LLMAdvisor`)."""

    def suggest(self, spec: RewardSpec, thetas: Sequence, stats: Sequence[dict],
                context: dict | None = None) -> list[tuple[Suggestion | None, dict]]:
        """Ask once per `(theta, stats)` pair (`S` pairs, `float[F]` thetas). Host-only.

        Returns:
          `S` pairs `(Suggestion or None, record)`; a record (also logged) has the `context`
          keys, "prompt", "answer", "suggestion" (dict or None), "invalid_reason", "seconds".
        """
        ...


def advise(generate: Callable[[list[str]], list[str]], sink: JsonlSink, spec: RewardSpec,
           thetas: Sequence, stats: Sequence[dict], context: dict | None = None
           ) -> list[tuple[Suggestion | None, dict]]:
    """`Advisor.suggest` with answers from `generate(prompts)`, records written to `sink`."""
    prompts = [refinement_prompt(spec, th, st) for th, st in zip(thetas, stats, strict=True)]
    t0 = time.perf_counter()
    answers = generate(prompts)
    seconds = (time.perf_counter() - t0) / max(1, len(prompts))
    out = []
    for prompt, answer in zip(prompts, answers, strict=True):
        suggestion, reason = parse_suggestion(answer, spec)
        record = {**(context or {}), "prompt": prompt, "answer": answer,
                  "suggestion": dataclasses.asdict(suggestion) if suggestion else None,
                  "invalid_reason": reason or None, "seconds": seconds}
        sink.write(record)
        out.append((suggestion, record))
    return out


class LLMAdvisor:
    """An `Advisor` that asks a causal LM which weight to change (greedy generation). Host-only.

    Args:
      backend: the loaded model (`make_advisor`: the LLM judge's, or the model it names).
      log_path: JSONL file every prompt, answer and parse result is appended to (None: only
        the in-memory `records`).

    Attributes:
      backend: the loaded `LLMBackend`.
      records: every log record so far, newest last.
    """

    def __init__(self, backend: LLMBackend, log_path: str | None = None) -> None:
        self.backend, self.log_path = backend, log_path
        self._sink = JsonlSink(log_path, keep=None)
        self.records = self._sink.records

    def generate(self, prompts: Sequence[str]) -> list[str]:
        """Greedy answers (`ANSWER_PREFIX` + generated text) to the user messages `prompts`."""
        rendered = [self.backend.render_chat(SYSTEM_PROMPT, p, ANSWER_PREFIX) for p in prompts]
        texts, _ = self.backend.generate(rendered, MAX_NEW_TOKENS, max(1, len(rendered)))
        return [ANSWER_PREFIX + t for t in texts]

    def suggest(self, spec: RewardSpec, thetas: Sequence, stats: Sequence[dict],
                context: dict | None = None) -> list[tuple[Suggestion | None, dict]]:
        """See `Advisor.suggest`; the answers come from the LM (logged)."""
        return advise(self.generate, self._sink, spec, thetas, stats, context)


def make_advisor(llm: LLMRankerConfig, ranker: Ranker | None = None,
                 log_path: str | None = None) -> Advisor:
    """Build the refinement LLM: the judge's loaded model when the judge is an LLM, else the
    model `llm` (the run's `ranker.llm`) names, loaded in process. Host-only.

    `log_path`: the advisor's JSONL file, or None.

    Raises:
      ImportError, ValueError: as `hf_backend.load_model`, when a model is loaded.
    """
    if isinstance(ranker, LLMRanker):
        return LLMAdvisor(ranker.backend, log_path)
    return LLMAdvisor(hf_backend.load_model(llm.model, llm.gguf_file, llm.dtype, llm.device),
                      log_path)
