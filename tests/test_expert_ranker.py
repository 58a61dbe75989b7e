"""The expert judge: verdicts, ranking of expert vs random play, probabilities."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from support import load_script

from sailor_jax.agents.rollout import make_act_collect
from sailor_jax.alignment.heldout import resolve_comparison
from sailor_jax.config import RankerConfig, SailorConfig
from sailor_jax.game.expert import expert_act
from sailor_jax.judges import ExpertRanker
from sailor_jax.judges.expert import move_verdicts, pairwise_probabilities
from sailor_jax.judges.factory import make_ranker, ranker_description
from sailor_jax.run.run_dir import config_differences, config_json
from sailor_jax.types import TrajectoryBatch


def test_move_verdicts_regret_and_agreement():
    inf = np.inf
    values = np.array([[3.0, 1.0, -inf, 2.0]] * 3 + [[-inf, 5.0, -inf, -inf], [2.0, 2.0, 2.0, 2.0]])
    actions = np.array([0, 1, 3, 1, 2])
    regret, scored = move_verdicts(values, actions, "regret")
    assert scored.tolist() == [True, True, True, False, True]
    np.testing.assert_allclose(regret[[0, 1, 2, 4]], [1.0, 0.0, 0.5, 1.0])
    assert np.isnan(regret[3])
    agree, _ = move_verdicts(values, actions, "agreement")
    np.testing.assert_array_equal(agree[[0, 1, 2, 4]], [1.0, 0.0, 0.0, 1.0])


def _mixed_group(seed: int) -> tuple[TrajectoryBatch, np.ndarray]:
    """4 expert games and 4 uniformly random games (150 moves at most), shuffled."""
    parts = [jax.device_get(make_act_collect(expert_act(1, eps), 4, 150)(jax.random.key(seed)))
             for eps in (0.0, 1.0)]
    batch = jax.tree.map(lambda a, b: np.concatenate([a, b]), *parts)
    perm = np.random.default_rng(seed).permutation(8)
    is_expert = np.arange(8)[perm] < 4
    return jax.tree.map(lambda x: x[perm], batch), is_expert


@pytest.mark.parametrize("verdict", ["regret", "agreement"])
def test_expert_play_outranks_random_play(verdict):
    groups = [_mixed_group(s) for s in (0, 1)]
    rankings = ExpertRanker(depth=1, verdict=verdict).rank_groups([g for g, _ in groups])
    for ranking, (_, is_expert) in zip(rankings, groups, strict=True):
        assert set(ranking.order[:4].tolist()) == set(np.flatnonzero(is_expert).tolist())
        # the judge's own moves; a near-tie may flip under a different XLA fusion
        assert np.all(ranking.scores[is_expert] > 0.97)
        prob = ranking.pairwise_prob
        rank = ranking.rank
        for i in range(8):
            for j in range(8):
                if ranking.scores[i] != ranking.scores[j]:
                    assert (prob[i, j] > 0.5) == (rank[i] < rank[j])
        np.testing.assert_allclose(prob + prob.T, 1.0, atol=1e-6)


def test_pairwise_probabilities_follow_the_standard_error():
    mean = np.array([0.9, 0.8, 0.8, np.nan])
    tight = pairwise_probabilities(mean, np.full(4, 0.01))
    loose = pairwise_probabilities(mean, np.full(4, 0.2))
    assert tight[0, 1] > 0.99 and 0.5 < loose[0, 1] < 0.7
    assert tight[1, 2] == 0.5 and tight[0, 3] == 0.5 and tight[0, 0] == 0.5
    exact = pairwise_probabilities(np.array([1.0, 1.0, 0.5]), np.zeros(3))
    assert exact[0, 1] == 0.5 and exact[0, 2] == 1.0 and exact[2, 0] == 0.0


def test_config_builds_the_expert_judge_and_rejects_bad_values():
    cfg = RankerConfig(kind="expert", expert_depth=1, expert_verdict="agreement")
    ranker = make_ranker(cfg)
    assert isinstance(ranker, ExpertRanker) and ranker.depth == 1
    assert ranker_description(cfg) == {"kind": "expert", "depth": 1, "verdict": "agreement"}
    with pytest.raises(ValueError, match="expert_verdict must be one of"):
        RankerConfig(kind="expert", expert_verdict="vibes")
    with pytest.raises(ValueError, match="expert_depth must be an int >= 1"):
        RankerConfig(kind="expert", expert_depth=0)
    with pytest.raises(ValueError, match="verdict must be one of"):
        ExpertRanker(verdict="vibes")


def test_the_expert_judge_alone_is_the_recommended_regret_verdict_compared_as_sums():
    # `experiments/sailor.py cpu --sailor.ranker.kind expert`, the README's command
    _, args = load_script("experiments/sailor.py").parse(["cpu", "--sailor.ranker.kind", "expert"])
    ranker = make_ranker(args.sailor.ranker)
    assert args.sailor.ranker.expert_verdict == "regret" and ranker.aggregate == "mean"
    assert args.sailor.ranker.aggregate == ranker.aggregate  # the config knows what it resolves to
    assert resolve_comparison(args.sailor.preferences.compare, ranker.aggregate) == "sum"


@pytest.mark.parametrize("verdict", ["regret", "agreement", "value"])
def test_the_configs_aggregate_is_the_rankers(verdict):
    cfg = RankerConfig(kind="expert", expert_depth=1, expert_verdict=verdict)
    assert cfg.aggregate == make_ranker(cfg).aggregate
    assert RankerConfig(kind="random").aggregate == make_ranker(RankerConfig(kind="random")
                                                                ).aggregate == "sum"


def test_a_run_saved_under_an_old_default_resumes_only_where_it_ran_the_same():
    llm = SailorConfig(ranker=RankerConfig(kind="llm"))
    saved = json.loads(config_json(llm))
    saved["ranker"]["expert_verdict"] = "value"  # as saved on 2026-11-28 before noon
    saved["preferences"]["compare"] = "auto"  # as saved before that
    assert config_differences(saved, json.loads(config_json(llm)), llm) == []  # the same run
    expert = SailorConfig(ranker=RankerConfig(kind="expert"))
    saved = json.loads(config_json(expert))
    saved["ranker"]["expert_verdict"] = "value"
    assert config_differences(saved, json.loads(config_json(expert)), expert) == [
        "ranker.expert_verdict: saved 'value', given 'regret'"]
    saved = json.loads(config_json(expert))
    saved["preferences"]["compare"] = "auto"  # the regret verdict compared per move
    assert config_differences(saved, json.loads(config_json(expert)), expert) == [
        "preferences.compare: saved 'auto', given 'sum'"]
