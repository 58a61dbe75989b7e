"""Scripted test doubles: a judge and a refinement advisor that answer from a script.

`ScriptedRanker` is a `Ranker` with a fixed order or a callable per group; `ScriptedAdvisor`
an `Advisor` that answers with fixed texts in turn, parsed and logged as `LLMAdvisor`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sailor_jax.alignment.refinement import Suggestion, advise
from sailor_jax.game.reward import RewardSpec
from sailor_jax.judges.base import Ranker, group_size
from sailor_jax.logging import JsonlSink
from sailor_jax.types import Ranking, TrajectoryBatch

ScriptResult = Ranking | Sequence[int] | np.ndarray | None
"""What a scripted judge may return for a group: a full Ranking, an order, or None."""


def to_ranking(result: ScriptResult, m: int) -> Ranking | None:
    """A script's answer as a validated `Ranking` of `m` trajectories (or None).

    Raises:
      ValueError: the answer does not have `m` entries.
    """
    if result is None:
        return None
    ranking = result if isinstance(result, Ranking) else Ranking(order=np.asarray(result))
    if len(ranking.order) != m:
        raise ValueError(f"scripted ranking has {len(ranking.order)} entries, group has {m}")
    return Ranking(order=np.asarray(ranking.order, dtype=np.int32), scores=ranking.scores,
                   pairwise_prob=ranking.pairwise_prob)


class ScriptedRanker(Ranker):
    """A deterministic judge: a fixed order (used for every group) or a callable
    `batch -> Ranking | order | None`; `calls` counts the groups judged so far."""

    def __init__(self, script: Sequence[int] | np.ndarray | Callable[[TrajectoryBatch],
                 ScriptResult], name: str = "scripted") -> None:
        self.name = name
        self.calls = 0
        if callable(script):
            self._fn = script
        else:
            fixed = Ranking(order=np.asarray(script, dtype=np.int32))
            self._fn = lambda batch: fixed

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        out = []
        for batch in groups:
            self.calls += 1
            out.append(to_ranking(self._fn(batch), group_size(batch)))
        return out


class ScriptedAdvisor:
    """An `Advisor` that answers with the fixed `answers` in turn, cycling; parsing and
    logging (`log_path`, `records`) as `LLMAdvisor`."""

    def __init__(self, answers: Sequence[str], log_path: str | None = None) -> None:
        self._answers, self._next = list(answers), 0
        self._sink = JsonlSink(log_path, keep=None)
        self.records = self._sink.records

    def generate(self, prompts: Sequence[str]) -> list[str]:
        out = [self._answers[(self._next + k) % len(self._answers)] for k in range(len(prompts))]
        self._next += len(prompts)
        return out

    def suggest(self, spec: RewardSpec, thetas: Sequence, stats: Sequence[dict],
                context: dict | None = None) -> list[tuple[Suggestion | None, dict]]:
        return advise(self.generate, self._sink, spec, thetas, stats, context)
