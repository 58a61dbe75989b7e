"""Multi-device checks of `sailor_lab.env_sharding`, run by tests/test_env_sharding.py.

A script, not a test module: XLA reads `--xla_force_host_platform_device_count` when JAX
starts, and the pytest process has already started it with one CPU device. The tests run
`python tests/env_sharding_worker.py` once with `XLA_FLAGS` set to 4 devices; it prints one
JSON line of measured differences and facts per check (every check, or those named after the
script), and the tests assert on them.
"""

from __future__ import annotations

import functools
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import PartitionSpec as P

from sailor_jax.agents import collectives, ppo
from sailor_jax.agents.networks import make_network
from sailor_jax.agents.optimizer import make_optimizer
from sailor_jax.agents.policy import episode_metrics
from sailor_jax.config import NetworkConfig, PPOConfig
from sailor_jax.game.reward import THETA0
from sailor_jax.types import RunningStats, Transition
from sailor_lab import env_sharding

D = 4
AXIS = env_sharding.AXIS
CFG = PPOConfig(num_envs=16, num_steps=8, update_epochs=2, num_minibatches=2,
                updates_per_segment=2, lr=3e-4, lr_schedule="constant",
                network=NetworkConfig(hidden_sizes=(16,)))
LOCAL = env_sharding.local_config(CFG, D)
_INIT_PARAMS, APPLY = make_network(CFG.network)
INIT_PARAMS = jax.jit(_INIT_PARAMS)
MESH = env_sharding.make_env_mesh(D)
THETA = jnp.asarray(THETA0, jnp.float32)


def max_diff(a, b) -> float:
    """Largest |a - b| over all leaves of two pytrees (NaN in both: 0; NaN in one: inf)."""
    def diff(x, y):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        d = np.where(np.isnan(x) & np.isnan(y), 0.0, np.abs(x - y))
        return np.max(np.where(np.isnan(d), np.inf, d), initial=0.0)

    return float(max(diff(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b),
                                                  strict=True)))


def max_rel_diff(a, b) -> float:
    """Largest |a - b| / (1 + |b|) over all leaves (for values far from 1 in magnitude)."""
    return max_diff(jax.tree.map(lambda x, y: (x - y) / (1.0 + jnp.abs(y)), a, b),
                    jax.tree.map(jnp.zeros_like, b))


@functools.partial(jax.jit, static_argnums=1)
def random_transitions(key, shape: tuple[int, ...], params) -> Transition:
    """Transitions `[*shape]` whose behaviour log-probs are the policy's plus noise (some clip)."""
    k_obs, k_act, k_mask, k_lp, k_val, k_rew, k_done = jax.random.split(key, 7)
    obs = jax.random.randint(k_obs, shape + (16,), 0, 12).astype(jnp.int8)
    action = jax.random.randint(k_act, shape, 0, 4)
    mask = (jax.random.uniform(k_mask, shape + (4,)) < 0.6) | jax.nn.one_hot(action, 4, dtype=bool)
    logits, _ = APPLY(params, obs.reshape(-1, 16), mask.reshape(-1, 4))
    log_p = jnp.take_along_axis(jax.nn.log_softmax(logits), action.reshape(-1, 1), -1)
    noise = 0.3 * jax.random.normal(k_lp, shape)
    return Transition(obs=obs, legal_action_mask=mask, action=action,
                      log_prob=log_p.reshape(shape) + noise,
                      value=jax.random.normal(k_val, shape),
                      reward=jax.random.normal(k_rew, shape),
                      done=jax.random.uniform(k_done, shape) < 0.1)


def check_minibatch_step(optimizer, vma_modes: tuple[bool, ...]) -> dict:
    """(a) One minibatch step split over D devices (pmean) vs the step on the whole minibatch.

    `vma_modes`: the `check_vma` settings of `shard_map` to try (the segment uses False).
    """
    key_params, key_mb, key_adv, key_target = jax.random.split(jax.random.PRNGKey(1), 4)
    params = INIT_PARAMS(key_params)
    state = (params, optimizer.init(params))
    b = 64
    mb = (random_transitions(key_mb, (b,), params), 3.0 + 2.0 * jax.random.normal(key_adv, (b,)),
          jax.random.normal(key_target, (b,)))
    step = jax.jit(lambda s, m: ppo.minibatch_step(CFG, APPLY, optimizer, s, m))
    (p_ref, _), aux_ref = step(state, mb)
    out = {"moved": max_diff(p_ref, params)}
    for check_vma in vma_modes:
        sharded = jax.jit(jax.shard_map(
            lambda s, m: ppo.minibatch_step(CFG, APPLY, optimizer, s, m, axis_name=AXIS),
            mesh=MESH, in_specs=(P(), P(AXIS)), out_specs=(P(), P()), check_vma=check_vma))
        (p_shard, _), aux_shard = sharded(state, mb)
        out[f"params_vma_{check_vma}"] = max_diff(p_shard, p_ref)
        out[f"aux_vma_{check_vma}"] = max_diff(aux_shard, aux_ref)
    return out


@jax.jit
def local_minibatches(traj: Transition, last_value, key_epoch) -> list:
    """The global minibatches of one epoch: device d's `shuffle` of its own batch, concatenated."""
    advantage, target = ppo.gae(traj, last_value, CFG.gamma, CFG.gae_lambda)
    n_local = LOCAL.num_envs
    shuffled = []
    for d in range(D):
        part = jax.tree.map(lambda x, d=d: x[:, d * n_local:(d + 1) * n_local],
                            (traj, advantage, target))
        flat = jax.tree.map(lambda x: x.reshape((LOCAL.batch_size,) + x.shape[2:]), part)
        shuffled.append(ppo.shuffle(LOCAL, flat, key_epoch))
    return [jax.tree.map(lambda *xs, m=m: jnp.concatenate([x[m] for x in xs]), *shuffled)
            for m in range(CFG.num_minibatches)]


def check_learn() -> dict:
    """(b) The sharded learning phase (`ppo.learn`) vs plain minibatch steps on global batches."""
    key_params, key_traj, key_last, key_learn = jax.random.split(jax.random.PRNGKey(2), 4)
    optimizer = make_optimizer(CFG)
    params = INIT_PARAMS(key_params)
    opt_state = optimizer.init(params)
    traj = random_transitions(key_traj, (CFG.num_steps, CFG.num_envs), params)
    last_value = jax.random.normal(key_last, (CFG.num_envs,))
    sharded = jax.jit(jax.shard_map(
        lambda p, o, t, v, k: ppo.learn(LOCAL, APPLY, optimizer, p, o, t, v, k, AXIS),
        mesh=MESH, in_specs=(P(), P(), P(None, AXIS), P(AXIS), P()),
        out_specs=(P(), P(), P(None, AXIS), P()), check_vma=False))
    p_shard, o_shard, _, aux_shard = sharded(params, opt_state, traj, last_value, key_learn)
    step = jax.jit(lambda s, m: ppo.minibatch_step(CFG, APPLY, optimizer, s, m))
    state, aux_ref = (params, opt_state), []
    for key_epoch in jax.random.split(key_learn, CFG.update_epochs):
        for mb in local_minibatches(traj, last_value, key_epoch):
            state, aux = step(state, mb)
            aux_ref.append(aux)
    aux_ref = jax.tree.map(lambda *xs: jnp.stack(xs).reshape(aux_shard["entropy"].shape), *aux_ref)
    return {"params": max_diff(p_shard, state[0]), "opt_state": max_diff(o_shard, state[1]),
            "aux": max_diff(aux_shard, aux_ref), "moved": max_diff(state[0], params)}


def check_statistics() -> dict:
    """Global statistics (`collectives`, running return stats, episode metrics) vs unsharded."""
    rng = np.random.default_rng(3)
    x = jnp.asarray(rng.normal(2.0, 3.0, (8, 16)), jnp.float32)
    done = np.zeros((8, 16), bool)
    done[[1, 5], [0, 2]] = True  # episodes end only on device 0's games
    moves = (jnp.asarray(done), x * 100, jnp.asarray(rng.integers(1, 50, (8, 16))),
             jnp.asarray(rng.integers(1, 11, (8, 16))), x)
    stats = RunningStats(mean=jnp.float32(0.5), var=jnp.float32(2.0), count=jnp.float32(10.0))

    def summaries(xs, moves, axis_name=None):
        c = collectives
        return dict(mean=c.global_mean(xs, axis_name), var=c.global_var(xs, axis_name),
                    std=c.global_std(xs, axis_name), sum=c.global_sum(xs, axis_name),
                    max=c.global_max(xs, axis_name),
                    stats=ppo._update_stats(stats, xs, axis_name),
                    metrics=episode_metrics(*moves, axis_name=axis_name))

    ref = jax.jit(summaries)(x, moves)
    got = jax.jit(jax.shard_map(lambda xs, m: summaries(xs, m, AXIS), mesh=MESH,
                                in_specs=(P(None, AXIS), P(None, AXIS)), out_specs=P()))(x, moves)
    return {"rel_diff": max_rel_diff(got, ref), "episodes": int(got["metrics"]["episodes"]),
            "count": float(got["stats"].count)}


def replicated_equal_on_devices(tree) -> bool:
    """Every replicated leaf holds the same value on all devices (out_specs P() is unchecked)."""
    return all(all(np.array_equal(np.asarray(s.data), np.asarray(leaf.addressable_shards[0].data),
                                  equal_nan=np.issubdtype(leaf.dtype, np.floating))
                   for s in leaf.addressable_shards) for leaf in jax.tree.leaves(tree))


def check_segment() -> dict:
    """(c) The compiled sharded segment: layout, determinism, no retrace, env_steps, keys."""
    init, segment = env_sharding.make_train_env_sharded(CFG, D)
    key = jax.random.PRNGKey(0)
    rs0 = init(key)
    out = {"init_equals_unsharded": max_diff(rs0, ppo.make_train(CFG)[0](key)) == 0.0,
           "env_spec": str(rs0.env_state._board.sharding.spec),
           "params_spec": str(jax.tree.leaves(rs0.params)[0].sharding.spec)}
    runs = [segment(init(key), THETA) for _ in range(2)]
    replicated = (runs[0][0].replace(env_state=None, episode_score=None, episode_length=None,
                                     discounted_return=None), runs[0][1])
    out.update(deterministic=max_diff(runs[0], runs[1]) == 0.0,
               replicated_equal=replicated_equal_on_devices(replicated),
               env_steps=int(runs[0][0].env_steps))
    state = runs[0][0]
    for theta in (0.5 * THETA, jnp.linspace(-1.0, 1.0, THETA.shape[0])):
        state, metrics = segment(state, theta)  # donates the previous state
    # Every device starts from the same games: only per-device randomness can separate them.
    n = LOCAL.num_envs
    same = jax.tree.map(lambda x: jax.device_put(
        jnp.tile(x[:n], (D,) + (1,) * (x.ndim - 1)), x.sharding), init(key).env_state)
    boards = np.asarray(segment(init(key).replace(env_state=same), THETA)[0].env_state._board)
    out.update(cache_size=segment._cache_size(), env_steps_after_3=int(state.env_steps),
               quarters_differ=[not np.array_equal(boards[:n], boards[d * n:(d + 1) * n])
                                for d in range(1, D)],
               metrics_finite=bool(np.isfinite(np.asarray(metrics.entropy)).all()))
    return out


def check_bad_input() -> str:
    """(d) num_envs not divisible by the device count."""
    try:
        env_sharding.make_train_env_sharded(PPOConfig(num_envs=18, num_steps=8,
                                                      num_minibatches=2), D)
    except ValueError as err:
        return str(err)
    return ""


CHECKS = {
    "step_adam": lambda: check_minibatch_step(make_optimizer(CFG), (False,)),
    # SGD without clipping sees the gradient's scale (a psum'd gradient would be 4x).
    "step_sgd": lambda: check_minibatch_step(optax.sgd(1.0), (True, False)),
    "learn": check_learn, "statistics": check_statistics, "segment": check_segment,
    "bad_input": check_bad_input,
}


def main(names: list[str]) -> None:
    """Run the named checks (all of `CHECKS` when none are named); print one JSON line."""
    out = {"devices": jax.device_count()}
    out.update({name: CHECKS[name]() for name in names or CHECKS})
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
