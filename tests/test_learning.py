"""The learning benchmark (issue 10): recipes by name, JSON lines, figure, resume."""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import numpy as np
import pytest
from test_experiments import _load

from sailor_jax.agents import dqn
from sailor_jax.config import SMALL_NETWORK, DQNConfig, NetworkConfig, PPOConfig, recipes
from sailor_jax.game.reward import RewardSpec

TINY = PPOConfig(num_envs=8, num_steps=8, num_minibatches=2, updates_per_segment=1,
                 network=NetworkConfig(hidden_sizes=(16,), first_layer="embedding"))


def test_recipes_are_looked_up_by_name():
    assert recipes.recipe("default") == PPOConfig()
    # Round 11 confirmed round 10's (256, 256) trunk: it is the default.
    assert recipes.recipe("r10_afterstates_256") == PPOConfig()
    assert PPOConfig().network == dataclasses.replace(SMALL_NETWORK, hidden_sizes=(256, 256))
    # Round 9's pick was the default of rounds 9-10, its lr decayed over the run instead of a
    # fixed 10M: `afterstates_64`, the default with the (64, 64) trunk.
    pick = recipes.recipe("r9_envs256_afterstates_64")
    small = recipes.recipe("afterstates_64")
    assert dataclasses.replace(pick, lr_decay_updates=0) == small
    assert small == PPOConfig(network=SMALL_NETWORK)
    assert SMALL_NETWORK.hidden_sizes == (64, 64) and SMALL_NETWORK.actions == "afterstates"
    old = recipes.recipe("r2_relu")  # the default of rounds 3-8
    assert (old.num_envs, old.lr, old.lr_schedule, old.network.hidden_sizes,
            old.network.actions, old.network.symmetry) == (1024, 3e-4, "constant", (256, 256),
                                                           "board", "none")
    v0 = recipes.recipe("v0")
    assert (v0.gamma, v0.num_envs, v0.num_steps, v0.ent_coef) == (0.99, 1024, 128, 0.01)
    assert v0.network == NetworkConfig(hidden_sizes=(256, 256), activation="tanh",
                                       first_layer="one_hot", trunk="separate")
    assert all(isinstance(c, PPOConfig) for c in recipes.RECIPES.values())
    with pytest.raises(ValueError, match=r"unknown recipe 'v9' \(known: v0, default"):
        recipes.recipe("v9")


def test_decayed_recipes_reach_lr_zero_within_their_budget():
    """Rounds 5-9 decay the lr to 0 within the 10M search budget (less than one update short);
    the 30M recipe is r6_envs256 with only the decay stretched to 3x that budget."""
    for name, cfg in recipes.RECIPES.items():
        if name[:2] in ("r5", "r6", "r7", "r8", "r9") and cfg.lr_schedule == "linear":
            budget = recipes.SEARCH_STEPS * (3 if name.endswith("_30m") else 1)
            decay_steps = cfg.lr_decay_updates * cfg.batch_size
            assert budget - cfg.batch_size < decay_steps <= budget, name
    short, long = recipes.recipe("r6_envs256"), recipes.recipe("r6_envs256_30m")
    assert long.lr_decay_updates == 3 * short.lr_decay_updates == 3648
    assert dataclasses.replace(long, lr_decay_updates=short.lr_decay_updates) == short


def _changes(base: PPOConfig, cfg: PPOConfig) -> dict:
    """The fields of `cfg` that differ from `base` (`network.X` for the network's)."""
    diff = {f"network.{k}": v for k, v in dataclasses.asdict(cfg.network).items()
            if getattr(base.network, k) != v}
    diff.update({k: v for k, v in dataclasses.asdict(cfg).items()
                 if k != "network" and getattr(base, k) != v})
    return diff


def test_round_10_recipes_are_the_default_with_one_change():
    """Issue 36's round 10: each recipe is the default of then (`afterstates_64`) with only its
    named change, so a difference in the learning table is that change's."""
    base = recipes.recipe("afterstates_64")
    changed = {"r10_afterstates_128": {"network.hidden_sizes": (128, 128)},
               "r10_afterstates_256": {"network.hidden_sizes": (256, 256)},
               "r10_afterstates_64x3": {"network.hidden_sizes": (64, 64, 64)},
               "r10_epochs8": {"update_epochs": 8},
               "r10_steps128": {"num_steps": 128, "num_minibatches": 32},
               "r10_ent003": {"ent_coef": 0.003}}
    assert sorted(changed) == sorted(n for n in recipes.RECIPES if n.startswith("r10"))
    for name, fields in changed.items():
        cfg = recipes.recipe(name)
        assert _changes(base, cfg) == fields, name
        assert cfg.batch_size // cfg.num_minibatches == base.batch_size // base.num_minibatches


def test_round_11_recipes_are_the_256_trunk_with_one_change():
    """Round 11: each recipe is `r10_afterstates_256` with only its named change."""
    base = recipes.recipe("r10_afterstates_256")
    changed = {"r11_afterstates_512": {"network.hidden_sizes": (512, 512)},
               "r11_256_steps128": {"num_steps": 128, "num_minibatches": 32},
               "r11_256_lr5e-4": {"lr": 5e-4}}
    assert sorted(changed) == sorted(n for n in recipes.RECIPES if n.startswith("r11"))
    for name, fields in changed.items():
        cfg = recipes.recipe(name)
        assert _changes(base, cfg) == fields, name


@pytest.fixture
def learning(monkeypatch):
    monkeypatch.setitem(recipes.RECIPES, "tiny", TINY)
    monkeypatch.setitem(recipes.RECIPES, "tiny_shared", dataclasses.replace(
        TINY, network=dataclasses.replace(TINY.network, trunk="shared")))
    return _load("benchmarks/learning.py")


def test_learning_benchmark_writes_a_curve_per_recipe(learning, tmp_path, capsys):
    args = learning.Args(recipe=("tiny", "tiny_shared"), total_timesteps=300, num_seeds=2,
                         eval_every=128, eval_episodes=3, eval_max_len=100, out=str(tmp_path),
                         json=True)
    curves = learning.main(args)
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]  # stdout: JSON only
    assert "tiny: 384 env steps per seed x 2 seeds (--total-timesteps 300 rounded up" \
        in captured.err  # the budget it runs, printed (issue 25)
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


def test_a_whole_run_decay_ends_with_the_run(learning):
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
    fixed = learning.run_config(args, "r6_envs256")  # an explicit count stays
    assert fixed.agent.lr_decay_updates == recipes.recipe("r6_envs256").lr_decay_updates


TINY_DQN = DQNConfig(num_envs=8, num_steps=4, buffer_size=256, batch_size=16, learning_starts=16,
                     target_update_interval=4, epsilon_decay_steps=64,
                     network=NetworkConfig(hidden_sizes=(16,), first_layer="embedding",
                                           trunk="separate"))


def test_dqn_recipes_are_the_transfer_dqn_and_its_afterstate_twin():
    """Issue 36 item 3: `dqn` is the transfer experiment's `DQNConfig()`; `dqn_afterstates`
    changes only where each move's Q-value is read (its afterstate)."""
    assert recipes.recipe("dqn") == DQNConfig()
    after = recipes.recipe("dqn_afterstates")
    assert after == dataclasses.replace(DQNConfig(), network=dataclasses.replace(
        DQNConfig().network, actions="afterstates"))
    assert not set(recipes.DQN_RECIPES) & set(recipes.RECIPES)
    with pytest.raises(ValueError, match=r"unknown recipe 'dqn2' \(known: .*dqn_afterstates"):
        recipes.recipe("dqn2")


def test_dqn_segments_cut_anywhere_train_the_same():
    """The benchmark cuts DQN into one evaluation interval per segment (`num_steps`): 2
    segments of 4 vectorised steps give the parameters 1 segment of 8 gives."""
    theta = np.asarray(RewardSpec().theta0, np.float32)
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
    monkeypatch.setitem(recipes.DQN_RECIPES, "tiny_dqn", TINY_DQN)
    monkeypatch.setitem(recipes.DQN_RECIPES, "tiny_dqn_afterstates", dataclasses.replace(
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
    from sailor_jax.config.search import ThetaSearchConfig

    networks = {}
    for name, preset in _load("experiments/sailor.py").PRESETS.items():
        networks[f"sailor:{name}"] = preset.ppo.network
    for name, (_, cfg, _) in _load("experiments/compare.py").PRESETS.items():
        networks[f"compare:{name}"] = cfg.ppo.network
    assert len(networks) == 3 + 2
    networks["ThetaSearchConfig()"] = ThetaSearchConfig().ppo.network
    assert {k: v for k, v in networks.items() if v != SMALL_NETWORK} == {}
    assert TrainConfig().ppo.network == SailorConfig().ppo.network == PPOConfig().network
    assert PPOConfig().network.hidden_sizes == (256, 256)
