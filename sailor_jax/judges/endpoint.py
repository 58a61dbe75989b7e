"""The LLM judge's model behind an OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp, a hosted
API), through the `openai` client library. Host-only.

`EndpointBackend` offers what `LLMRanker` uses of `hf_backend.LLMBackend` (render a prompt,
count its tokens, find the label tokens, next-token label log-probabilities, greedy generation),
so the judge's modes, prompts and arithmetic are the same whichever runs the model.

* **Two APIs.** With the served model's tokenizer on this machine (`LLMRankerConfig.tokenizer`,
  or `model` when it loads offline: a folder, a cached HF id, or the path of a GGUF file, which
  carries its tokenizer and chat template), prompts are rendered with its chat template plus
  the answer prefix and sent to `/v1/completions`: the in-process judge's prompts exactly, so
  its scores equal the in-process judge's up to float rounding. Without one, the system and
  user messages go to `/v1/chat/completions` (what hosted chat APIs serve); the answer prefix
  is dropped (the user message already asks for a single label) and tokens are estimated as
  `ceil(chars / CHARS_PER_TOKEN)` when fitting trajectories into the prompt budget.
* **Labels.** A one-token completion asks for the `TOP_LOGPROBS` most likely next tokens; the
  labels' log-probabilities are read from them (a label outside them counts as probability 0)
  and `LLMRanker` renormalises over the labels, as in process. A server that returns no
  log-probabilities is asked again for a short generated answer, the first label in it counts
  as probability 1 (`parsing.parse_label`), and `protocol()` says so (the judge logs it).
* **Transport.** Up to `CONCURRENCY` requests in flight (a thread pool), so a group's prompts
  reach the server's batcher together; the shared prefix (system prompt, instructions) comes
  first in every prompt, for prefix caching. Retries with exponential backoff on 429, 5xx,
  timeouts and lost connections are the `openai` client's (`MAX_RETRIES`, `TIMEOUT_S`); after
  the last, or on an answer it cannot read, one `EndpointError` saying what the server did and
  what to do (`_fault`; the table of faults is in docs/running.md).
* **Tokens and the key.** Prompt and completion tokens of every response (`usage`) are added to
  `usage`; before a batch is sent, `TokenUsage.check` raises `TokenBudgetError` if its estimate
  would pass `max_tokens_per_run`. The API key is read from the environment variable
  `OPENAI_API_KEY` (as the `openai` client reads it) and never stored or printed (error
  messages are redacted).
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import served_prompts
from sailor_jax.judges.hf_backend import LLMBackend, next_token
from sailor_jax.judges.parsing import parse_label
from sailor_jax.judges.transport import EndpointError, TokenBudgetError, TokenUsage

__all__ = ["EndpointBackend", "EndpointError", "TokenBudgetError", "TokenUsage", "check_endpoint"]

CHARS_PER_TOKEN = 1.6
"""Token estimate of the chat API (no tokenizer), on the safe side: digits tokenise densely
(SmolLM2's tokenizer read pairwise prompts at 1.84 characters a token)."""
GENERATED_LABEL_TOKENS = 8
"""Most tokens of a generated label answer (servers without log-probabilities)."""
API_KEY_ENV = "OPENAI_API_KEY"
"""Environment variable holding the API key (unset: `NO_KEY`)."""
NO_KEY = "EMPTY"
"""API key sent when `API_KEY_ENV` is unset (local servers ignore it; the client needs one)."""
TIMEOUT_S = 120.0
"""Seconds before one request times out (then retried)."""
MAX_RETRIES = 4
"""Retries of a request after 429, 5xx, a timeout or a lost connection (exponential backoff
from 0.5 s, the `openai` client's)."""
CONCURRENCY = 8
"""Most requests in flight at once (a group's prompts reach the server's batcher together)."""
TOP_LOGPROBS = 20
"""Next-token log-probabilities asked for per prompt; a label outside them counts as
probability 0 (vLLM serves at most 20 unless `--max-logprobs`)."""
_UNKNOWN_CONTEXT = 1 << 20
_log = logging.getLogger(__name__)
RESUME = "; then continue with --resume"
"""How an endpoint error's fix ends mid-run (at start-up: ", then rerun")."""


class ChatPrompt(str):
    """A prompt for the chat API: its text is what is logged; `messages` are what is sent."""

    messages: list[dict[str, str]]


def _load_tokenizer(name: str | None, gguf_file: str | None = None) -> Any:
    """The HF tokenizer `name` names, loaded offline, or None (no network is ever used).

    `name` is a folder or cached HF id (read from `gguf_file` inside it when given), or the
    path of a GGUF file (llama.cpp serves a model under the path it was given; Ollama keeps
    its models as GGUF files named `sha256-...`): a GGUF carries its tokenizer and chat
    template."""
    if name is None:
        return None
    import transformers

    folder = os.path.expanduser(name)
    if gguf_file is None and os.path.isfile(folder):
        folder, gguf_file = os.path.split(os.path.abspath(folder))
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        return transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True, **extra)
    except (OSError, ValueError, KeyError):
        return None


def check_endpoint(config: LLMRankerConfig) -> None:
    """Check, before a run writes or compiles anything, that the endpoint answers and serves
    `config.model` (any model when None). Host-only; one `/v1/models` request.

    Raises:
      EndpointError: the server does not answer (after the client's retries), lists no model,
        or does not list `config.model` (the listed names are given).
    """
    backend = EndpointBackend.__new__(EndpointBackend)
    backend._connect(config)
    names = [m.id for m in backend._models(then=", then rerun")]  # nothing written yet
    if config.model is not None and names and config.model not in names:
        shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
        raise EndpointError(f"--sailor.ranker.llm.model {config.model}: {config.endpoint} "
                            f"serves {shown}", "name one of them")


def _fault(err: Exception, model: str | None) -> tuple[str, str]:
    """What an `openai` client error means and how to fix it: `(what, fix)`."""
    import openai as o

    code, tries = getattr(err, "status_code", None), f"after {MAX_RETRIES} retries"
    faults = [(o.APITimeoutError, f"timed out ({TIMEOUT_S:g} s a request) {tries}",
               "check that the server is not stuck or overloaded"),
              (o.APIConnectionError, f"cannot be reached {tries}",
               "start the server or correct the URL"),
              ((o.AuthenticationError, o.PermissionDeniedError), f"refused the API key ({code})",
               f"set {API_KEY_ENV} to a key it accepts"),
              (o.NotFoundError, "answered 404 (no such path or model)", "give the URL of its "
               f"OpenAI API (it usually ends in /v1) and a model it serves ({model!r} asked)"),
              (o.RateLimitError, f"kept rate-limiting (429) {tries}",
               "wait for the rate limit to reset or raise it"),
              (o.InternalServerError, f"answered server errors ({code}) {tries}",
               "read the server's log"),
              ((ValueError, o.APIResponseValidationError), "answered a body that is not the "
               "OpenAI API's JSON", "check that the URL is an OpenAI-compatible server")]
    return next(((what, fix) for kind, what, fix in faults if isinstance(err, kind)),
                (f"failed ({code})", "read the server's log"))


class EndpointBackend:
    """The judge's model behind an OpenAI-compatible server (see the module docstring).

    Args:
      config: the judge's config; `endpoint` must be set.

    Attributes:
      model_name: the served model's name sent with every request.
      tokenizer: the served model's HF tokenizer, or None (chat API).
      context_length: the served model's `max_model_len` when `/v1/models` reports it, else
        large.
      usage: tokens reported so far (`TokenUsage`).

    Raises:
      EndpointError: the server cannot be reached or lists no model.
    """

    def __init__(self, config: LLMRankerConfig) -> None:
        self._connect(config)
        listed = self._models()
        self.model_name = config.model or listed[0].id
        served = next((m for m in listed if m.id == self.model_name), None)
        self.context_length = int(getattr(served, "max_model_len", None) or _UNKNOWN_CONTEXT)
        self.tokenizer = _load_tokenizer(config.tokenizer or self.model_name,
                                         None if config.tokenizer else config.gguf_file)
        if self.tokenizer is not None:
            self.tokenizer.padding_side = "left"
        self._local = LLMBackend(self.tokenizer, None, "cpu", None)
        self.served = None if self.tokenizer is not None else served_prompts.find(
            self.url, self.model_name, self._request)
        self.api = "chat" if self.tokenizer is None and self.served is None else "completions"
        if self.api == "chat":
            _log.warning(served_prompts.CHAT_NOTICE.format(model=self.model_name))
        notice = served_prompts.precision_notice(getattr(served, "meta", None))
        if notice:
            _log.warning(notice)
        self.logprobs = True
        self.usage = TokenUsage(limit=config.max_tokens_per_run)
        self.device = self.dtype = None

    def _connect(self, config: LLMRankerConfig) -> None:
        import openai

        self.config, self.url, self.model_name = config, config.endpoint, config.model
        self._key = os.environ.get(API_KEY_ENV) or NO_KEY
        self.client = openai.OpenAI(api_key=self._key, base_url=config.endpoint,
                                    timeout=TIMEOUT_S, max_retries=MAX_RETRIES)

    def _request(self, method: str, url: str, body: dict | None = None) -> Any:
        """One request to any route of the server (the client's retries and key): its JSON."""
        if method == "GET":
            return self.client.get(url, cast_to=object)
        return self.client.post(url, body=body, cast_to=object)

    def _models(self, then: str = RESUME) -> list[Any]:
        listed = self._call(lambda: list(self.client.models.list().data), then)
        if not listed:
            raise EndpointError(f"--sailor.ranker.llm.endpoint {self.url} lists no model",
                                "name one with --sailor.ranker.llm.model")
        return listed

    def protocol(self) -> dict[str, Any]:
        """What the judge logs about the transport: URL, model, API, log-probabilities or not."""
        rendered = "here" if self.tokenizer is not None else (
            self.served.server if self.served is not None else None)
        return {"endpoint": self.url, "model": self.model_name, "api": self.api,
                "rendered_by": rendered, "logprobs": self.logprobs}

    def render_chat(self, system: str, user: str, answer_prefix: str = "") -> str:
        """The prompt: chat template + answer prefix (completions API; rendered here, or by the
        server: `served_prompts`), or a `ChatPrompt`."""
        if self.tokenizer is not None:
            return self._local.render_chat(system, user, answer_prefix)
        if self.served is not None:
            return self._call(lambda: self.served.render(system, user, answer_prefix))
        prompt = ChatPrompt(f"{system}\n\n{user}")
        prompt.messages = [{"role": "system", "content": system},
                           {"role": "user", "content": user}]
        return prompt

    def count_tokens(self, text: str) -> int:
        """Tokens of a prompt: exact with the tokenizer or the server's, else
        `ceil(chars / CHARS_PER_TOKEN)`."""
        if self.tokenizer is not None:
            return self._local.count_tokens(text)
        if self.served is not None:
            return self._call(lambda: self.served.count(text))
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def token_ids(self, text: str) -> list[int]:
        """Token ids of `text` by the served model's tokenizer, here or on the server.

        Raises:
          EndpointError: the server's answer failed; ValueError: on the chat API (no ids).
        """
        if self.tokenizer is not None:
            return self._local.token_ids(text)
        if self.served is None:
            raise ValueError("the chat API has no token ids")
        return self._call(lambda: self.served.ids(text))

    def label_token_id(self, prompt: str, label: str) -> int | str:
        """The label's token id by the served model's tokenizer, here or on the server
        (`hf_backend.next_token`), or the label's text (chat API: matched against the returned
        tokens without spaces)."""
        if self.api == "chat":
            return label.strip()
        return next_token(self.token_ids(prompt), self.token_ids(prompt + label), label)

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int | str],
                            batch_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Log-probabilities of the labels as the next token after each prompt.

        Args:
          prompts: `N` prompts from `render_chat`.
          token_ids: `K` labels from `label_token_id` (token ids, or label texts).
          batch_size: ignored (the server batches and caches).

        Returns:
          `(logp float64[N, K], seconds float64[N])`: `-inf` for a label outside the
          returned top log-probabilities (or not generated); seconds = each prompt's share of
          the wall time.

        Raises:
          TokenBudgetError, EndpointError: as the module docstring says.
        """
        texts = [t if isinstance(t, str) else self.tokenizer.decode([t])
                 if self.tokenizer is not None else self._call(lambda t=t: self.served.piece(t))
                 for t in token_ids]
        t0 = time.perf_counter()
        if self.logprobs:
            self._check_budget(prompts, 1)
            rows = self._map(lambda p: self._label_logprobs(p, texts), prompts)
            self.logprobs = not any(r is None for r in rows)  # None: no log-probabilities
        if not self.logprobs:
            self._check_budget(prompts, GENERATED_LABEL_TOKENS)
            rows = self._map(lambda p: self._generated_label(p, texts), prompts)
        logp = np.array(rows, dtype=np.float64).reshape(len(prompts), len(texts))
        return logp, np.full(len(prompts), (time.perf_counter() - t0) / max(1, len(prompts)))

    def generate(self, prompts: Sequence[str], max_new_tokens: int, batch_size: int = 1
                 ) -> tuple[list[str], np.ndarray]:
        """Greedy answers (temperature 0) of at most `max_new_tokens` tokens per prompt.

        Returns:
          `(texts, seconds float64[N])` as `LLMBackend.generate`.

        Raises:
          TokenBudgetError, EndpointError: as the module docstring says.
        """
        t0 = time.perf_counter()
        self._check_budget(prompts, max_new_tokens)
        texts = self._map(lambda p: self._complete(p, max_new_tokens, 0)[0], prompts)
        return texts, np.full(len(prompts), (time.perf_counter() - t0) / max(1, len(prompts)))

    def _check_budget(self, prompts: Sequence[str], max_tokens: int) -> None:
        if self.usage.limit is not None:
            estimate = sum(self.count_tokens(p) for p in prompts) + max_tokens * len(prompts)
            self.usage.check(estimate, len(prompts))

    def _label_logprobs(self, prompt: str, labels: list[str]) -> list[float] | None:
        _, top = self._complete(prompt, 1, TOP_LOGPROBS)
        if top is None:
            return None
        exact = self.api == "completions"  # the label tokens themselves
        out = []
        for label in labels:
            hits = [lp for tok, lp in top if (tok == label if exact else tok.strip() == label)]
            out.append(float(np.logaddexp.reduce(hits)) if hits else -np.inf)
        return out

    def _generated_label(self, prompt: str, labels: list[str]) -> list[float]:
        text, _ = self._complete(prompt, GENERATED_LABEL_TOKENS, 0)
        chosen = parse_label(text, [label.strip() for label in labels])
        return [0.0 if k == chosen else -np.inf for k in range(len(labels))]

    def _complete(self, prompt: str, max_tokens: int, top_logprobs: int
                  ) -> tuple[str, list[tuple[str, float]] | None]:
        """One request: `(text, [(token, logprob)] of the first token or None)`."""
        if self.api == "completions":
            extra = {"logprobs": top_logprobs} if top_logprobs else {}
            response = self._call(lambda: self.client.completions.create(
                model=self.model_name, prompt=str(prompt), max_tokens=max_tokens,
                temperature=0.0, **extra))
            choice = self._first_choice(response)
            top = _completion_top(choice.logprobs)
        else:
            extra = {"logprobs": True, "top_logprobs": top_logprobs} if top_logprobs else {}
            response = self._call(lambda: self.client.chat.completions.create(
                model=self.model_name, messages=prompt.messages, max_tokens=max_tokens,
                temperature=0.0, **extra))
            choice = self._first_choice(response)
            content = choice.logprobs.content if choice.logprobs else None
            top = [(t.token, t.logprob) for t in content[0].top_logprobs] if content else None
        text = choice.text if self.api == "completions" else choice.message.content
        usage = getattr(response, "usage", None)
        self.usage.add(*((usage.prompt_tokens, usage.completion_tokens) if usage else
                         (self.count_tokens(prompt), self.count_tokens(text or ""))))
        return text or "", top

    def _first_choice(self, response: Any) -> Any:
        choices = getattr(response, "choices", None)
        if not choices:
            raise EndpointError(f"judge endpoint {self.url} answered without choices ("
                                f"{self._redact(str(response)[:200])})", "check that it is an "
                                f"OpenAI-compatible server{RESUME}")
        return choices[0]

    def _call(self, request: Callable[[], Any], then: str = RESUME) -> Any:
        """`request()`; an `openai` error becomes one `EndpointError` (`_fault`), its fix
        followed by `then`."""
        import openai

        try:
            return request()
        except (openai.APIError, ValueError) as err:  # ValueError: a body that is not JSON
            what, fix = _fault(err, self.model_name)
            raise EndpointError(f"judge endpoint {self.url} {what}: {type(err).__name__}: "
                                f"{self._redact(str(err))[:300]}",
                                f"{fix}{then}") from None

    def _map(self, fn: Callable[[str], Any], prompts: Sequence[str]) -> list[Any]:
        if len(prompts) <= 1:
            return [fn(p) for p in prompts]
        pool = concurrent.futures.ThreadPoolExecutor(CONCURRENCY)
        try:
            return list(pool.map(fn, prompts))
        except BaseException:  # an error or Ctrl-C: drop queued requests, end running ones
            pool.shutdown(wait=False, cancel_futures=True)
            self.client.close()
            self._connect(self.config)
            raise
        finally:
            pool.shutdown(wait=False)

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key != NO_KEY else text


def _completion_top(logprobs: Any) -> list[tuple[str, float]] | None:
    """`[(token, logprob)]` of a completion's first token, or None where there are none.

    The legacy completions form (`top_logprobs`: one `{token: logprob}` per token, as vLLM
    and llama-cpp-python answer) or the chat form that llama.cpp's `llama-server` also uses on
    `/v1/completions` (`content`: per token a `top_logprobs` list of `{token, logprob}`).
    """
    legacy = getattr(logprobs, "top_logprobs", None)
    if legacy:
        return list(legacy[0].items())
    content = getattr(logprobs, "content", None)  # an extra field: plain dicts
    return [(t["token"], t["logprob"]) for t in content[0]["top_logprobs"]] if content else None
