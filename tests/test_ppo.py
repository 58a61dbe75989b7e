"""Tests for `sailor_jax.agents.ppo`: config validation, GAE, the compiled 2048 segment, seed vmap,
theta handling, and learning sanity on the probe environments of `tests/probe_envs.py`.

Compiled functions are built once at module level (small configs; the 2048 segment compiles
in a few seconds on CPU) and the expensive results are module-scoped fixtures.
"""

from __future__ import annotations

import dataclasses
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import probe_envs
import pytest

from sailor_jax.agents import ppo
from sailor_jax.agents.networks import make_network
from sailor_jax.agents.optimizer import lr_schedule
from sailor_jax.config import NetworkConfig, PPOConfig, SailorConfig, TrainConfig
from sailor_jax.game import env
from sailor_jax.game.features import NUM_FEATURES
from sailor_jax.game.reward import THETA0
from sailor_jax.types import RunnerState, RunningStats, SegmentMetrics, Transition
from sailor_lab.search_config import ThetaSearchConfig

NET = NetworkConfig(hidden_sizes=(32,))
CFG = PPOConfig(num_envs=32, num_steps=16, update_epochs=2, num_minibatches=4,
                    updates_per_segment=3, lr=3e-4, lr_schedule="constant", network=NET)
NUM_SEEDS = 2
KEY = jax.random.PRNGKey(0)
THETA_BASELINE = jnp.asarray(THETA0, jnp.float32)
THETA_EMPTY = jnp.zeros((NUM_FEATURES,), jnp.float32).at[1].set(1.0)  # empty_cells only
SMOKE_SEGMENTS = 6
LEGAL_CHECK_ENVS = 64
LEGAL_CHECK_STEPS = 200

# ---------------------------------------------------------------------------------------------
# Compiled functions under test, built once.

PURE_INIT, PURE_SEGMENT = ppo._make_pure(CFG, ppo.GAME_2048)
INIT = jax.jit(PURE_INIT)
# What `make_train(CFG)` returns for the segment, plus a trace counter: a retrace fails loudly.
SEGMENT = jax.jit(chex.assert_max_traces(PURE_SEGMENT, n=1), donate_argnums=0)
INIT_SEEDS, SEGMENT_SEEDS = ppo.make_train(CFG, num_seeds=NUM_SEEDS)
_, APPLY = make_network(NET)
# gamma and gae_lambda enter GAE only arithmetically, so they can be traced: one compile per shape.
GAE = jax.jit(ppo.gae)


def _copy(tree):
    """Fresh buffers: the compiled segments donate their input runner state."""
    return jax.tree.map(jnp.copy, tree)


def run_segment(state: RunnerState, theta) -> tuple[RunnerState, SegmentMetrics]:
    return SEGMENT(_copy(state), jnp.asarray(theta, jnp.float32))


def _rollout_legality(params, key):
    """Play the trained (sampled) policy on fresh 2048 games with `env.step` (auto-reset).

    Returns `[T, N]` arrays: whether the sampled action was legal, and the score gain.
    """
    key_reset, key_play = jax.random.split(key)
    state = jax.vmap(env.reset)(jax.random.split(key_reset, LEGAL_CHECK_ENVS))

    def body(carry, key_t):
        state = carry
        key_action, key_step = jax.random.split(key_t)
        mask = env.legal_action_mask(state)
        logits, _ = APPLY(params, env.board_exponents(state), mask)
        action = jax.random.categorical(key_action, logits)
        legal = jnp.take_along_axis(mask, action[:, None], -1)[:, 0]
        state, res = jax.vmap(env.step)(state, action,
                                        jax.random.split(key_step, LEGAL_CHECK_ENVS))
        return state, (legal, res.score_gain)

    _, out = jax.lax.scan(body, state, jax.random.split(key_play, LEGAL_CHECK_STEPS))
    return out


ROLLOUT_LEGALITY = jax.jit(_rollout_legality)


@pytest.fixture(scope="module")
def state0() -> RunnerState:
    return INIT(KEY)


@pytest.fixture(scope="module")
def segment_a(state0):
    """One segment from `state0` with the baseline theta."""
    return run_segment(state0, THETA_BASELINE)


# ---------------------------------------------------------------------------------------------
# PPOConfig


def test_config_derived_properties():
    cfg = PPOConfig(num_envs=8, num_steps=6, num_minibatches=3, updates_per_segment=5)
    assert cfg.batch_size == 48
    assert cfg.minibatch_size == 16
    assert cfg.steps_per_segment == 240


def test_config_is_frozen_and_hashable():
    a = PPOConfig(num_envs=8, num_steps=4, network=NET)
    b = PPOConfig(num_envs=8, num_steps=4, network=NetworkConfig(hidden_sizes=(32,)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.num_envs = 16  # type: ignore[misc]
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert a.num_envs == 8  # never mutated


def test_config_indivisible_minibatches_names_the_numbers():
    with pytest.raises(ValueError) as err:
        PPOConfig(num_envs=10, num_steps=3, num_minibatches=4)
    msg = str(err.value)
    assert "10" in msg and "3" in msg and "30" in msg and "4" in msg


@pytest.mark.parametrize("field", ["num_envs", "num_steps", "update_epochs", "num_minibatches",
                                   "updates_per_segment"])
@pytest.mark.parametrize("value", [0, -3])
def test_config_non_positive_counts(field, value):
    with pytest.raises(ValueError) as err:
        PPOConfig(**{field: value})
    assert field in str(err.value) and str(value) in str(err.value)


@pytest.mark.parametrize("field, value", [("gamma", 0.0), ("gamma", 1.5), ("gamma", -0.25),
                                          ("gae_lambda", -0.1), ("gae_lambda", 1.25),
                                          ("clip_eps", 0.0), ("lr", -1e-3)])
def test_config_out_of_range(field, value):
    with pytest.raises(ValueError) as err:
        PPOConfig(**{field: value})
    assert field in str(err.value) and str(value) in str(err.value)


@pytest.mark.parametrize("field, value", [("gamma", 1.0), ("gae_lambda", 0.0),
                                          ("gae_lambda", 1.0), ("ent_coef", 0.0)])
def test_config_boundary_values_accepted(field, value):
    assert getattr(PPOConfig(**{field: value}), field) == value


def test_config_linear_schedule_decays_over_a_count_or_the_whole_run():
    with pytest.raises(ValueError, match="-5"):
        PPOConfig(lr_schedule="linear", lr_decay_updates=-5)
    with pytest.raises(ValueError, match="cosine"):
        PPOConfig(lr_schedule="cosine")  # type: ignore[arg-type]
    assert PPOConfig(lr_schedule="linear", lr_decay_updates=10).lr_decay_updates == 10
    whole_run = PPOConfig(lr_schedule="linear")  # the default: over the whole run
    assert whole_run.lr_decay_updates == 0 and whole_run == PPOConfig()
    with pytest.raises(ValueError, match=r"over_run\(total PPO updates"):
        lr_schedule(whole_run)  # unresolved: no silent constant or guessed length
    with pytest.raises(ValueError, match=r"over_run\(total PPO updates"):
        ppo.make_train(whole_run)
    assert whole_run.over_run(37).lr_decay_updates == 37
    assert whole_run.over_run(37) == dataclasses.replace(whole_run, lr_decay_updates=37)
    fixed = PPOConfig(lr_schedule="linear", lr_decay_updates=10)
    assert fixed.over_run(37) is fixed  # an explicit count is kept
    constant = PPOConfig(lr_schedule="constant")
    assert constant.over_run(37) is constant
    with pytest.raises(ValueError, match=">= 1 PPO update, got 0"):
        whole_run.over_run(0)


def test_run_configs_decay_over_their_own_updates():
    """`TrainConfig`, `SailorConfig` and `ThetaSearchConfig` resolve "the whole run" to the
    PPO updates per seed they train (segments x updates per segment)."""
    ppo_cfg = PPOConfig(num_envs=8, num_steps=4, num_minibatches=2, updates_per_segment=3)
    train = TrainConfig(total_timesteps=100, ppo=ppo_cfg)  # ceil(100 / 96) = 2 segments
    assert train.run_ppo.lr_decay_updates == 2 * 3
    assert SailorConfig(iterations=5, ppo=ppo_cfg).run_ppo.lr_decay_updates == 5 * 3
    search = ThetaSearchConfig(total_timesteps=1000, ppo=ppo_cfg)  # ceil(1000 / 96) = 11
    assert search.run_ppo.lr_decay_updates == 11 * 3
    assert TrainConfig(ppo=PPOConfig(lr_schedule="constant")).run_ppo.lr_schedule == "constant"


def test_lr_schedule_values():
    cfg = PPOConfig(lr=1e-3, lr_schedule="linear", lr_decay_updates=4, update_epochs=2,
                        num_minibatches=4)
    schedule = lr_schedule(cfg)
    steps_per_update = 8
    for update, expected in [(0, 1e-3), (1, 7.5e-4), (2, 5e-4), (4, 0.0), (9, 0.0)]:
        got = float(schedule(jnp.int32(update * steps_per_update + 3)))
        assert got == pytest.approx(expected, abs=1e-9), update
    constant = lr_schedule(PPOConfig(lr=2e-4, lr_schedule="constant"))
    assert float(constant(jnp.int32(12345))) == pytest.approx(2e-4)


# ---------------------------------------------------------------------------------------------
# GAE against a plain Python double loop


def _transitions(reward, value, done) -> Transition:
    t, n = reward.shape
    return Transition(
        obs=jnp.zeros((t, n, 16), jnp.int8), legal_action_mask=jnp.ones((t, n, 4), bool),
        action=jnp.zeros((t, n), jnp.int32), log_prob=jnp.zeros((t, n), jnp.float32),
        value=jnp.asarray(value, jnp.float32), reward=jnp.asarray(reward, jnp.float32),
        done=jnp.asarray(done, bool))


def gae_reference(reward, value, done, last_value, gamma, gae_lambda):
    """Plain-Python GAE; `done[t]` means step t ended the episode (no bootstrap past it)."""
    t_max, n_max = reward.shape
    advantage = np.zeros((t_max, n_max))
    for n in range(n_max):
        running = 0.0
        for t in reversed(range(t_max)):
            next_value = last_value[n] if t == t_max - 1 else value[t + 1, n]
            nonterminal = 0.0 if done[t, n] else 1.0
            delta = reward[t, n] + gamma * next_value * nonterminal - value[t, n]
            running = delta + gamma * gae_lambda * nonterminal * running
            advantage[t, n] = running
    return advantage, advantage + value


def _random_rollout(seed: int, t: int = 12, n: int = 5, p_done: float = 0.2):
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(t, n)).astype(np.float32)
    value = rng.normal(size=(t, n)).astype(np.float32)
    done = rng.random((t, n)) < p_done
    last_value = rng.normal(size=(n,)).astype(np.float32)
    return reward, value, done, last_value


def test_gae_hand_computed():
    # T=3, N=1, gamma = lambda = 0.5; the episode ends at t=1.
    #   t=2: delta = 3 + 0.5*2 - 0.5 = 3.5                  adv = 3.5
    #   t=1: delta = 2 - 0.5 = 1.5 (done: no bootstrap)     adv = 1.5
    #   t=0: delta = 1 + 0.5*0.5 - 0.5 = 0.75               adv = 0.75 + 0.25*1.5 = 1.125
    reward = np.array([[1.0], [2.0], [3.0]])
    value = np.full((3, 1), 0.5)
    done = np.array([[False], [True], [False]])
    advantage, target = GAE(_transitions(reward, value, done), jnp.array([2.0]), 0.5, 0.5)
    np.testing.assert_allclose(advantage[:, 0], [1.125, 1.5, 3.5], rtol=1e-6)
    np.testing.assert_allclose(target[:, 0], [1.625, 2.0, 4.0], rtol=1e-6)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma, gae_lambda", [(0.99, 0.95), (0.9, 0.5), (1.0, 1.0), (0.8, 0.0)])
def test_gae_matches_python_loop(seed, gamma, gae_lambda):
    reward, value, done, last_value = _random_rollout(seed)
    advantage, target = GAE(_transitions(reward, value, done), jnp.asarray(last_value),
                            gamma, gae_lambda)
    ref_adv, ref_target = gae_reference(reward, value, done, last_value, gamma, gae_lambda)
    chex.assert_shape((advantage, target), reward.shape)
    chex.assert_type((advantage, target), jnp.float32)
    np.testing.assert_allclose(advantage, ref_adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target, ref_target, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_gae_lambda_zero_is_one_step_td_error(seed):
    gamma = 0.95
    reward, value, done, last_value = _random_rollout(seed)
    advantage, _ = GAE(_transitions(reward, value, done), jnp.asarray(last_value), gamma, 0.0)
    next_value = np.concatenate([value[1:], last_value[None]], axis=0)
    td_error = reward + gamma * next_value * (1.0 - done) - value
    np.testing.assert_allclose(advantage, td_error, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_gae_lambda_one_gamma_one_is_return_minus_value(seed):
    reward, value, done, last_value = _random_rollout(seed)
    t_max, n_max = reward.shape
    returns = np.zeros_like(reward)
    for n in range(n_max):
        for t in range(t_max):
            # Sum rewards to the end of the episode (inclusive); bootstrap if it runs past T.
            total, k = 0.0, t
            while True:
                total += reward[k, n]
                if done[k, n]:
                    break
                if k == t_max - 1:
                    total += last_value[n]
                    break
                k += 1
            returns[t, n] = total
    advantage, target = GAE(_transitions(reward, value, done), jnp.asarray(last_value), 1.0, 1.0)
    np.testing.assert_allclose(advantage, returns - value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(target, returns, rtol=1e-5, atol=1e-5)


def ppo_loss_reference(cfg, logits, value, action, old_log_prob, old_value, advantage, target):
    """Plain-NumPy clipped PPO loss (Schulman et al. 2017, eq. 9) with all actions legal."""
    z = logits - logits.max(-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(-1, keepdims=True))
    ratio = np.exp(log_p[np.arange(len(action)), action] - old_log_prob)
    adv = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    eps = cfg.clip_eps
    policy_loss = -np.mean(np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv))
    error = (value - target) ** 2
    if cfg.clip_value:
        clipped = old_value + np.clip(value - old_value, -eps, eps)
        error = np.maximum(error, (clipped - target) ** 2)
    entropy = -np.sum(np.exp(log_p) * log_p, -1).mean()
    return policy_loss + cfg.vf_coef * 0.5 * error.mean() - cfg.ent_coef * entropy


@pytest.mark.parametrize("clip_value", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_ppo_loss_matches_numpy_reference(seed, clip_value):
    # Values far from the rollout's (spread 2 >> clip 0.2) so the clip is active for many rows.
    rng = np.random.default_rng(seed)
    n = 64
    logits = rng.normal(size=(n, 4)).astype(np.float32)
    value = rng.normal(scale=2.0, size=n).astype(np.float32)
    action = rng.integers(0, 4, size=n)
    old_log_prob = np.log(rng.uniform(0.1, 0.6, size=n)).astype(np.float32)
    old_value = rng.normal(scale=2.0, size=n).astype(np.float32)
    advantage = rng.normal(size=n).astype(np.float32)
    target = rng.normal(scale=2.0, size=n).astype(np.float32)
    cfg = dataclasses.replace(CFG, clip_value=clip_value)
    mb = Transition(obs=jnp.zeros((n, 16), jnp.int8), legal_action_mask=jnp.ones((n, 4), bool),
                    action=jnp.asarray(action, jnp.int32), log_prob=jnp.asarray(old_log_prob),
                    value=jnp.asarray(old_value), reward=jnp.zeros(n), done=jnp.zeros(n, bool))
    params = {"logits": jnp.asarray(logits), "value": jnp.asarray(value)}
    loss, aux = ppo.ppo_loss(cfg, lambda p, obs, mask: (p["logits"], p["value"]), params, mb,
                             jnp.asarray(advantage), jnp.asarray(target))
    expected = ppo_loss_reference(cfg, logits, value, action, old_log_prob, old_value,
                                  advantage, target)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5, atol=1e-6)
    plain = 0.5 * np.mean((value - target) ** 2)
    if clip_value:  # the clip can only raise the loss, and does here
        assert float(aux["value_loss"]) > plain
    else:
        np.testing.assert_allclose(float(aux["value_loss"]), plain, rtol=1e-5)


def test_running_stats_merge_matches_numpy():
    # Reward normalisation's running mean/var (Chan et al.): merging batches one by one equals
    # the statistics of their concatenation.
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, size=n).astype(np.float32) for n in (50, 30, 7)]
    stats = RunningStats(mean=jnp.float32(0), var=jnp.float32(1), count=jnp.float32(0))
    for x in batches:
        stats = ppo._update_stats(stats, jnp.asarray(x))
    everything = np.concatenate(batches)
    assert float(stats.count) == everything.size
    assert float(stats.mean) == pytest.approx(everything.mean(), rel=1e-5)
    assert float(stats.var) == pytest.approx(everything.var(), rel=1e-5)


# ---------------------------------------------------------------------------------------------
# The compiled 2048 segment


def test_init_state_shapes(state0):
    n = CFG.num_envs
    assert isinstance(state0, RunnerState)
    assert isinstance(state0.env_state, env.State)
    chex.assert_shape(state0.env_state._board, (n, 16))
    chex.assert_shape([state0.episode_score, state0.episode_length,
                       state0.discounted_return], (n,))
    chex.assert_shape(state0.key, (2,))
    assert state0.key.dtype == jnp.uint32
    assert int(state0.update_step) == 0 and int(state0.env_steps) == 0
    assert not bool(jnp.any(state0.env_state.terminated))


def test_segment_metrics_shapes_and_dtypes(segment_a):
    _, metrics = segment_a
    u = CFG.updates_per_segment
    assert isinstance(metrics, SegmentMetrics)
    chex.assert_shape(jax.tree.leaves(metrics), (u,))
    int_fields = {"episodes", "max_tile"}
    for field in dataclasses.fields(SegmentMetrics):
        value = getattr(metrics, field.name)
        expected = jnp.int32 if field.name in int_fields else jnp.float32
        assert value.dtype == expected, (field.name, value.dtype)
    chex.assert_tree_all_finite([getattr(metrics, f.name) for f in dataclasses.fields(metrics)
                                 if not f.name.startswith("episode_")])
    max_tile = np.asarray(metrics.max_tile)
    assert np.all(max_tile >= 2) and np.all((max_tile & (max_tile - 1)) == 0)  # powers of 2
    np.testing.assert_allclose(metrics.lr, CFG.lr, rtol=1e-6)


def test_segment_keeps_runner_state_structure(state0, segment_a):
    state1, _ = segment_a
    assert jax.tree.structure(state1) == jax.tree.structure(state0)
    chex.assert_trees_all_equal_shapes_and_dtypes(state1, state0)
    assert not np.array_equal(state1.key, state0.key)


def test_segment_counters_advance(segment_a):
    state1, _ = segment_a
    u = CFG.updates_per_segment
    assert int(state1.update_step) == u
    assert int(state1.env_steps) == u * CFG.batch_size == CFG.steps_per_segment
    state2, _ = run_segment(state1, THETA_BASELINE)
    assert int(state2.update_step) == 2 * u
    assert int(state2.env_steps) == 2 * CFG.steps_per_segment


def test_new_theta_does_not_retrace(state0):
    # SEGMENT wraps the pure segment in chex.assert_max_traces(n=1): a retrace would raise.
    state = state0
    for theta in [THETA_BASELINE, THETA_EMPTY, np.linspace(-1, 1, NUM_FEATURES, dtype=np.float32),
                  jnp.full((NUM_FEATURES,), 0.3, jnp.float32)]:
        state, metrics = run_segment(state, theta)
    jax.block_until_ready(metrics)
    assert SEGMENT._cache_size() == 1


@pytest.mark.parametrize("shape", [(NUM_FEATURES - 1,), (NUM_FEATURES + 1,), (1, NUM_FEATURES),
                                   ()])
def test_wrong_theta_shape_raises(state0, shape):
    with pytest.raises(ValueError) as err:
        jax.eval_shape(PURE_SEGMENT, state0, jnp.zeros(shape, jnp.float32))
    assert f"({NUM_FEATURES},)" in str(err.value) and str(shape) in str(err.value)


def test_wrong_theta_shape_raises_under_seed_vmap(seed_states):
    with pytest.raises(ValueError):
        jax.eval_shape(SEGMENT_SEEDS, seed_states, jnp.zeros((NUM_SEEDS, NUM_FEATURES - 1)))


def test_thetas_change_the_reward_linearly(state0, segment_a):
    # The first update's rollout does not depend on theta (same params and key), so its mean
    # shaped reward is linear in theta.
    _, metrics_a = segment_a
    _, metrics_b = run_segment(state0, THETA_EMPTY)
    _, metrics_mix = run_segment(state0, 0.5 * THETA_BASELINE - 2.0 * THETA_EMPTY)
    r_a, r_b = float(metrics_a.reward_mean[0]), float(metrics_b.reward_mean[0])
    assert abs(r_a - r_b) > 1e-3
    assert float(metrics_mix.reward_mean[0]) == pytest.approx(0.5 * r_a - 2.0 * r_b, abs=1e-5)
    assert not np.allclose(metrics_a.reward_mean, metrics_b.reward_mean)


def test_same_theta_and_key_is_deterministic(state0, segment_a):
    state1, metrics = segment_a
    state1_again, metrics_again = run_segment(state0, THETA_BASELINE)
    chex.assert_trees_all_equal(metrics, metrics_again)
    chex.assert_trees_all_equal(state1, state1_again)


# ---------------------------------------------------------------------------------------------
# Seed vmap equals single-seed runs


@pytest.fixture(scope="module")
def seed_states() -> RunnerState:
    return INIT_SEEDS(KEY)


def _seed(tree, s):
    return jax.tree.map(lambda x: x[s], tree)


def test_seed_vmap_init_matches_single_seed(seed_states):
    keys = jax.random.split(KEY, NUM_SEEDS)
    assert jax.tree.structure(seed_states) == jax.tree.structure(INIT(KEY))
    for s in range(NUM_SEEDS):
        chex.assert_trees_all_equal(_seed(seed_states, s), INIT(keys[s]))
    assert not np.array_equal(seed_states.key[0], seed_states.key[1])


def test_seed_vmap_segment_matches_single_seed(seed_states):
    thetas = jnp.stack([THETA_BASELINE, 0.5 * THETA_EMPTY - 0.2 * THETA_BASELINE])
    chex.assert_shape(thetas, (NUM_SEEDS, NUM_FEATURES))
    singles = [_seed(seed_states, s) for s in range(NUM_SEEDS)]
    states_v, metrics_v = SEGMENT_SEEDS(_copy(seed_states), thetas)
    chex.assert_shape(jax.tree.leaves(metrics_v), (NUM_SEEDS, CFG.updates_per_segment))
    max_diff = 0.0
    for s in range(NUM_SEEDS):
        state_s, metrics_s = run_segment(singles[s], thetas[s])
        for got, want in zip(jax.tree.leaves(_seed((states_v, metrics_v), s)),
                             jax.tree.leaves((state_s, metrics_s)), strict=True):
            got, want = np.asarray(got), np.asarray(want)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
            if np.issubdtype(got.dtype, np.floating):
                both = np.isfinite(got) & np.isfinite(want)
                if both.any():
                    max_diff = max(max_diff, float(np.max(np.abs(got - want)[both])))
    print(f"seed vmap vs single seed: max |difference| = {max_diff:.3g}")
    # Different thetas per seed really reached the seeds.
    assert not np.allclose(metrics_v.reward_mean[0], metrics_v.reward_mean[1])


def test_make_train_rejects_bad_num_seeds():
    with pytest.raises(ValueError, match="-1"):
        ppo.make_train(CFG, num_seeds=-1)
    with pytest.raises(ValueError, match="0"):
        ppo.make_train(CFG, num_seeds=0)


# ---------------------------------------------------------------------------------------------
# 2048 learning smoke


@pytest.fixture(scope="module")
def smoke_run(state0):
    state = state0
    history = []
    for _ in range(SMOKE_SEGMENTS):
        state, metrics = run_segment(state, THETA_BASELINE)
        history.append(jax.device_get(metrics))
    metrics = jax.tree.map(lambda *xs: np.concatenate(xs), *history)
    return state, metrics


def test_smoke_nothing_nan(smoke_run):
    state, metrics = smoke_run
    chex.assert_tree_all_finite(state.params)
    chex.assert_tree_all_finite(state.opt_state)
    chex.assert_tree_all_finite((state.episode_score, state.discounted_return))
    ended = metrics.episodes > 0
    assert ended.sum() >= SMOKE_SEGMENTS  # games of ~100 moves end within 288 moves per env
    for name in ("episode_score", "episode_length", "episode_max_tile"):
        values = getattr(metrics, name)
        assert np.all(np.isfinite(values[ended])), name
        assert np.all(np.isnan(values[~ended])), name  # documented: NaN when no game ended
    for name in ("reward_mean", "policy_loss", "value_loss", "entropy", "approx_kl",
                 "clip_fraction", "explained_variance", "lr"):
        assert np.all(np.isfinite(getattr(metrics, name))), name


def test_smoke_entropy_bounded_and_not_rising(smoke_run):
    _, metrics = smoke_run
    entropy = metrics.entropy
    assert np.all(entropy >= 0.0) and np.all(entropy <= math.log(4) + 1e-5)
    assert entropy[-1] <= entropy[0] + 0.05


def test_smoke_episode_metrics_plausible(smoke_run):
    state, metrics = smoke_run
    ended = metrics.episodes > 0
    # An illegal move scores -1 and ends the game; legal play only ever adds points.
    assert np.all(metrics.episode_score[ended] >= 0.0)
    assert np.all(metrics.episode_length[ended] >= 1.0)
    assert np.all(metrics.episode_max_tile[ended] >= 4.0)
    assert np.all(np.asarray(state.episode_score) >= 0.0)
    assert int(state.update_step) == SMOKE_SEGMENTS * CFG.updates_per_segment


def test_trained_policy_never_plays_an_illegal_move(smoke_run):
    state, _ = smoke_run
    legal, score_gain = ROLLOUT_LEGALITY(state.params, jax.random.PRNGKey(7))
    chex.assert_shape((legal, score_gain), (LEGAL_CHECK_STEPS, LEGAL_CHECK_ENVS))
    assert bool(jnp.all(legal))
    assert float(jnp.min(score_gain)) >= 0.0


# ---------------------------------------------------------------------------------------------
# Learning sanity on probe environments
#
# One compiled program trains the four probes side by side: `probe_envs.ALL_PROBES` under
# `make_train(..., num_seeds=4, env_fns=...)`, seed k running `probe_envs.PROBES[k]`.

PROBE_GAMMA = 0.9
PROBE_CFG = PPOConfig(num_envs=32, num_steps=8, update_epochs=2, num_minibatches=2,
                          updates_per_segment=40, gamma=PROBE_GAMMA, lr=3e-3, network=NET,
                          lr_schedule="constant",
                          normalize_rewards=False)  # the probes check raw values
ONE_STEP, TWO_STEP, OBS_ACTION, MASKED = range(4)
assert probe_envs.PROBES[OBS_ACTION] is probe_envs.OBS_ACTION
INIT_PROBES, SEGMENT_PROBES = ppo.make_train(PROBE_CFG, num_seeds=len(probe_envs.PROBES),
                                             env_fns=probe_envs.ALL_PROBES)


@pytest.fixture(scope="module")
def probe_runs():
    """`(runner states [4, ...], metrics [4, U])` after one segment, seed k on probe k."""
    num = len(probe_envs.PROBES)
    states = INIT_PROBES(jax.random.PRNGKey(1))
    kinds = jnp.arange(num, dtype=jnp.int32)[:, None]
    states = states.replace(env_state=probe_envs.with_kind(states.env_state, kinds))
    thetas = jnp.tile(probe_envs.REWARD_THETA, (num, 1))
    states, metrics = SEGMENT_PROBES(states, thetas)
    np.testing.assert_array_equal(states.env_state["kind"], jnp.broadcast_to(kinds, (num, 32)))
    return states, jax.device_get(metrics)


def _probe(runs, kind):
    return jax.tree.map(lambda x: x[kind], runs)


@jax.jit
def _probe_policy_and_value(params, mask):
    """Policy `[2, 4]` and value `[2]` on the probe boards with cell 0 = 1 and cell 0 = 2."""
    boards = jnp.stack([probe_envs.encode(1), probe_envs.encode(2)])
    logits, value = APPLY(params, boards, jnp.broadcast_to(mask, (2, 4)))
    return jax.nn.softmax(logits), value


def _policy_and_value(params, cells, mask):
    probs, value = jax.device_get(_probe_policy_and_value(params, mask))
    rows = [c - 1 for c in cells]
    return probs[rows], value[rows]


def test_probe_phi_broadcasts():
    gain = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
    features = probe_envs.probe_phi(None, None, gain, None)
    chex.assert_shape(features, (2, 3, NUM_FEATURES))
    np.testing.assert_array_equal(features[..., probe_envs.REWARD_FEATURE], gain)
    np.testing.assert_array_equal(features @ probe_envs.REWARD_THETA, gain)


def test_probe_dynamics():
    key = jax.random.PRNGKey(0)
    # (b) two steps: t=0 -> t=1 with reward 0, then the end with reward 1 and a reset.
    s0 = probe_envs.TWO_STEP.reset(key)
    s1, r0 = probe_envs.TWO_STEP.step(s0, 0, key)
    s2, r1 = probe_envs.TWO_STEP.step(s1, 3, key)
    assert (int(s1["t"]), float(r0.score_gain), bool(r0.terminated)) == (1, 0.0, False)
    assert (int(s2["t"]), float(r1.score_gain), bool(r1.terminated)) == (0, 1.0, True)
    # (c) the bit in cell 0 names the paying action.
    for bit in (0, 1):
        state = {"t": jnp.int32(0), "bit": jnp.int32(bit)}
        assert int(probe_envs.OBS_ACTION.board(state)[0]) == 1 + bit
        for action in (0, 1):
            _, res = probe_envs.OBS_ACTION.step(state, action, key)
            assert float(res.score_gain) == float(action == bit) and bool(res.terminated)
    # (d) the legal action pays 1, an illegal one 2.
    state = probe_envs.MASKED.reset(key)
    legal = probe_envs.MASKED.legal_action_mask(state)
    np.testing.assert_array_equal(legal, [False, False, True, False])
    assert [float(probe_envs.MASKED.step(state, a, key)[1].score_gain) for a in range(4)] == \
        [2.0, 2.0, 1.0, 2.0]
    # ALL_PROBES dispatches to the probe named by `kind`.
    for kind, probe in enumerate(probe_envs.PROBES):
        inner = probe.reset(key)
        state = {"kind": jnp.int32(kind), **inner}
        np.testing.assert_array_equal(probe_envs.ALL_PROBES.board(state), probe.board(inner))
        np.testing.assert_array_equal(probe_envs.ALL_PROBES.legal_action_mask(state),
                                      probe.legal_action_mask(inner))
        got_state, got = probe_envs.ALL_PROBES.step(state, 1, key)
        want_state, want = probe.step(inner, 1, key)
        chex.assert_trees_all_equal((got_state, got), ({"kind": kind, **want_state}, want))


def test_probe_one_step_constant_reward(probe_runs):
    state, metrics = _probe(probe_runs, ONE_STEP)
    np.testing.assert_array_equal(metrics.episodes, PROBE_CFG.batch_size)  # every step ends
    np.testing.assert_array_equal(metrics.episode_length, 1.0)
    np.testing.assert_array_equal(metrics.episode_score, 1.0)
    np.testing.assert_array_equal(metrics.reward_mean, 1.0)
    _, value = _policy_and_value(state.params, [1], probe_envs.ALL_LEGAL)
    assert abs(value[0] - 1.0) < 0.05, value


def test_probe_two_step_discounting(probe_runs):
    state, metrics = _probe(probe_runs, TWO_STEP)
    np.testing.assert_array_equal(metrics.episodes, PROBE_CFG.batch_size // 2)
    np.testing.assert_array_equal(metrics.episode_length, 2.0)
    np.testing.assert_array_equal(metrics.reward_mean, 0.5)
    _, value = _policy_and_value(state.params, [1, 2], probe_envs.ALL_LEGAL)
    np.testing.assert_allclose(value, [PROBE_GAMMA, 1.0], atol=0.05)
    assert value[0] < value[1]


def test_probe_observation_dependent_action(probe_runs):
    state, metrics = _probe(probe_runs, OBS_ACTION)
    probs, value = _policy_and_value(state.params, [1, 2], probe_envs.OBS_ACTION_MASK)
    # Cell 0 = 1 + bit; action `bit` pays 1.
    assert probs[0, 0] > 0.9 and probs[1, 1] > 0.9, probs
    np.testing.assert_array_equal(probs[:, 2:], 0.0)  # masked actions
    assert metrics.reward_mean[-1] > 0.9
    assert metrics.reward_mean[-1] > metrics.reward_mean[0] + 0.2
    np.testing.assert_allclose(value, 1.0, atol=0.15)


def test_probe_masked_action_never_sampled(probe_runs):
    state, metrics = _probe(probe_runs, MASKED)
    # An illegal action would pay 2: every reward being exactly 1 means none was sampled.
    np.testing.assert_array_equal(metrics.reward_mean, 1.0)
    np.testing.assert_array_equal(metrics.episode_score, 1.0)
    assert np.all(np.isfinite(metrics.entropy)) and np.all(np.abs(metrics.entropy) < 1e-3)
    for name in ("policy_loss", "value_loss", "approx_kl", "clip_fraction",
                 "explained_variance"):
        assert np.all(np.isfinite(getattr(metrics, name))), name
    chex.assert_tree_all_finite(state.params)
    probs, value = _policy_and_value(state.params, [1], probe_envs.MASKED_MASK)
    np.testing.assert_array_equal(probs[0], [0.0, 0.0, 1.0, 0.0])
    assert abs(value[0] - 1.0) < 0.05
