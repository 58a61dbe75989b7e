"""Offline test material for the rankers: random 2048 games and a tiny causal LM.

Host-only helpers used by `tests/conftest.py` and `tests/test_rankers.py`. Nothing here
downloads anything: the tiny model's byte-level BPE tokenizer is trained on prompts built from
random games, and the Llama model (hidden 64, 2 layers) is randomly initialised and saved with
`save_pretrained`, so the real `LLMRanker` loading path (`from_pretrained(folder)`) is tested.
"""

from __future__ import annotations

import numpy as np
from reference import numpy_2048 as ref

from sailor_jax.judges import prompts
from sailor_jax.judges.text import summary_text
from sailor_jax.types import TrajectoryBatch
from sailor_lab.random_model import CHATML_TEMPLATE

SPECIAL_TOKENS = ["<|pad|>", "<|im_start|>", "<|im_end|>"]


def _spawn(board: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    empty = np.flatnonzero(board == 0)
    board = board.copy()
    if empty.size:
        board[rng.choice(empty)] = 1 if rng.random() < 0.9 else 2
    return board


def random_games(m: int, max_len: int, seed: int = 0, num_features: int = 8) -> TrajectoryBatch:
    """Play `m` games of uniformly random legal moves, at most `max_len` moves each.

    Host-only. Returns a host `TrajectoryBatch` of NumPy arrays (boards `int8[M, L, 16]` with
    `L = max_len + 1`, padding as in the real collector); `Phi` is random `float32[M, F]`.
    """
    rng = np.random.default_rng(seed)
    length_axis = max_len + 1
    boards = np.zeros((m, length_axis, 16), np.int8)
    actions = np.full((m, max_len), -1, np.int8)
    gains = np.zeros((m, max_len), np.float32)
    lengths = np.zeros(m, np.int32)
    for i in range(m):
        board = _spawn(_spawn(np.zeros(16, np.int32), rng), rng)
        boards[i, 0] = board
        t = 0
        while t < max_len and not ref.is_terminal(board):
            action = int(rng.choice(np.flatnonzero(ref.legal_mask(board))))
            moved, points = ref.move(board, action)
            board = _spawn(moved, rng)
            actions[i, t], gains[i, t] = action, points
            t += 1
            boards[i, t] = board
        boards[i, t + 1 :] = board
        lengths[i] = t
    return TrajectoryBatch(
        boards=boards,
        actions=actions,
        score_gains=gains,
        lengths=lengths,
        truncated=lengths >= max_len,
        score=gains.sum(axis=1),
        max_tile=(2 ** boards.max(axis=(1, 2)).astype(np.int32)).astype(np.int32),
        Phi=rng.random((m, num_features)).astype(np.float32),
    )


def training_corpus(num_games: int = 12) -> list[str]:
    """A few hundred strings covering the prompt vocabulary, game summaries, digits and labels."""
    batch = random_games(num_games, 120, seed=123)
    texts = [summary_text(batch, i) for i in range(num_games)]
    corpus = [
        prompts.SYSTEM_PROMPT,
        prompts.PAIRWISE_ANSWER_PREFIX + " A",
        prompts.PAIRWISE_ANSWER_PREFIX + " B",
        "Final Ranking (most strategic first): [3, 1, 2]",
    ]
    corpus += [prompts.pairwise_user_message(texts[i], texts[i - 1]) for i in range(num_games)]
    corpus += [prompts.listwise_user_message(texts[i : i + 3]) for i in range(0, num_games, 3)]
    corpus += [prompts.pointwise_user_message(texts[i]) for i in range(num_games)]
    # Weighted so that BPE merges " 1".." 9" into single tokens, as GPT-2-style tokenizers do
    # (pointwise mode reads one label token per rating); unweighted, " 6".." 8" stay split.
    corpus += [f"{prompts.POINTWISE_ANSWER_PREFIX} {r}" for r in prompts.POINTWISE_RATINGS] * 30
    corpus += [" ".join(str(k) for k in range(j, j + 40)) for j in range(0, 400, 40)]
    corpus += [f"Trajectory {k} T{k} [{k}, {k + 1}]" for k in range(20)]
    return corpus * 10


def build_tokenizer():
    """Train a byte-level BPE (vocab 512) and wrap it as a left-padding fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(training_corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<|pad|>",
        eos_token="<|im_end|>",
        padding_side="left",
        chat_template=CHATML_TEMPLATE,
    )


def build_tiny_llm(folder: str, seed: int = 0) -> str:
    """Save a tiny random Llama (hidden 64, 2 layers) and its tokenizer to `folder`.

    Returns `folder`, loadable with `from_pretrained(folder, local_files_only=True)`.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def write_gguf_tokenizer(folder: str, path: str) -> str:
    """Write the tokenizer saved in `folder` as a GGUF file at `path` (metadata only, no
    tensors): what llama.cpp reads a model's tokenizer and chat template from. Returns `path`.

    `transformers` reads it back (`from_pretrained(dir, gguf_file=name)`) as a tokenizer that
    encodes as the original does (the special tokens marked CONTROL stay whole).
    """
    import json

    import gguf
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    vocab = tokenizer.get_vocab()
    tokens = sorted(vocab, key=vocab.get)
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if t in SPECIAL_TOKENS else
                            gguf.TokenType.NORMAL for t in tokens])
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_chat_template(tokenizer.chat_template)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
