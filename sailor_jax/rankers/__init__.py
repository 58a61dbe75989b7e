"""Judges of trajectories (host-only): the `Ranker` protocol, oracles and the LLM judge.

Importing this package never imports torch or transformers; `LLMRanker` does so when built.
"""

from sailor_jax.rankers import bradley_terry
from sailor_jax.rankers.base import Ranker, ScriptedRanker, group_size
from sailor_jax.rankers.bradley_terry import fit_bradley_terry
from sailor_jax.rankers.expert import ExpertRanker
from sailor_jax.rankers.hf_backend import LLMBackend
from sailor_jax.rankers.llm import LLMRanker
from sailor_jax.rankers.oracles import LinearOracleRanker, OutcomeRanker
from sailor_jax.rankers.parsing import parse_ranking, parse_ranking_verbose
from sailor_jax.rankers.text import FORMAT_LEGEND, board_text, trajectory_text

__all__ = [
    "ExpertRanker",
    "FORMAT_LEGEND",
    "LLMBackend",
    "LLMRanker",
    "LinearOracleRanker",
    "OutcomeRanker",
    "Ranker",
    "ScriptedRanker",
    "board_text",
    "bradley_terry",
    "fit_bradley_terry",
    "group_size",
    "parse_ranking",
    "parse_ranking_verbose",
    "trajectory_text",
]
