"""Tests for `sailor_lab.env_sharding`: one PPO run with its envs split over a device mesh.

The multi-device checks need `--xla_force_host_platform_device_count=4` before JAX starts, so
`tests/env_sharding_worker.py` runs them all in one subprocess with 4 CPU devices (the module's
`four_devices` fixture: one JAX start and one import of the package for the four tests), and
each test asserts on its part of the JSON it prints (measured differences to the unsharded
computation, and facts about the compiled segment). Validation and the 1-device mesh are tested
in this process (1 CPU device).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import chex
import jax
import probe_envs
import pytest
from support import forced_devices_env

from sailor_jax.agents import ppo
from sailor_jax.config import NetworkConfig, PPOConfig
from sailor_lab import env_sharding

WORKER = Path(__file__).with_name("env_sharding_worker.py")
DEVICES = 4
TOL = 1e-5  # float32 parameters after the same update computed two ways
CFG = PPOConfig(num_envs=16, num_steps=8, update_epochs=2, num_minibatches=2,
                updates_per_segment=2, lr=3e-4, lr_schedule="constant",
                network=NetworkConfig(hidden_sizes=(16,)))  # the worker's
PROBE_CFG = PPOConfig(num_envs=32, num_steps=8, update_epochs=2, num_minibatches=2,
                      updates_per_segment=40, gamma=0.9, lr=3e-3, normalize_rewards=False,
                      lr_schedule="constant",
                      network=NetworkConfig(hidden_sizes=(32,)))  # as in test_ppo


# ---------------------------------------------------------------------------------------------
# 4 devices (subprocess)


@pytest.fixture(scope="module")
def four_devices() -> dict:
    """Every check of the worker (`env_sharding_worker.CHECKS`), run once in one subprocess on
    4 forced CPU devices: its JSON output."""
    proc = subprocess.run([sys.executable, str(WORKER)], env=forced_devices_env(DEVICES),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices"] == DEVICES
    return out


def test_minibatch_step_split_over_devices_equals_whole_minibatch(four_devices):
    # One minibatch step (advantage normalisation, clipped loss, grads, optimiser update) with
    # each device holding a quarter of the minibatch and pmean'd grads, vs the plain step on
    # the whole minibatch; with the PPO optimiser (clipping + Adam, nearly scale-invariant) and
    # with plain SGD, which would expose a gradient psum'd instead of averaged (4x). The
    # segment runs shard_map with check_vma=False (pgx); SGD also runs with check_vma=True,
    # where differentiating at replicated params would psum the gradient (ppo.minibatch_step).
    out = four_devices
    for optimizer, vma_modes in (("step_adam", (False,)), ("step_sgd", (True, False))):
        res = out[optimizer]
        assert res["moved"] > 10 * TOL, res  # the step really changes the parameters
        for check_vma in vma_modes:
            assert res[f"params_vma_{check_vma}"] < TOL, res
            assert res[f"aux_vma_{check_vma}"] < TOL, res


def test_learning_phase_equals_unsharded_steps_on_global_minibatches(four_devices):
    # GAE + update_epochs x num_minibatches steps on one fixed [T, N] rollout, sharded, vs
    # plain (axis_name=None) minibatch steps on the concatenation over devices of each
    # device's locally permuted minibatch.
    out = four_devices["learn"]
    assert out["moved"] > 10 * TOL
    assert out["params"] < TOL and out["opt_state"] < TOL and out["aux"] < TOL, out


def test_global_statistics_equal_the_unsharded_ones(four_devices):
    # mean/var/std/sum/max, the running return statistics and the episode metrics, on [8, 16]
    # moves split 4 ways; episodes end only on device 0's games (NaN-aware means).
    out = four_devices["statistics"]
    assert out["rel_diff"] < 1e-6, out
    assert out["episodes"] == 2
    assert out["count"] == 10 + 8 * 16  # global batch count merged into the running stats


def test_sharded_segment_on_four_devices(four_devices):
    out = four_devices
    seg = out["segment"]
    assert seg["init_equals_unsharded"]  # init is ppo's, laid out on the mesh
    assert (seg["env_spec"], seg["params_spec"]) == ("P('env',)", "P()")
    assert seg["deterministic"] and seg["replicated_equal"]
    assert seg["cache_size"] == 1  # new thetas and a new start state: no recompilation
    assert seg["env_steps"] == CFG.updates_per_segment * CFG.num_envs * CFG.num_steps
    assert seg["env_steps_after_3"] == 3 * seg["env_steps"]
    assert seg["quarters_differ"] == [True] * (DEVICES - 1)  # per-device random draws
    assert seg["metrics_finite"]
    message = out["bad_input"]
    assert "num_envs = 18" in message and "4 devices" in message


# ---------------------------------------------------------------------------------------------
# Validation and the 1-device mesh (this process)


def test_local_config_splits_the_envs():
    local = env_sharding.local_config(CFG, 4)
    assert local == dataclasses.replace(CFG, num_envs=4)
    assert local.batch_size == CFG.batch_size // 4


def test_local_config_rejects_envs_that_do_not_split():
    with pytest.raises(ValueError, match=r"num_envs = 18 is not divisible by the 4 devices"):
        env_sharding.local_config(dataclasses.replace(CFG, num_envs=18), 4)


def test_local_config_rejects_a_local_batch_that_does_not_split():
    cfg = PPOConfig(num_envs=16, num_steps=3, num_minibatches=8)  # global batch 48 splits
    with pytest.raises(ValueError) as err:
        env_sharding.local_config(cfg, 4)
    assert "4 * 3 = 12" in str(err.value) and "num_minibatches = 8" in str(err.value)


@pytest.mark.parametrize("devices", [0, -1, jax.device_count() + 1])
def test_make_env_mesh_rejects_bad_devices(devices):
    with pytest.raises(ValueError, match="devices"):
        env_sharding.make_env_mesh(devices)


def test_make_env_mesh_takes_a_count_or_all():
    assert env_sharding.make_env_mesh(1).devices.tolist() == jax.devices()[:1]
    mesh = env_sharding.make_env_mesh()
    assert mesh.axis_names == (env_sharding.AXIS,) and mesh.size == jax.device_count()


def test_one_device_segment_runs_and_learns_a_probe():
    # The 1-device mesh, on the observation-dependent probe of tests/probe_envs.py (cheaper to
    # compile than 2048): init equals ppo's, the segment learns the paying action (the
    # criterion of test_ppo's probe test), and a new theta does not recompile.
    init, segment = env_sharding.make_train_env_sharded(PROBE_CFG, devices=1,
                                                        env_fns=probe_envs.OBS_ACTION)
    init_plain, segment_plain = ppo.make_train(PROBE_CFG, env_fns=probe_envs.OBS_ACTION)
    key = jax.random.PRNGKey(0)  # learns for keys 0..3 (checked once); 0 is kept
    state = init(key)
    chex.assert_trees_all_equal(state, init_plain(key))
    want = jax.eval_shape(segment_plain, state, probe_envs.REWARD_THETA)
    state, metrics = segment(state, probe_envs.REWARD_THETA)
    assert metrics.reward_mean[-1] > 0.9, metrics.reward_mean
    assert metrics.reward_mean[-1] > metrics.reward_mean[0] + 0.2
    state, metrics = segment(state, 2.0 * probe_envs.REWARD_THETA)
    chex.assert_trees_all_equal_shapes_and_dtypes((state, metrics), want)
    assert segment._cache_size() == 1
    assert int(state.env_steps) == 2 * PROBE_CFG.steps_per_segment
