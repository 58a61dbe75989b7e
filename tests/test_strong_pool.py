"""The strong-play pool: players, skill truth, cache, group draw and the benchmark's setting."""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import pytest
from support import load_script

from sailor_jax.config import SMALL_NETWORK
from sailor_jax.errors import UserError
from sailor_jax.judges import OutcomeRanker
from sailor_jax.types import Ranking
from sailor_lab import judge_eval, policy_groups, strong_pool
from sailor_lab.starts import STARTS
from sailor_lab.strong_pool import StrongPoolArgs

# Experts only (no PPO training): the depth-1 expert against random play, tiny games.
TINY = dict(players=("eps1.0@1", "eps0.0@1"), games_per_player=4, skill_games=6, max_len=40,
            window=10, m=4, groups=3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    args = StrongPoolArgs(**TINY, cache_dir=str(tmp_path_factory.mktemp("pool")))
    return args, strong_pool.build_strong_pool(args)


def test_players_parse_and_bad_names_are_refused():
    parse = policy_groups.parse_policy
    assert parse("ppo_1m:ones") == ("ppo", {"steps": 1_000_000, "start": "ones"})
    assert parse("ppo_250k") == ("ppo", {"steps": 250_000, "start": "theta0"})
    assert parse("eps0.1@1") == ("expert", {"epsilon": 0.1, "depth": 1})
    assert parse("eps0.3") == ("expert", {"epsilon": 0.3, "depth": 2})
    assert parse("eps0.3", depth=1) == ("expert", {"epsilon": 0.3, "depth": 1})
    for bad, match in (("greedy", "unknown policy"), ("ppo_1m:nope", "unknown start"),
                       ("epsx", "bad policy name"), ("eps2", "need 0 <= epsilon")):
        with pytest.raises(UserError, match=match):
            parse(bad)
        with pytest.raises(UserError, match=match):  # refused before anything is played
            StrongPoolArgs(players=("ppo_1m", bad))
    with pytest.raises(UserError, match="--players: need at least two distinct"):
        StrongPoolArgs(players=("ppo_1m", "ppo_1m"))
    with pytest.raises(UserError, match="--m must be in"):
        StrongPoolArgs(**{**TINY, "m": 9})


def test_pool_holds_games_windows_and_a_skill_truth(tiny):
    args, pool = tiny
    p = 2 * args.games_per_player
    assert pool.games.boards.shape == (p, args.max_len + 1, 16)
    assert pool.windows.boards.shape == (p, args.window + 1, 16)
    assert np.all(pool.windows.lengths <= args.window)
    np.testing.assert_array_equal(pool.player, [0] * 4 + [1] * 4)
    # the expert outscores random play: it is ranked first, whatever the listed order
    assert pool.skill[1] > pool.skill[0]
    np.testing.assert_array_equal(pool.skill_rank, [1] * 4 + [0] * 4)
    # a window's points are the points of its moves, within its game's
    assert np.all(pool.windows.score <= pool.games.score + 1e-3)


def test_pool_is_deterministic_and_the_cache_returns_it(tiny, tmp_path):
    args, pool = tiny
    again = strong_pool.build_strong_pool(StrongPoolArgs(**TINY, cache_dir=None))
    cached = strong_pool.build_strong_pool(args)  # read back from the cache folder
    for other in (again, cached):
        for view in strong_pool.VIEWS:
            for a, b in zip(vars(pool.view(view)).values(), vars(other.view(view)).values(),
                            strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(pool.skill, other.skill)
        assert other.players == pool.players


def test_groups_are_shuffled_so_index_ties_carry_no_skill(tiny):
    """Items are stored best-listed player first; a judge that ties everything (stable sort
    keeps the lower index first) must not order by skill from the storage order."""
    args, pool = tiny
    args = StrongPoolArgs(**{**TINY, "groups": 64}, cache_dir=args.cache_dir)
    groups, index, truth = strong_pool.draw_groups(pool, args, "games")
    assert len(groups) == 64 and all(len(i) == 4 for i in index)
    assert any(np.any(np.diff(i) < 0) for i in index)  # not all sorted
    ties = [Ranking(order=np.arange(4, dtype=np.int32)) for _ in index]
    accuracy = judge_eval.judge_metrics(ties, truth, {})["skill_order_accuracy"]
    assert 0.35 < accuracy < 0.65
    np.testing.assert_array_equal(groups[0].score, pool.games.score[index[0]])


def test_pair_table_counts_cross_player_pairs(tiny):
    args, pool = tiny
    groups, index, truth = strong_pool.draw_groups(pool, args, "games")
    rankings = OutcomeRanker().rank_groups(groups)
    rows = strong_pool.pair_table(rankings, index, pool)
    right, total = judge_eval.pair_counts(rankings, judge_eval.skill_truth(truth))
    assert [(r["better"], r["worse"]) for r in rows] == [("eps0.0@1", "eps1.0@1")]
    assert rows[0]["pairs"] == total.sum()
    assert rows[0]["accuracy"] == pytest.approx(right.sum() / total.sum())


def test_a_ppo_player_is_trained_on_its_start(monkeypatch):
    """`ppo_<n>:<start>`: the recipe's PPO trained on that start's theta for n env steps from
    the seed, then its network plays (trained here at 8 envs x 8 steps, the recipe's network)."""
    real, calls = policy_groups.train_ppo_params, []

    def small(cfg, steps, seed=0, theta=None):
        calls.append((cfg, steps, seed, theta))
        return real(dataclasses.replace(cfg, num_envs=8, num_steps=8, updates_per_segment=1),
                    steps, seed, theta)

    monkeypatch.setattr(policy_groups, "train_ppo_params", small)
    batch = policy_groups.policy_collect("ppo_1k:ones", 2, 5, seed=3)(jax.random.key(0))
    assert batch.boards.shape == (2, 6, 16) and batch.actions.shape == (2, 5)
    ((cfg, steps, seed, theta),) = calls
    assert (steps, seed, tuple(theta)) == (1000, 3, tuple(STARTS["ones"].theta))
    assert cfg.num_envs == 256 and cfg.network == SMALL_NETWORK


def test_judge_quality_strong_setting_end_to_end(tiny, capsys):
    args, _ = tiny
    bench = load_script("benchmarks/judge_quality.py")
    record = bench.main(bench.Args(setting="strong", judge="outcome", expert_depth=1,
                                   strong=args, json=True))
    captured = capsys.readouterr()
    (line,) = map(json.loads, captured.out.splitlines())
    assert line["setting"] == "strong" and set(line["views"]) == {"games", "windows"}
    assert "| games | outcome |" in captured.err
    for view in ("games", "windows"):
        rows = record["views"][view]
        assert set(rows) == {"outcome", "expert"}  # the judge under test is a reference here
        assert rows["outcome"]["skill_pairs"] > 0
        assert rows["outcome"]["pairs_by_player"][0]["better"] == "eps0.0@1"
    # the expert separates its own play from random play on whole games
    assert record["views"]["games"]["expert"]["skill_order_accuracy"] == 1.0
