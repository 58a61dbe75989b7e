"""Layer 5, judges (host-only): the `Ranker` protocol, oracles, the expert and the LLM judge.

Imports `agents`, `game`, `config` and the foundation modules; importing it never imports torch
or transformers (`LLMRanker` does so when built).
"""

from sailor_jax.judges import bradley_terry
from sailor_jax.judges.base import Ranker, group_size
from sailor_jax.judges.bradley_terry import fit_bradley_terry
from sailor_jax.judges.expert import ExpertRanker
from sailor_jax.judges.hf_backend import LLMBackend
from sailor_jax.judges.llm import LLMRanker
from sailor_jax.judges.oracles import LinearOracleRanker, OutcomeRanker, RandomRanker
from sailor_jax.judges.parsing import parse_ranking, parse_ranking_verbose
from sailor_jax.judges.text import summary_text

__all__ = [
    "ExpertRanker",
    "LLMBackend",
    "LLMRanker",
    "LinearOracleRanker",
    "OutcomeRanker",
    "RandomRanker",
    "Ranker",
    "bradley_terry",
    "fit_bradley_terry",
    "group_size",
    "parse_ranking",
    "parse_ranking_verbose",
    "summary_text",
]
