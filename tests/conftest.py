"""Shared pytest fixtures.

- `tiny_llm_dir`: a tiny random Llama + byte-level BPE tokenizer saved with `save_pretrained`
  to a session temp folder (built offline by `llm_fixtures.build_tiny_llm`, ~2 s), for
  testing the real `LLMRanker` loading and scoring path without downloading weights.

The `slow` and `gpu` markers are registered in pyproject.toml.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Folder holding the tiny offline causal LM (config, weights, tokenizer)."""
    from llm_fixtures import build_tiny_llm

    return build_tiny_llm(str(tmp_path_factory.mktemp("tiny_llm")))
