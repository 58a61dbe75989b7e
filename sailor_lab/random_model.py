"""A judge model of a real size with random weights, and a tokenizer trained here. Host-only.

For timing the LLM judge where no model hub can be reached (the lent GPU machine, CI): the
model is a `transformers.Qwen2ForCausalLM` built from a published configuration (Qwen2.5-1.5B's
sizes) with random weights, and the tokenizer a byte-level BPE trained in seconds on the
judge's own prompts over the given games. Saved with `save_pretrained`, the folder loads
through the judge's real path (`hf_backend.load_model`, `--sailor.ranker.llm.model FOLDER`).
Its cost per token is the real model's; its verdicts are noise. Its token counts are close to,
not equal to, Qwen's own tokenizer's: report prompt tokens per second beside windows per second.
`torch`, `tokenizers` and `transformers` are imported inside the functions.
"""

from __future__ import annotations

import os
import time
from typing import Any

from sailor_jax.judges import prompts
from sailor_jax.judges.text import summary_text
from sailor_jax.types import TrajectoryBatch

SIZES: dict[str, dict[str, Any]] = {
    # Qwen/Qwen2.5-1.5B-Instruct's config.json (1.54B parameters).
    "qwen2.5-1.5b": dict(vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                         num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                         max_position_embeddings=32768, rms_norm_eps=1e-6),
    # A toy of the same architecture, for tests and `--tiny` runs on a CPU.
    "tiny": dict(vocab_size=None, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                 rms_norm_eps=1e-6),
}
"""Model sizes by name; `vocab_size` None = the tokenizer's."""
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen's chat format (ChatML)."""
QWEN_PRETOKENIZE = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"""
                    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
"""Qwen2's pre-tokenizer split (transformers' `Qwen2Tokenizer`, which `AutoTokenizer` loads for
a Qwen2 model and which re-splits text with it): trained with the same split, the saved
tokenizer's ids survive loading, and digits are single tokens as in Qwen's."""


def prompt_corpus(batch: TrajectoryBatch) -> list[str]:
    """The judge's prompt texts over every game of `batch` (host arrays): each pointwise,
    pairwise and listwise message, and every label the judges read. Host-only."""
    texts = [summary_text(batch, i) for i in range(len(batch.lengths))]
    corpus = [prompts.SYSTEM_PROMPT]
    for i, text in enumerate(texts):
        corpus.append(prompts.pointwise_user_message(text))
        corpus.append(prompts.pairwise_user_message(text, texts[i - 1]))
    corpus.append(prompts.listwise_user_message(texts[:3]))
    labels = [f"{prompts.POINTWISE_ANSWER_PREFIX} {r}" for r in prompts.POINTWISE_RATINGS]
    labels += [f"{prompts.PAIRWISE_ANSWER_PREFIX} {a}" for a in prompts.PAIRWISE_LABELS]
    return corpus + labels * 50  # weighted: " 1".." 9" and " A"/" B" become single tokens


def train_tokenizer(corpus: list[str], vocab_size: int) -> Any:
    """A byte-level BPE of `vocab_size` tokens trained on `corpus`, as a left-padding
    `PreTrainedTokenizerFast` with Qwen's normaliser, pre-tokenizer split, special tokens and
    chat template. Host-only."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.normalizer = normalizers.NFC()
    core.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN_PRETOKENIZE), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    core.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<|endoftext|>",
                                   eos_token="<|im_end|>", padding_side="left",
                                   chat_template=CHATML_TEMPLATE)


def qwen_config(size: str, tokenizer: Any) -> Any:
    """`transformers.Qwen2Config` of the named size (`SIZES`), special-token ids from
    `tokenizer` (whose ids must be below the config's vocabulary).

    Raises:
      KeyError: an unknown size.
    """
    import transformers

    sizes = dict(SIZES[size])
    sizes["vocab_size"] = sizes["vocab_size"] or len(tokenizer)
    return transformers.Qwen2Config(
        **sizes, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None)


def save_random_model(folder: str, size: str, batch: TrajectoryBatch, *,
                      vocab_size: int = 4096, dtype: str = "bfloat16", device: str = "cpu",
                      seed: int = 0) -> dict:
    """Train a tokenizer on the prompts over `batch`, build a random model of `size`, save both.

    Host-only. The weights are initialised on `device` ("cuda" builds a 1.5B model in
    seconds) in `dtype` and written to `folder` (created) with `save_pretrained`.

    Returns:
      `{"folder", "size", "parameters", "vocab_size", "dtype", "seconds"}`.

    Raises:
      KeyError: an unknown size.
    """
    import torch
    import transformers

    t0 = time.perf_counter()
    tokenizer = train_tokenizer(prompt_corpus(batch), vocab_size)
    config = qwen_config(size, tokenizer)
    torch.manual_seed(seed)
    with torch.device(device):
        model = transformers.Qwen2ForCausalLM(config).to(getattr(torch, dtype)).eval()
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return {"folder": folder, "size": size, "parameters": model.num_parameters(),
            "vocab_size": len(tokenizer), "dtype": dtype,
            "seconds": time.perf_counter() - t0}
