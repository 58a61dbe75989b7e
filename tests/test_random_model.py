"""`sailor_lab.random_model`: a judge model of a published size with random weights, and a tokenizer
trained here, saved and loaded back through the judge's real path (`hf_backend.load_model`)."""

from __future__ import annotations

import numpy as np
import pytest
from llm_fixtures import random_games

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import LLMRanker, hf_backend
from sailor_lab.random_model import (
    SIZES,
    prompt_corpus,
    qwen_config,
    save_random_model,
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    batch = random_games(6, 100, seed=5)
    folder = str(tmp_path_factory.mktemp("random_model"))
    return batch, save_random_model(folder, "tiny", batch, vocab_size=1024, dtype="float32")


def test_qwen_config_has_the_published_size(saved):
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    config = qwen_config("qwen2.5-1.5b", AutoTokenizer.from_pretrained(saved[1]["folder"]))
    with torch.device("meta"):  # shapes only, no memory
        model = Qwen2ForCausalLM(config)
    params = sum(p.numel() for p in model.parameters())
    assert params == 1_543_714_304  # Qwen2.5-1.5B: 1.54B (tied embeddings)
    assert config.num_key_value_heads == 2 and config.max_position_embeddings == 32768
    with pytest.raises(KeyError):
        qwen_config("qwen9", None)


def test_saved_model_loads_with_the_same_token_ids(saved):
    from transformers import PreTrainedTokenizerFast

    batch, info = saved
    assert info["size"] == "tiny" and info["parameters"] > 0 and info["vocab_size"] <= 1024
    backend = hf_backend.load_model(info["folder"], None, "float32", "cpu")
    assert type(backend.tokenizer).__name__ == "Qwen2Tokenizer"  # what AutoTokenizer picks
    trained = PreTrainedTokenizerFast.from_pretrained(info["folder"])
    for text in prompt_corpus(batch)[:8] + ["Rating: 7", "2 4 8 16 2048"]:
        assert backend.tokenizer(text)["input_ids"] == trained(text)["input_ids"], text
    digits = backend.tokenizer("2048")["input_ids"]
    assert len(digits) == 4  # Qwen's split: one token per digit
    assert backend.model.config.hidden_size == SIZES["tiny"]["hidden_size"]


def test_pointwise_judge_scores_every_window_with_the_model(saved):
    batch, info = saved
    backend = hf_backend.load_model(info["folder"], None, "float32", "cpu")
    cfg = LLMRankerConfig(model=info["folder"], mode="pointwise", batch_size=4, device="cpu",
                          dtype="float32")
    judge = LLMRanker(cfg, backend=backend)
    ranking = judge.rank_groups([batch])[0]
    assert sorted(ranking.order.tolist()) == list(range(6))
    records = [r for r in judge.records if r.get("event") == "pointwise_prompt"]
    assert len(records) == 6
    assert all(0 < r["label_mass"] <= 1 and r["prompt_tokens"] > 50 for r in records)
    assert np.all(np.isfinite(ranking.scores)) and ranking.scores.shape == (6,)
