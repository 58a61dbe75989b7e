"""Shared-prefix KV-cache reuse for next-token scoring of many prompts (the LLM judge).

Host-only. The judge's prompts of one call share long token prefixes: every prompt starts with
the same chat header, system prompt and instructions, and in pairwise mode the prompts that
show the same trajectory first share everything up to the second trajectory. Here each shared
prefix runs through the model once; its key/value cache (a `transformers.DynamicCache`, the
documented way to reuse a prompt cache) is reused for every prompt that starts with it, and only
the rest of each prompt (its suffix) is read per prompt.

Prefix rule (generic, on token ids only; nothing here knows the prompt template):

1. Each prompt is tokenised once, in full; every split is of these ids, never a re-tokenised
   piece of text, so the cached and uncached paths see the same token ids.
2. Global prefix: the longest common token prefix of all prompts, capped so that every prompt
   keeps at least one token in its suffix (the logits are read at the last token).
3. Groups: prompts sorted by token ids form runs whose neighbours share at least `T` tokens; a
   run's prefix is its members' common prefix (capped as above); a run of one prompt joins the
   pool that uses the global prefix only. `T` is chosen among the neighbours' common-prefix
   lengths to minimise the plan's cost: the tokens the model reads (`PrefixPlan.tokens_read`:
   the prefixes, plus every suffix batch's rows x longest suffix, padding included) plus
   `FORWARD_COST_TOKENS` per forward pass (so a few tokens of padding saved do not buy an extra
   pass).
4. Inside a group, prompts are sorted by suffix length and cut into batches of `batch_size`.

Cache copy strategy: a prefix's cache is kept as per-layer `(key, value)` tensors
`[1, heads, prefix_len, head_dim]`, never handed to the model itself. Each forward gets a fresh
`DynamicCache` built from views expanded to the batch, which the model extends by concatenation
(one copy of the prefix per row, which the concatenation needs anyway), so no forward can change
a stored prefix. Suffixes are left-padded; the pads sit between prefix and suffix, masked out,
and position ids continue from the prefix (`prefix_len + cumsum(suffix mask) - 1`), so each
prompt's log-probabilities equal the uncached path's up to float rounding.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

FORWARD_COST_TOKENS = 32
"""Fixed cost of one forward pass in the planner, in tokens read (a conservative bound: the
planner splits a batch only where the split saves more than this)."""

KV = list[tuple[Any, Any]]
"""Per-layer `(key, value)` torch tensors `[1, heads, length, head_dim]` of one prefix."""


@dataclasses.dataclass(frozen=True)
class PrefixGroup:
    """Prompts that share `prefix_len` leading tokens, and their suffix batches."""

    prefix_len: int
    """Tokens shared by every member (>= the plan's `global_len`)."""
    batches: tuple[tuple[int, ...], ...]
    """Prompt indices per forward pass, sorted by suffix length within the group."""


@dataclasses.dataclass(frozen=True)
class PrefixPlan:
    """Which prefixes to run once and how to batch the suffixes (see the module docstring)."""

    global_len: int
    """Tokens shared by all prompts (run once, batch 1)."""
    groups: tuple[PrefixGroup, ...]
    """Every prompt appears in exactly one batch of exactly one group."""

    def tokens_read(self, lengths: Sequence[int]) -> int:
        """Token positions the model reads, padding included, for prompts of `lengths` tokens."""
        total = self.global_len
        for group in self.groups:
            total += group.prefix_len - self.global_len
            for batch in group.batches:
                total += len(batch) * max(lengths[i] - group.prefix_len for i in batch)
        return total

    @property
    def forward_passes(self) -> int:
        """Model calls: the global prefix, each longer group prefix, each suffix batch."""
        extensions = sum(g.prefix_len > self.global_len for g in self.groups)
        return int(self.global_len > 0) + extensions + sum(len(g.batches) for g in self.groups)


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Number of leading tokens `a` and `b` share (0 <= result <= min(len(a), len(b)))."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


def _group(members: list[int], prefix_len: int, lengths: Sequence[int], batch_size: int):
    order = sorted(members, key=lambda i: (lengths[i] - prefix_len, i))
    batches = tuple(tuple(order[k : k + batch_size]) for k in range(0, len(order), batch_size))
    return PrefixGroup(prefix_len, batches)


def _plan_at(
    order: list[int],
    shared: list[int],
    threshold: int,
    lengths: Sequence[int],
    global_len: int,
    batch_size: int,
) -> PrefixPlan:
    """Split the sorted prompts where neighbours share fewer than `threshold` tokens."""
    cuts = [0] + [k + 1 for k, n in enumerate(shared) if n < threshold] + [len(order)]
    groups, pool = [], []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        run = order[lo:hi]
        if len(run) == 1:
            pool += run
            continue
        prefix_len = min(shared[lo : hi - 1] + [lengths[i] - 1 for i in run])
        groups.append(_group(run, prefix_len, lengths, batch_size))
    if pool:
        groups.append(_group(pool, global_len, lengths, batch_size))
    return PrefixPlan(global_len, tuple(groups))


def plan_prefixes(ids: Sequence[Sequence[int]], batch_size: int) -> PrefixPlan:
    """Choose the shared prefixes and the suffix batches of `N` tokenised prompts.

    Host-only, pure Python. Implements steps 2-4 of the module docstring's prefix rule; among
    the candidate split thresholds, the cheapest plan wins (ties: fewer groups).

    Args:
      ids: `N >= 1` token id sequences, each of length >= 1.
      batch_size: most prompts per suffix forward pass (>= 1).

    Returns:
      The `PrefixPlan`; every prompt keeps >= 1 suffix token.

    Raises:
      ValueError: no prompts, an empty prompt, or `batch_size < 1`.
    """
    if not ids or min(len(x) for x in ids) < 1 or batch_size < 1:
        raise ValueError(f"need >= 1 non-empty prompts and batch_size >= 1, got {batch_size}")
    lengths = [len(x) for x in ids]
    order = sorted(range(len(ids)), key=lambda i: (list(ids[i]), i))
    shared = [common_prefix_len(ids[a], ids[b]) for a, b in zip(order, order[1:], strict=False)]
    global_len = min(shared + [n - 1 for n in lengths])
    best = None
    for threshold in sorted(set(shared) | {global_len}):
        plan = _plan_at(order, shared, threshold, lengths, global_len, batch_size)
        cost = plan.tokens_read(lengths) + FORWARD_COST_TOKENS * plan.forward_passes
        key = (cost, len(plan.groups))
        if best is None or key < best[0]:
            best = (key, plan)
    return best[1]


def _kv_cache(kv: KV | None, rows: int, config: Any) -> Any:
    """A fresh `DynamicCache` holding `kv` expanded (as views) to `rows`; None when no prefix."""
    from transformers import DynamicCache

    if kv is None:
        return None
    return DynamicCache(
        [(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1)) for k, v in kv], config=config
    )


def _forward(
    model: Any,
    suffixes: list[Sequence[int]],
    kv: KV | None,
    prefix_len: int,
    pad_id: int,
    **extra: Any,
) -> Any:
    """One forward pass of left-padded `suffixes` on top of the prefix `kv`; returns the output."""
    import torch

    width, device = max(len(s) for s in suffixes), model.device
    ids = torch.tensor([[pad_id] * (width - len(s)) + list(s) for s in suffixes], device=device)
    mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in suffixes], device=device)
    position_ids = (prefix_len + mask.cumsum(-1) - 1).clamp(min=prefix_len)
    mask = torch.cat([mask.new_ones(len(suffixes), prefix_len), mask], dim=1)
    return model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=position_ids,
        **{_cache_argument(model): _kv_cache(kv, len(suffixes), model.config)},
        **extra,
    )


def _cache_argument(model: Any) -> str:
    """The forward's KV-cache keyword: `cache` from transformers 5.24, `past_key_values` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _extend(
    model: Any, tokens: Sequence[int], kv: KV | None, start: int, stop: int, **extra: Any
) -> KV | None:
    """KV of the prefix `tokens[:stop]`, given `kv` of `tokens[:start]` (None: empty prefix)."""
    if stop == start:
        return kv
    out = _forward(model, [tokens[start:stop]], kv, start, 0, use_cache=True, **extra)
    cache = out.cache if "cache" in out else out.past_key_values
    return [(layer[0], layer[1]) for layer in cache]


def supports_prefix_reuse(model: Any) -> bool:
    """True when every layer of the model's `DynamicCache` is full attention (no sliding window)."""
    from transformers import DynamicCache

    return not any(DynamicCache(config=model.config).is_sliding)


def next_token_logprobs(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    token_ids: Sequence[int],
    batch_size: int,
    logits_to_keep: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """`LLMBackend.next_token_logprobs` with shared prefixes run once (the prefix rule above).

    Host-only. Same arguments and results as the uncached path; the log-probabilities agree with
    it up to float rounding (tested in float32 to 1e-4).

    Args:
      model: a loaded `transformers` causal LM (its forward takes `cache` or `past_key_values`).
      tokenizer: its tokenizer (called as `tokenizer(text, add_special_tokens=False)`; its
        `pad_token_id` pads the suffix batches).
      prompts: `N` rendered prompts, each non-empty.
      token_ids: `K` vocabulary ids to read.
      batch_size: most prompts per suffix forward pass.
      logits_to_keep: the model's forward accepts `logits_to_keep` (computes only the last).

    Returns:
      `(logp float64[N, K], seconds float64[N])`: seconds = each prompt's share of the wall time
      of its suffix batch and of the prefixes it uses; they sum to the total model time.

    Raises:
      ValueError: a prompt tokenises to no token, or `batch_size < 1`.
    """
    import torch

    ids = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    logp = np.full((len(prompts), len(token_ids)), np.nan)
    seconds = np.zeros(len(prompts))
    if not prompts:
        return logp, seconds
    plan = plan_prefixes(ids, batch_size)
    pad_id = tokenizer.pad_token_id
    extra = {"logits_to_keep": 1} if logits_to_keep else {}
    with torch.inference_mode():
        t0 = time.perf_counter()
        root = _extend(model, ids[0], None, 0, plan.global_len, **extra)
        seconds += (time.perf_counter() - t0) / len(prompts)
        for group in plan.groups:
            t0 = time.perf_counter()
            members = [i for batch in group.batches for i in batch]
            kv = _extend(model, ids[members[0]], root, plan.global_len, group.prefix_len, **extra)
            seconds[members] += (time.perf_counter() - t0) / len(members)
            for batch in group.batches:
                t0 = time.perf_counter()
                suffixes = [ids[i][group.prefix_len :] for i in batch]
                out = _forward(model, suffixes, kv, group.prefix_len, pad_id, **extra)
                rows = torch.log_softmax(out.logits[:, -1, :].float(), dim=-1)[:, list(token_ids)]
                logp[list(batch)] = rows.cpu().numpy().astype(np.float64)
                seconds[list(batch)] += (time.perf_counter() - t0) / len(batch)
    return logp, seconds
