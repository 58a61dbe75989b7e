"""The learning benchmark: recipes by name, JSON lines, figure, resume."""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import numpy as np
import pytest
from support import load_script

from sailor_jax.config import SMALL_NETWORK, NetworkConfig, PPOConfig, recipes
from sailor_jax.game.reward import THETA0
from sailor_lab import dqn
from sailor_lab.dqn import DQN_RECIPES, DQNConfig

TINY = PPOConfig(num_envs=8, num_steps=8, num_minibatches=2, updates_per_segment=1,
                 network=NetworkConfig(hidden_sizes=(16,), first_layer="embedding"))


def test_recipes_are_looked_up_by_name():
    assert recipes.recipe("default") == PPOConfig()  # the GPU-sized default
    assert PPOConfig().network == dataclasses.replace(SMALL_NETWORK, hidden_sizes=(256, 256))
    small = recipes.recipe("afterstates_64")  # the CPU-sized default
    assert small == PPOConfig(network=SMALL_NETWORK)
    assert SMALL_NETWORK.hidden_sizes == (64, 64) and SMALL_NETWORK.actions == "afterstates"
    v0 = recipes.recipe("v0")
    assert (v0.gamma, v0.num_envs, v0.num_steps, v0.ent_coef) == (0.99, 1024, 128, 0.01)
    assert v0.network == NetworkConfig(hidden_sizes=(256, 256), activation="tanh",
                                       first_layer="one_hot", trunk="separate")
    assert sorted(recipes.RECIPES) == ["afterstates_64", "default", "v0"]
    assert all(isinstance(c, PPOConfig) for c in recipes.RECIPES.values())
    with pytest.raises(ValueError, match=r"unknown recipe 'v9' \(known: v0, default"):
        recipes.recipe("v9")
    with pytest.raises(ValueError, match="unknown recipe 'r10_afterstates_256'"):
        recipes.recipe("r10_afterstates_256")  # a retired trial of the recipe search


@pytest.fixture
def learning(monkeypatch):
    monkeypatch.setitem(recipes.RECIPES, "tiny", TINY)
    monkeypatch.setitem(recipes.RECIPES, "tiny_shared", dataclasses.replace(
        TINY, network=dataclasses.replace(TINY.network, trunk="shared")))
    return load_script("benchmarks/learning.py")


def test_learning_benchmark_writes_a_curve_per_recipe(learning, tmp_path, capsys):
    args = learning.Args(recipe=("tiny", "tiny_shared"), total_timesteps=300, num_seeds=2,
                         eval_every=128, eval_episodes=3, eval_max_len=100, out=str(tmp_path),
                         json=True)
    curves = learning.main(args)
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]  # stdout: JSON only
    assert "tiny: 384 env steps per seed x 2 seeds (--total-timesteps 300 rounded up" \
        in captured.err  # the budget it runs, printed
    assert [p["recipe"] for p in lines] == ["tiny"] * 3 + ["tiny_shared"] * 3
    # eval_every 128 = 2 updates of 64 steps; 300 steps round up to 3 segments.
    assert [p["env_steps"] for p in lines[:3]] == [128, 256, 384]
    for p in lines:
        assert p["seeds"] == 2 and p["episodes_per_seed"] == 3
        assert p["score_ci_low"] <= p["score_mean"] <= p["score_ci_high"]
        assert p["score_mean"] > 0 and p["sps"] > 0 and p["train_s"] > 0
        rates = [p[f"tile_{t}"] for t in learning.TILES]
        assert rates == sorted(rates, reverse=True) and 0 <= rates[-1] <= rates[0] <= 1
        assert p["win_rate_mean"] == pytest.approx(p["tile_2048"])
        assert len(p["score_per_seed"]) == len(p["win_rate_per_seed"]) == 2
        assert p["score_mean"] == pytest.approx(np.mean(p["score_per_seed"]))
        assert p["win_rate_mean"] == pytest.approx(np.mean(p["win_rate_per_seed"]))
        assert 0 < p["length_mean"] <= 100
        assert p["cpu"] and p["device"]
    # cumulative, written rounded to 0.01 s: tiny segments can round to the same value
    assert 0 < lines[0]["train_s"] <= lines[1]["train_s"] <= lines[2]["train_s"]
    for name in ("tiny", "tiny_shared"):
        with open(tmp_path / name / "curve.jsonl", encoding="utf-8") as f:
            written = [json.loads(line) for line in f]
        assert written == curves[name]
    assert os.path.getsize(tmp_path / "learning.png") > 10_000
    # Resume of a finished run trains nothing and returns the same curve.
    again = learning.main(dataclasses.replace(args, resume=True, json=False))
    assert again == curves


def test_unknown_recipe_fails_before_any_work(learning, tmp_path):
    args = learning.Args(recipe=("tiny", "nope"), out=str(tmp_path / "run"))
    with pytest.raises(ValueError, match="unknown recipe 'nope'"):
        learning.main(args)
    assert not os.path.exists(tmp_path / "run")
    with pytest.raises(ValueError, match="--eval-every must be positive"):
        learning.main(dataclasses.replace(args, recipe=("tiny",), eval_every=0))


def test_a_whole_run_decay_ends_with_the_run(learning, monkeypatch):
    """`lr_decay_updates=0` (the default recipe) decays over this run's updates: segments of
    one evaluation interval each, `--total-timesteps` rounded up to whole segments."""
    args = learning.Args(recipe=("default",), total_timesteps=9_994_240,
                         eval_every=2_500_000)
    run = learning.run_config(args, "default")
    updates = round(2_500_000 / PPOConfig().batch_size)  # 256 x 32 env steps per update
    assert run.agent.updates_per_segment == updates == 305
    assert run.agent.lr_decay_updates == 4 * updates  # 4 x 2,498,560 = 9,994,240 steps
    longer = learning.run_config(dataclasses.replace(args, total_timesteps=10_000_000),
                                 "default")
    assert longer.agent.lr_decay_updates == 5 * updates  # rounded up to a 5th segment
    monkeypatch.setitem(recipes.RECIPES, "fixed_decay", dataclasses.replace(
        PPOConfig(), lr_decay_updates=1216))
    fixed = learning.run_config(args, "fixed_decay")  # an explicit count stays
    assert fixed.agent.lr_decay_updates == 1216


TINY_DQN = DQNConfig(num_envs=8, num_steps=4, buffer_size=256, batch_size=16, learning_starts=16,
                     target_update_interval=4, epsilon_decay_steps=64,
                     network=NetworkConfig(hidden_sizes=(16,), first_layer="embedding",
                                           trunk="separate"))


def test_dqn_recipes_are_the_transfer_dqn_and_its_afterstate_twin():
    """`dqn` is the transfer experiment's `DQNConfig()`; `dqn_afterstates`
    changes only where each move's Q-value is read (its afterstate)."""
    assert recipes.recipe("dqn", DQN_RECIPES) == DQNConfig()
    after = recipes.recipe("dqn_afterstates", DQN_RECIPES)
    assert after == dataclasses.replace(DQNConfig(), network=dataclasses.replace(
        DQNConfig().network, actions="afterstates"))
    assert not set(DQN_RECIPES) & set(recipes.RECIPES)
    with pytest.raises(ValueError, match=r"unknown recipe 'dqn2' \(known: .*dqn_afterstates"):
        recipes.recipe("dqn2", DQN_RECIPES)


def test_dqn_segments_cut_anywhere_train_the_same():
    """The benchmark cuts DQN into one evaluation interval per segment (`num_steps`): 2
    segments of 4 vectorised steps give the parameters 1 segment of 8 gives."""
    theta = np.asarray(THETA0, np.float32)
    params = []
    for steps, segments in ((4, 2), (8, 1)):
        init, segment = dqn.make_train(dataclasses.replace(TINY_DQN, num_steps=steps))
        state = init(jax.random.PRNGKey(3))
        for _ in range(segments):
            state, metrics = segment(state, theta)
        assert int(state.env_steps) == 64 and int(state.update_step) > 0
        params.append(state.params)
    for a, b in zip(jax.tree.leaves(params[0]), jax.tree.leaves(params[1]), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_learning_benchmark_runs_dqn_recipes(learning, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(DQN_RECIPES, "tiny_dqn", TINY_DQN)
    monkeypatch.setitem(DQN_RECIPES, "tiny_dqn_afterstates", dataclasses.replace(
        TINY_DQN, network=dataclasses.replace(TINY_DQN.network, actions="afterstates")))
    args = learning.Args(recipe=("tiny_dqn", "tiny_dqn_afterstates"), total_timesteps=100,
                         num_seeds=2, eval_every=48, eval_episodes=3, eval_max_len=100,
                         out=str(tmp_path), json=True)
    run = learning.run_config(args, "tiny_dqn")
    assert run.agent == dataclasses.replace(TINY_DQN, num_steps=6)  # 48 env steps / 8 envs
    assert run.num_segments == 3  # 100 steps round up to whole segments of 48
    curves = learning.main(args)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(p["recipe"], p["env_steps"]) for p in lines] == [
        (name, steps) for name in ("tiny_dqn", "tiny_dqn_afterstates") for steps in (48, 96, 144)]
    for p in lines:
        assert p["score_mean"] > 0 and p["sps"] > 0 and 0 < p["length_mean"] <= 100
        assert len(p["score_per_seed"]) == 2
    with open(tmp_path / "tiny_dqn" / "config.json", encoding="utf-8") as f:
        assert json.load(f)["agent"]["buffer_size"] == 256  # the DQN config, saved
    with open(tmp_path / "tiny_dqn" / "metrics.jsonl", encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    logged = [r for r in records if "losses/td_loss" in r]  # one DQN record per segment
    assert [r["step"] for r in logged] == [48, 96, 144]
    assert all(r["charts/SPS"] > 0 and 0 < r["charts/epsilon"] <= 1 for r in logged)
    again = learning.main(dataclasses.replace(args, resume=True, json=False))
    assert again == curves


def test_cpu_sized_experiments_train_the_small_trunk_and_training_defaults_the_wide_one():
    """Round 11 made the (256, 256) trunk `PPOConfig()`'s; every SAILOR, comparison and
    theta-search preset keeps the (64, 64) trunk its tables were measured with (it trains
    3.6-5x the env steps/s on a 2-core CPU), and a plain PPO run trains the new default."""
    from sailor_jax.config import SailorConfig, TrainConfig
    from sailor_lab.search_config import ThetaSearchConfig

    networks = {}
    for name, preset in load_script("experiments/sailor.py").PRESETS.items():
        networks[f"sailor:{name}"] = preset.ppo.network
    for name, (_, cfg, _) in load_script("experiments/compare.py").PRESETS.items():
        networks[f"compare:{name}"] = cfg.ppo.network
    assert len(networks) == 3 + 2
    networks["ThetaSearchConfig()"] = ThetaSearchConfig().ppo.network
    assert {k: v for k, v in networks.items() if v != SMALL_NETWORK} == {}
    assert TrainConfig().ppo.network == SailorConfig().ppo.network == PPOConfig().network
    assert PPOConfig().network.hidden_sizes == (256, 256)
