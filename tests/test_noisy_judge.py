"""The expert judge of dialled quality (`--sailor.ranker.noise SIGMA`): its verdicts
against a hand computation, reproducible per reseed and under kill + `--resume`, and its
skill-order accuracy falling as sigma grows."""

from __future__ import annotations

import dataclasses
import statistics

import numpy as np
import pytest
from support import TINY, TINY_POOL, assert_resume_after_update_kill

from sailor_jax.config import PAPER, RankerConfig, SailorConfig
from sailor_jax.judges.expert import ExpertRanker
from sailor_jax.judges.factory import make_ranker, ranker_description
from sailor_jax.run import loop
from sailor_lab import judge_eval


@pytest.fixture(scope="module")
def groups():
    pool, index = TINY_POOL["pool"].draw()
    return judge_eval.group_batches(pool, index)


@pytest.mark.parametrize("verdict", ["value", "regret"])
def test_noisy_scores_are_the_experts_normal_scores_plus_seeded_normals(groups, verdict):
    clean = ExpertRanker(depth=1, verdict=verdict).rank_groups(groups)
    zero = make_ranker(RankerConfig(kind="expert", expert_depth=1, expert_verdict=verdict,
                                    noise=0.0)).rank_groups(groups)
    for c, z in zip(clean, zero, strict=True):  # sigma 0: the expert's verdicts exactly
        np.testing.assert_array_equal(c.scores, z.scores)
        np.testing.assert_array_equal(c.order, z.order)
    noisy = ExpertRanker(depth=1, verdict=verdict, noise=0.7)
    noisy.reseed(11)
    got = noisy.rank_groups(groups)
    rng = np.random.default_rng(11)  # by hand: one draw per trajectory, group after group
    changed = 0
    for c, n in zip(clean, got, strict=True):
        m = len(c.order)
        v = c.scores  # rank from the bottom, 1..m; tied verdicts share their mean rank
        ranks = [np.sum(v < x) + (np.sum(v == x) + 1) / 2 for x in v]
        normal_scores = [statistics.NormalDist().inv_cdf((r - 0.5) / m) for r in ranks]
        want = np.array(normal_scores) + 0.7 * rng.standard_normal(m)
        np.testing.assert_allclose(n.scores, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(n.order, np.argsort(-want, kind="stable"))
        i, j = n.order[0], n.order[-1]  # the judge's confidence: Phi(dz / (sigma sqrt 2))
        assert n.pairwise_prob[i, j] == pytest.approx(
            statistics.NormalDist().cdf((want[i] - want[j]) / (0.7 * np.sqrt(2))), abs=1e-6)
        changed += not np.array_equal(n.order, c.order)
    assert changed > 0  # the noise reorders something


def test_ties_share_their_normal_score_and_nan_ranks_last():
    judge = ExpertRanker(noise=1e-9)
    ranking = judge.noisy_ranking(np.array([5.0, np.nan, 5.0, 9.0]))
    z = statistics.NormalDist().inv_cdf
    np.testing.assert_allclose(ranking.scores[[0, 2, 3]], [z(1 / 3), z(1 / 3), z(2.5 / 3)],
                               atol=1e-6)
    assert np.isnan(ranking.scores[1]) and ranking.order[0] == 3 and ranking.order[-1] == 1


def test_reseed_reproduces_the_noise_and_another_seed_changes_it(groups):
    judge = ExpertRanker(depth=1, verdict="value", noise=1.0)
    runs = []
    for seed in (3, 3, 4):
        judge.reseed(seed)
        runs.append(np.concatenate([r.scores for r in judge.rank_groups(groups)]))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    assert judge.name == "expert-d1-value-noise1"


@pytest.mark.parametrize("noise", [-0.1, float("nan"), float("inf")])
def test_bad_noise_is_refused(noise):
    with pytest.raises(ValueError, match="noise must be finite and >= 0"):
        RankerConfig(kind="expert", noise=noise)
    with pytest.raises(ValueError, match="noise must be finite and >= 0"):
        ExpertRanker(noise=noise)
    with pytest.raises(ValueError, match="synthetic judges only"):
        RankerConfig(kind="outcome", noise=0.5)


def test_the_noise_is_part_of_the_judges_description_only_when_set():
    noisy = dataclasses.replace(SailorConfig().ranker, kind="expert", expert_verdict="value",
                                noise=0.5)
    assert ranker_description(noisy)["noise"] == 0.5
    assert "noise" not in ranker_description(dataclasses.replace(noisy, noise=0.0))


NOISY = dataclasses.replace(
    TINY, iterations=3, baseline=False,
    ranker=RankerConfig(kind="expert", expert_depth=1, expert_verdict="value", noise=1.0),
    alignment=dataclasses.replace(
        PAPER.alignment, bo_calls=6, bo_initial_points=3, trust_region=0.3, update_workers=1))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("noisy") / "run")
    return out, loop.run(NOISY, out)


def test_a_run_with_a_noisy_judge_records_it(reference):
    _, results = reference
    assert results.ranker == {"kind": "expert", "depth": 1, "verdict": "value", "noise": 1.0}


def test_kill_then_resume_with_a_noisy_judge_equals_uninterrupted(reference, tmp_path,
                                                                 monkeypatch):
    assert_resume_after_update_kill(NOISY, str(tmp_path / "run"), reference, monkeypatch, 2,
                                    frozenset({"metrics.jsonl"}))


def test_skill_order_accuracy_and_tau_with_the_clean_judge_fall_as_sigma_grows(bench):
    pool = dataclasses.replace(TINY_POOL["pool"], games_per_player=4, groups=6)
    records = [bench.run(bench.Args(judge="expert:value", noise=noise, pool=pool,
                                    expert_depth=1)) for noise in (0.0, 0.5, 4.0)]
    accuracy = [r["skill_order_accuracy"] for r in records]
    assert accuracy[0] > accuracy[2] and accuracy[0] >= accuracy[1] >= accuracy[2], accuracy
    assert "tau_clean" not in records[0] and records[1]["noise"] == 0.5
    assert 1.0 > records[1]["tau_clean"] > records[2]["tau_clean"]
    assert records[2]["judge"] == "expert:value+noise4"
