"""Tests for sailor_jax.judges.prefix_cache: the prefix planner (pure Python) and cached scoring
on the tiny offline Llama (float32), against the uncached `LLMBackend.uncached_logprobs`."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_fixtures import random_games

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import LLMRanker, hf_backend, prefix_cache, prompts
from sailor_jax.judges.prefix_cache import common_prefix_len, plan_prefixes
from sailor_jax.judges.text import summary_text

ATOL = 1e-4

# ---------------------------------------------------------------------------------- planner


def test_common_prefix_len_hand_cases():
    assert common_prefix_len([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2
    assert common_prefix_len([5], [1]) == 0
    assert common_prefix_len([], [1]) == 0


def test_plan_groups_prompts_by_their_longest_shared_prefix():
    base, long_a, long_b = [1, 2, 3], [4] * 100, [5] * 80
    ids = [base + long_a + [7], base + long_b + [8, 9], base + long_a + [8, 8]]
    ids += [base + [6], base + long_b + [7], base + long_a + [9, 9, 9]]
    plan = plan_prefixes(ids, batch_size=2)
    assert plan.global_len == 3
    by_members = {frozenset(i for b in g.batches for i in b): g for g in plan.groups}
    assert set(by_members) == {frozenset({0, 2, 5}), frozenset({1, 4}), frozenset({3})}
    assert by_members[frozenset({0, 2, 5})].prefix_len == 103
    assert by_members[frozenset({1, 4})].prefix_len == 83
    assert by_members[frozenset({3})].prefix_len == 3  # a lone prompt keeps the global prefix
    # within a group, batches follow the suffix length: [7] and [8, 8] first, then [9, 9, 9]
    assert by_members[frozenset({0, 2, 5})].batches == ((0, 2), (5,))
    # global prefix once, 100 + 80 group tokens, then the padded suffix batches
    assert plan.tokens_read([len(x) for x in ids]) == 3 + 100 + 80 + (2 * 2 + 3) + 2 * 2 + 1
    assert plan.forward_passes == 1 + 2 + 4


def test_plan_keeps_one_suffix_token_when_a_prompt_is_the_shared_prefix():
    ids = [[1, 2, 3], [1, 2, 3, 4, 5], [1, 2, 3], [1, 2, 3, 6]]
    plan = plan_prefixes(ids, batch_size=8)
    assert plan.global_len == 2
    assert all(g.prefix_len < min(len(ids[i]) for b in g.batches for i in b) for g in plan.groups)


def test_plan_rejects_bad_input():
    for ids, batch_size in (([], 1), ([[1], []], 1), ([[1]], 0)):
        with pytest.raises(ValueError):
            plan_prefixes(ids, batch_size)


token_lists = st.lists(st.integers(0, 3), min_size=1, max_size=12)


@settings(deadline=None, max_examples=60)
@given(
    stems=st.lists(token_lists, min_size=1, max_size=3),
    tails=st.lists(st.tuples(st.integers(0, 2), token_lists), min_size=1, max_size=10),
    batch_size=st.integers(1, 4),
)
def test_plan_covers_every_prompt_once_with_a_true_shared_prefix(stems, tails, batch_size):
    ids = [[9] + stems[k % len(stems)] + tail for k, tail in tails]
    plan = plan_prefixes(ids, batch_size)
    seen = [i for g in plan.groups for b in g.batches for i in b]
    assert sorted(seen) == list(range(len(ids)))
    for g in plan.groups:
        members = [i for b in g.batches for i in b]
        assert all(1 <= len(b) <= batch_size for b in g.batches)
        assert plan.global_len <= g.prefix_len < min(len(ids[i]) for i in members)
        assert all(ids[i][: g.prefix_len] == ids[members[0]][: g.prefix_len] for i in members)


# ------------------------------------------------------------------------ tiny model, float32


@pytest.fixture(scope="module")
def backend(tiny_llm_dir):
    return hf_backend.load_model(tiny_llm_dir, None, "float32", "cpu")


@pytest.fixture(scope="module")
def pair_prompts(backend):
    """Pairwise prompts of 4 games (each shown first in 3 prompts) plus 2 short other prompts."""
    batch = random_games(4, 60, seed=3)
    texts = [f"{summary_text(batch, i)}; moves " + " ".join(map(str, batch.actions[i, :30 + 6 * i]))
             for i in range(4)]  # long texts of several lengths: a prefix group per game
    user = [prompts.pairwise_user_message(texts[i], texts[j]) for i in range(4) for j in range(4)]
    user = [u for k, u in enumerate(user) if k % 5]  # drop i == j
    user += ["Which is better? A", "Which is better? Answer with a single letter, A or B."]
    return [backend.render_chat(prompts.SYSTEM_PROMPT, u, "The answer is") for u in user]


TOKENS = list(range(0, 40)) + [100, 300]


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_cached_logprobs_equal_uncached(backend, pair_prompts, batch_size):
    plain, _ = backend.uncached_logprobs(pair_prompts, TOKENS, batch_size)
    cached, seconds = backend.next_token_logprobs(pair_prompts, TOKENS, batch_size)
    assert cached.shape == (len(pair_prompts), len(TOKENS)) and cached.dtype == np.float64
    assert np.all(np.isfinite(cached)) and np.all(seconds > 0)
    np.testing.assert_allclose(cached, plain, atol=ATOL, rtol=0)
    ids = [backend.tokenizer(p, add_special_tokens=False)["input_ids"] for p in pair_prompts]
    plan = plan_prefixes(ids, batch_size)
    assert len([g for g in plan.groups if g.prefix_len > plan.global_len]) == 4  # one per game


def test_results_come_back_in_the_original_prompt_order(backend, pair_prompts):
    cached, _ = backend.next_token_logprobs(pair_prompts, TOKENS, 4)
    perm = np.random.default_rng(0).permutation(len(pair_prompts))
    shuffled, _ = backend.next_token_logprobs([pair_prompts[i] for i in perm], TOKENS, 4)
    np.testing.assert_allclose(shuffled, cached[perm], atol=ATOL, rtol=0)
    assert not np.allclose(cached[perm], cached, atol=ATOL)  # the permutation matters


def test_prompt_that_is_the_shared_prefix_and_duplicates(backend, pair_prompts):
    stem = pair_prompts[0][:300]
    texts = [stem, stem + pair_prompts[0][300:400], stem, stem + " B"]
    for group in (texts, texts[:1], [stem, stem]):
        plain, _ = backend.uncached_logprobs(group, TOKENS, 2)
        cached, _ = backend.next_token_logprobs(group, TOKENS, 2)
        np.testing.assert_allclose(cached, plain, atol=ATOL, rtol=0)


def test_cached_path_reads_fewer_tokens(backend, pair_prompts):
    counts = []
    hook = backend.model.get_input_embeddings().register_forward_hook(
        lambda module, args, out: counts.append(args[0].numel())
    )
    try:
        backend.uncached_logprobs(pair_prompts, TOKENS, 3)
        plain, counts[:] = sum(counts), []
        backend.next_token_logprobs(pair_prompts, TOKENS, 3)
        cached = sum(counts)
    finally:
        hook.remove()
    ids = [backend.tokenizer(p, add_special_tokens=False)["input_ids"] for p in pair_prompts]
    assert cached == plan_prefixes(ids, 3).tokens_read([len(x) for x in ids])
    assert cached < 0.7 * plain


def test_ranker_pairwise_probabilities_equal_with_and_without_reuse(backend, monkeypatch):
    groups = [random_games(4, 60, seed=1), random_games(3, 40, seed=2)]
    config = LLMRankerConfig(max_prompt_tokens=640, batch_size=4)
    reuse = LLMRanker(config, backend=backend).rank_groups(groups)
    monkeypatch.setattr(prefix_cache, "supports_prefix_reuse", lambda model: False)
    plain = LLMRanker(config, backend=backend).rank_groups(groups)
    for a, b in zip(plain, reuse, strict=True):
        np.testing.assert_allclose(b.pairwise_prob, a.pairwise_prob, atol=ATOL, rtol=0)
        np.testing.assert_array_equal(np.isfinite(b.pairwise_prob), np.isfinite(a.pairwise_prob))


def test_sliding_window_models_fall_back_to_the_uncached_path():
    from transformers import LlamaConfig, MistralConfig

    sliding = types.SimpleNamespace(config=MistralConfig(num_hidden_layers=2, sliding_window=16))
    full = types.SimpleNamespace(config=LlamaConfig(num_hidden_layers=2))
    assert not prefix_cache.supports_prefix_reuse(sliding)
    assert prefix_cache.supports_prefix_reuse(full)
