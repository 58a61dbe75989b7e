"""The judge-quality benchmark: metrics on hand cases, end to end on a tiny pool."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support import TINY_POOL

from sailor_jax.config import LLMRankerConfig
from sailor_jax.errors import UserError
from sailor_jax.types import Ranking
from sailor_lab import judge_eval, policy_groups


def test_metrics_on_hand_made_rankings():
    eps = [np.array([0.0, 1.0, 0.5]), np.array([0.0, 0.0, 1.0])]
    right = [Ranking(order=np.array([0, 2, 1])), Ranking(order=np.array([1, 0, 2]))]
    wrong = [Ranking(order=np.array([1, 2, 0])), None]
    ref = {"self": right}
    good = judge_eval.judge_metrics(right, eps, ref)
    assert good["skill_order_accuracy"] == 1.0 and good["skill_pairs"] == 5
    assert good["agreement_self"] == 1.0 and good["failed_groups"] == 0
    assert good["kendall_tau"] == pytest.approx(np.mean([1.0, 0.8164966]), abs=1e-6)
    bad = judge_eval.judge_metrics(wrong, eps, ref)
    assert bad["skill_order_accuracy"] == 0.0 and bad["failed_groups"] == 1
    assert bad["agreement_self"] == 0.0 and bad["kendall_tau"] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="need 2 <= m <= pool size"):
        judge_eval.sample_groups(5, 6, 1)


def test_a_judge_that_ties_everything_orders_the_pool_at_chance():
    # Pools are stored best player first; a ranking that keeps the groups' order (what a
    # constant rating or a pairwise judge at 0.5 gives) must score chance, not 1.0.
    epsilon = np.repeat([0.0, 0.3, 0.6, 1.0], 8)
    groups = judge_eval.sample_groups(len(epsilon), 8, 200, seed=3)
    assert all(len(set(g.tolist())) == 8 for g in groups)
    again = judge_eval.sample_groups(len(epsilon), 8, 200, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(groups, again, strict=True))  # seeded
    kept = [Ranking(order=np.arange(8)) for _ in groups]
    accuracy = judge_eval.pair_accuracy(kept, judge_eval.skill_truth([epsilon[g] for g in groups]))
    assert abs(accuracy - 0.5) < 0.05


@pytest.mark.parametrize("judge", ["expert", "outcome"])
def test_benchmark_end_to_end_with_oracle_judges(bench, judge, capsys):
    record = bench.main(bench.Args(judge=judge, json=True, **TINY_POOL))
    (line,) = map(json.loads, capsys.readouterr().out.splitlines())  # stdout: JSON only
    assert line["judge"] == judge and line["groups"] == 2 and line["cpu"]
    assert line["skill_pairs"] > 0 and 0.0 <= line["skill_order_accuracy"] <= 1.0
    assert record[f"agreement_{judge}"] == 1.0  # a judge agrees with itself
    if judge == "expert":  # the positive control separates the expert from random play
        assert record["skill_order_accuracy"] == 1.0


def test_benchmark_takes_the_expert_verdict(bench, capsys):
    record = bench.main(bench.Args(judge="expert:value", json=True, **TINY_POOL))
    assert record["judge"] == "expert:value" and record["skill_pairs"] > 0
    cfg, judge = bench.make_judge(bench.Args(judge="expert:value"))
    assert cfg.expert_verdict == "value" and judge.aggregate == "sum"
    with pytest.raises(ValueError, match="expert_verdict must be one of"):
        bench.make_judge(bench.Args(judge="expert:nope"))


def test_benchmark_end_to_end_with_the_tiny_llm(bench, tiny_llm_dir, capsys):
    llm = LLMRankerConfig(model=tiny_llm_dir, mode="pairwise", max_prompt_tokens=1024,
                          batch_size=4)
    record = bench.main(bench.Args(judge="llm", llm=llm, json=True, **TINY_POOL))
    (line,) = map(json.loads, capsys.readouterr().out.splitlines())  # stdout: JSON only
    assert line["mode"] == "pairwise" and line["prompts"] == 2 * 2 * 6  # groups x pairs x 2
    assert 0.0 <= line["position_bias"] <= 1.0 and 0.0 < line["label_mass"] <= 1.0
    assert line["tokens_per_pair"] > 0 and line["seconds_per_pair"] > 0
    assert record["failed_groups"] == 0 and 0.0 <= record["skill_order_accuracy"] <= 1.0


def test_sailor_setting_end_to_end(bench, capsys):
    """Groups of one policy, verdict vs length and score, identifiability table."""
    args = bench.Args(setting="sailor", policies=("eps1.0", "ppo_init"),
                      judges=("expert", "outcome"), policy_groups=2, game_len=300, window=20,
                      json=True, **TINY_POOL)
    record = bench.main(args)
    assert [(r["judge"], r["policy"]) for r in record["correlations"]] == [
        ("expert", "eps1.0"), ("expert", "ppo_init"), ("outcome", "eps1.0"),
        ("outcome", "ppo_init")]
    outcome = [r for r in record["correlations"] if r["judge"] == "outcome"]
    assert all(r["tau_score"] == pytest.approx(1.0) for r in outcome)  # it ranks by score
    whole = {r["feature"]: r for r in record["identifiability"]["whole"]}
    assert not whole["game_over"]["identifiable"]  # every game ends within 300 moves
    captured = capsys.readouterr()  # --json: the tables on stderr, one JSON line on stdout
    assert "**not identifiable**" in captured.err
    assert [json.loads(line)["setting"] for line in captured.out.splitlines()] == ["sailor"]
    with pytest.raises(UserError, match="unknown policy"):
        policy_groups.policy_collect("greedy", 2, 10)


def test_prompt_stats_of_rated_windows_and_of_pairs_against_hand_counts():
    rated = [{"event": "pointwise_prompt", "label_mass": m, "seconds": s, "prompt_tokens": t}
             for m, s, t in ((0.5, 1.0, 100), (None, 2.0, 200), (0.7, 3.0, 300))]
    repeat = {**rated[0], "seconds": 0.0}  # a prompt run before: its result, no model time
    stats = judge_eval.llm_prompt_stats([*rated, repeat, {"event": "group"}])
    assert stats == pytest.approx({"label_mass": 1.7 / 3, "prompts": 4, "distinct_prompts": 3,
                                   "seconds_per_window": 2.0, "tokens_per_window": 200.0})
    pairs = [{"event": "pairwise_prompt", "p_first": p, "label_mass": 0.9, "seconds": 1.0,
              "prompt_tokens": 50} for p in (0.8, 0.3, 0.6, 0.7)]
    assert judge_eval.llm_prompt_stats(pairs) == pytest.approx({
        "position_bias": 0.75, "label_mass": 0.9, "prompts": 4, "distinct_prompts": 4,
        "seconds_per_pair": 2.0, "tokens_per_pair": 100.0})
    assert judge_eval.llm_prompt_stats([{"event": "group"}]) == {}
