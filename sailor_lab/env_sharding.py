"""Env sharding: one PPO run (one seed) with its `num_envs` games split over devices.

`make_train_env_sharded(cfg, devices)` returns `(init, train_segment)` with the contract of
`ppo.make_train(cfg)` for a single seed. The segment runs the update of `ppo` inside
`jax.shard_map` over a 1-D device mesh with the axis `AXIS = "env"`: data parallelism around
the PureJaxRL-style compiled update (Lu et al. 2022). Each of the D devices plays
`num_envs / D` games (game i lives on device `i // (num_envs / D)`) and learns from their part
of the batch; params, optimiser state, key, counters and the return statistics are replicated.

What crosses devices (all over "env", in `ppo` and `policy` through `axis_name`):
- gradients and the minibatch loss statistics: `pmean` (`ppo.minibatch_step`), so every device
  applies the same Adam update (Schulman et al. 2017), the one of the global minibatch;
- advantage normalisation: mean and std of the global minibatch (`ppo.ppo_loss`);
- running return statistics for reward normalisation: global batch mean, variance and count;
- explained variance and the episode metrics (episode counts and sums psum'd, then divided).

Key scheme: `RunnerState.key` is replicated and advances identically on every device. Each move
splits it into `(next key, key_move)` and device d samples its actions and game resets from
`fold_in(key_move, d)`. The epoch keys are replicated, so every device permutes its own batch
with the same permutation, and global minibatch m is the concatenation over devices (in mesh
order) of the local minibatches m. For a fixed rollout the sharded learning phase therefore
equals `ppo.minibatch_step(axis_name=None)` on those global minibatches; the rollouts differ
from `ppo.make_train`'s (other random draws), so runs on different device counts differ.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from sailor_jax.agents import ppo
from sailor_jax.agents.networks import make_network
from sailor_jax.agents.optimizer import lr_schedule, make_optimizer
from sailor_jax.config import PPOConfig
from sailor_jax.game.env import GAME_2048, EnvFns
from sailor_jax.scale.sharding import resolve_devices
from sailor_jax.types import RunnerState

__all__ = ["AXIS", "local_config", "make_env_mesh", "make_train_env_sharded", "state_specs"]

AXIS = "env"
"""Name of the mesh axis the env batch is split over."""


def make_env_mesh(devices: int | None = None) -> jax.sharding.Mesh:
    """Build the 1-D mesh `("env",)` over the first `devices` devices (None: all). Host-only.

    Raises:
      ValueError: a count outside `1..jax.device_count()` (`sharding.resolve_devices`).
    """
    devices = resolve_devices(devices)
    return jax.make_mesh((len(devices),), (AXIS,), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=devices)


def local_config(cfg: PPOConfig, num_devices: int) -> PPOConfig:
    """The per-device config: `cfg` with `num_envs / num_devices` games. Host-only.

    Raises:
      ValueError: `num_envs` not divisible by `num_devices`, or the per-device batch
        `num_envs / num_devices * num_steps` not divisible by `num_minibatches`.
    """
    if cfg.num_envs % num_devices:
        raise ValueError(
            f"num_envs = {cfg.num_envs} is not divisible by the {num_devices} devices of the "
            f"'{AXIS}' mesh; use a multiple of {num_devices} for num_envs or another device count")
    local_envs = cfg.num_envs // num_devices
    if (local_envs * cfg.num_steps) % cfg.num_minibatches:
        raise ValueError(
            f"the per-device batch (num_envs / devices) * num_steps = {local_envs} * "
            f"{cfg.num_steps} = {local_envs * cfg.num_steps} is not divisible by "
            f"num_minibatches = {cfg.num_minibatches}; change num_envs, num_steps, "
            f"num_minibatches or the device count ({num_devices})")
    return dataclasses.replace(cfg, num_envs=local_envs)


def state_specs() -> RunnerState:
    """`RunnerState` of `PartitionSpec`s: per-game fields split over "env", the rest replicated."""
    split = P(AXIS)
    return RunnerState(params=P(), opt_state=P(), env_state=split, key=P(), update_step=P(),
                       env_steps=P(), episode_score=split, episode_length=split,
                       discounted_return=split, return_stats=P())


def make_train_env_sharded(cfg: PPOConfig, devices: int | None = None,
                           env_fns: EnvFns = GAME_2048):
    """Build the compiled single-seed `(init, train_segment)` pair with the envs on a mesh.

    `init(key) -> RunnerState`: what `ppo.make_train(cfg)`'s init returns for `key`, laid out
    on the mesh: per-game fields (`env_state` leaves `[N, ...]`, `episode_score [N] float32`,
    `episode_length [N] int32`, `discounted_return [N] float32`) split over "env", params and
    everything else replicated. Compiled.

    `train_segment(runner_state, theta) -> (runner_state, SegmentMetrics)`: `theta` is
    `[F] float32`, replicated and traced (a new theta never recompiles); metrics are `[U]`,
    computed over all devices' games; `env_steps` counts the moves of all `num_envs` games.
    Compiled; the input runner state is donated.

    Args:
      cfg: PPO config (static); `cfg.num_envs` is the total over devices.
      devices: see `make_env_mesh`.
      env_fns: the environment (static), as in `ppo.make_train`.

    Raises:
      ValueError: bad `devices`, or sizes that do not split (see `local_config`).
    """
    mesh = make_env_mesh(devices)
    local = local_config(cfg, mesh.size)
    init_params, apply = make_network(cfg.network)
    optimizer = make_optimizer(cfg)
    update = functools.partial(ppo.ppo_update, local, env_fns, apply, optimizer,
                               lr_schedule(cfg), axis_name=AXIS)

    def segment(rs: RunnerState, theta: jax.Array):
        return ppo.train_segment(local, update, rs, theta)

    specs = state_specs()
    # check_vma=False: pgx's 2048 step has lax.cond branches that return a device-varying
    # value in one branch and a constant in the other, which the varying-axes type check
    # rejects. Without it, out_specs P() is not checked: the tests compare the replicated
    # outputs across devices instead.
    sharded = jax.shard_map(segment, mesh=mesh, in_specs=(specs, P()), out_specs=(specs, P()),
                            check_vma=False)
    init = functools.partial(ppo.init_runner, cfg, env_fns, init_params, optimizer)
    shardings = jax.tree.map(lambda spec: NamedSharding(mesh, spec), specs)
    # Pinned output layout: on a 1-device mesh XLA would hand back P() for the per-game
    # fields, and the next call, seeing another input sharding, would compile again.
    return (jax.jit(init, out_shardings=shardings),
            jax.jit(sharded, donate_argnums=0,
                    out_shardings=(shardings, NamedSharding(mesh, P()))))
