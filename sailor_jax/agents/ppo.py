"""PureJaxRL-style PPO on 2048 with the parametric reward `R_theta = theta . phi`.

`make_train(cfg)` returns `(init, train_segment)`. A segment is `cfg.updates_per_segment`
PPO updates (rollout of `num_steps` x `num_envs` moves, GAE, `update_epochs` x
`num_minibatches` clipped-objective steps) inside one compiled `lax.scan`. `theta` is a
traced argument, so new reward weights never recompile; with `num_seeds=S` both functions
are vmapped over a leading seed axis (runner state and theta), one compiled program.
The functions taking `axis_name` also run inside `jax.shard_map` with one seed's envs split
over devices (`env_sharding`); `axis_name=None` is the single-device computation.

References: Schulman et al. 2017 (PPO, clipped surrogate, eq. 7); Schulman et al. 2016 (GAE,
eq. 16); Lu et al. 2022 (PureJaxRL).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from sailor_jax.agents.collectives import axis_size, global_mean, global_std, global_var
from sailor_jax.agents.networks import make_network, masked_log_prob_entropy
from sailor_jax.agents.optimizer import lr_schedule, make_optimizer
from sailor_jax.agents.policy import episode_metrics, policy_step
from sailor_jax.agents.seeds import jit_seeds
from sailor_jax.config import PPOConfig
from sailor_jax.game.env import GAME_2048, EnvFns
from sailor_jax.game.features import NUM_FEATURES
from sailor_jax.game.reward import reward
from sailor_jax.types import RunnerState, RunningStats, SegmentMetrics, Transition

__all__ = ["GAME_2048", "EnvFns", "gae", "learn", "lr_schedule", "make_optimizer",
           "make_train", "minibatch_step", "ppo_loss", "rollout_step", "shuffle", "update_epoch"]


def gae(traj: Transition, last_value: jax.Array, gamma: float, gae_lambda: float
        ) -> tuple[jax.Array, jax.Array]:
    """Generalised advantage estimation (Schulman et al. 2016, eq. 16), reverse `lax.scan`.

    Args:
      traj: time-major transitions, fields `[T, N]` (`reward`, `value`, `done`).
      last_value: `[N] float32` value of the state after the last step.
      gamma, gae_lambda: discount and GAE lambda (Python floats).

    Returns:
      `(advantage, target)`, each `[T, N] float32`; target = advantage + value.
    """
    def body(carry, t):
        adv, next_value = carry
        not_done = 1.0 - t.done.astype(jnp.float32)
        delta = t.reward + gamma * next_value * not_done - t.value
        adv = delta + gamma * gae_lambda * not_done * adv
        return (adv, t.value), adv

    _, advantage = jax.lax.scan(body, (jnp.zeros_like(last_value), last_value), traj,
                                reverse=True)
    return advantage, advantage + traj.value


def _update_stats(stats: RunningStats, x: jax.Array, axis_name: str | None = None
                  ) -> RunningStats:
    """Merge a batch (all shards on `axis_name`) into running mean/variance (Chan et al.)."""
    n = jnp.float32(x.size * axis_size(axis_name))
    mean, var = global_mean(x, axis_name), global_var(x, axis_name)
    total = stats.count + n
    delta = mean - stats.mean
    new_mean = stats.mean + delta * n / total
    m2 = stats.var * stats.count + var * n + delta**2 * stats.count * n / total
    return RunningStats(mean=new_mean, var=m2 / total, count=total)


@functools.lru_cache(maxsize=16)
def make_train(cfg: PPOConfig, num_seeds: int | None = None, env_fns: EnvFns = GAME_2048):
    """Build the compiled `(init, train_segment)` pair.

    `init(key) -> RunnerState`: fresh params, optimiser and `num_envs` games. Compiled.
    `train_segment(runner_state, theta) -> (runner_state, SegmentMetrics)`: runs
    `cfg.updates_per_segment` PPO updates on the reward `theta . phi`; theta is `[F] float32`
    and traced (no recompilation when it changes). Compiled; the input runner state is donated.

    With `num_seeds=S`, `init(key)` builds S independent runs from `jax.random.split(key, S)`
    and `train_segment` takes `[S, ...]` runner states and `[S, F]` thetas; seed s matches the
    single-seed functions run on `jax.random.split(key, S)[s]`.

    `env_fns` swaps the environment (probe environments in tests); static.

    Cached: the same arguments return the same compiled functions, so runs of one config in
    one process (the arms of a comparison, a resumed run) trace and compile them once.

    Raises:
      ValueError: `num_seeds` not positive.
    """
    return jit_seeds(*_make_pure(cfg, env_fns), num_seeds)


def _make_pure(cfg: PPOConfig, fns: EnvFns):
    """Return the unjitted single-seed `(init, segment)` functions over the static config."""
    init_params, apply = make_network(cfg.network)
    optimizer = make_optimizer(cfg)
    init = functools.partial(init_runner, cfg, fns, init_params, optimizer)
    update = functools.partial(ppo_update, cfg, fns, apply, optimizer, lr_schedule(cfg))

    def segment(rs: RunnerState, theta: jax.Array) -> tuple[RunnerState, SegmentMetrics]:
        return train_segment(cfg, update, rs, theta)  # a function: chex counts its traces

    return init, segment


def init_runner(cfg: PPOConfig, fns: EnvFns, init_params: Callable, optimizer, key: jax.Array
                ) -> RunnerState:
    """Fresh params, optimiser state and `cfg.num_envs` games from `key`."""
    key_params, key_env, key_run = jax.random.split(key, 3)
    params = init_params(key_params)
    n = cfg.num_envs
    zeros = jnp.zeros((n,), jnp.float32)
    return RunnerState(
        params=params, opt_state=optimizer.init(params),
        env_state=jax.vmap(fns.reset)(jax.random.split(key_env, n)),
        key=key_run, update_step=jnp.int32(0), env_steps=jnp.int32(0),
        episode_score=zeros, episode_length=jnp.zeros((n,), jnp.int32),
        discounted_return=zeros,
        return_stats=RunningStats(mean=jnp.float32(0), var=jnp.float32(1),
                                  count=jnp.float32(1e-4)))


def _act(apply: Callable, params: Any, key: jax.Array, board: jax.Array, mask: jax.Array):
    """The PPO behaviour policy: a categorical sample of the masked logits."""
    logits, value = apply(params, board, mask)
    return jax.random.categorical(key, logits), (logits, value)


def rollout_step(cfg: PPOConfig, fns: EnvFns, apply: Callable, theta: jax.Array,
                 rs: RunnerState, axis_name: str | None = None
                 ) -> tuple[RunnerState, tuple[Transition, dict]]:
    """One move of every env with the shaped reward `theta . phi` (optionally normalised).

    Returns the runner state after the move and `(Transition [N], move info [N])`. With
    `axis_name` (N = this device's envs): the carried key stays replicated, the device draws
    with `fold_in(key_move, device index)`, and return statistics and env_steps are global.
    """
    act = functools.partial(_act, apply, rs.params)
    if axis_name is None:
        key, move, (logits, value) = policy_step(fns, act, rs.env_state, rs.key)
    else:
        key, key_move = jax.random.split(rs.key)
        key_device = jax.random.fold_in(key_move, jax.lax.axis_index(axis_name))
        _, move, (logits, value) = policy_step(fns, act, rs.env_state, key_device)
    res, action = move.result, move.action
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], -1)[:, 0]
    r_shaped = reward(theta, fns.phi(res.board, res.next_board, res.score_gain, res.terminated))
    ret = rs.discounted_return * cfg.gamma + r_shaped
    stats = (_update_stats(rs.return_stats, ret, axis_name) if cfg.normalize_rewards
             else rs.return_stats)
    r_train = r_shaped / jnp.sqrt(stats.var + 1e-8) if cfg.normalize_rewards else r_shaped
    score, length, done = rs.episode_score + res.score_gain, rs.episode_length + 1, res.terminated
    info = dict(done=done, score=score, length=length, r_shaped=r_shaped,
                max_tile=jnp.max(res.next_board, axis=-1))
    rs = rs.replace(
        env_state=move.env_state, key=key,
        env_steps=rs.env_steps + cfg.num_envs * axis_size(axis_name),
        episode_score=jnp.where(done, 0.0, score), episode_length=jnp.where(done, 0, length),
        discounted_return=jnp.where(done, 0.0, ret), return_stats=stats)
    t = Transition(obs=move.board.astype(jnp.int8), legal_action_mask=move.legal_action_mask,
                   action=action, log_prob=log_prob, value=value, reward=r_train, done=done)
    return rs, (t, info)


def ppo_loss(cfg: PPOConfig, apply: Callable, params: Any, mb: Transition,
             advantage: jax.Array, target: jax.Array, axis_name: str | None = None
             ) -> tuple[jax.Array, dict]:
    """Clipped-surrogate PPO loss of a minibatch (Schulman et al. 2017, eq. 7 and 9).

    Advantages are normalised per minibatch (with `axis_name`: by the mean and std of the
    minibatch shards of all devices); with `cfg.clip_value` the value loss is clipped like the
    policy ratio (CleanRL), else it is the plain squared error. Returns `(loss [], aux)`:
    policy/value loss, entropy, approx KL and the clip fraction (scalars, means over this
    device's part of the minibatch).
    """
    logits, value = apply(params, mb.obs, mb.legal_action_mask)
    log_p, entropy = masked_log_prob_entropy(logits, mb.legal_action_mask)
    new_log_prob = jnp.take_along_axis(log_p, mb.action[:, None], -1)[:, 0]
    log_ratio = new_log_prob - mb.log_prob
    ratio = jnp.exp(log_ratio)
    adv = ((advantage - global_mean(advantage, axis_name))
           / (global_std(advantage, axis_name) + 1e-8))
    policy_loss = -jnp.mean(jnp.minimum(
        ratio * adv, jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv))
    value_error = (value - target) ** 2
    if cfg.clip_value:
        value_clipped = mb.value + jnp.clip(value - mb.value, -cfg.clip_eps, cfg.clip_eps)
        value_error = jnp.maximum(value_error, (value_clipped - target) ** 2)
    value_loss = 0.5 * jnp.mean(value_error)
    ent = jnp.mean(entropy)
    loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * ent
    aux = dict(policy_loss=policy_loss, value_loss=value_loss, entropy=ent,
               approx_kl=jnp.mean((ratio - 1) - log_ratio),
               clip_fraction=jnp.mean(jnp.abs(ratio - 1) > cfg.clip_eps))
    return loss, aux


def shuffle(cfg: PPOConfig, batch: Any, key: jax.Array) -> Any:
    """Permute a batch pytree (leaves `[B, ...]`, B = `cfg.batch_size`) into `[M, B / M, ...]`."""
    perm = jax.random.permutation(key, cfg.batch_size)
    return jax.tree.map(lambda x: x[perm].reshape((cfg.num_minibatches, -1) + x.shape[1:]), batch)


def minibatch_step(cfg: PPOConfig, apply: Callable, optimizer, state: tuple, mb: tuple,
                   axis_name: str | None = None) -> tuple[tuple, dict]:
    """One Adam step on a minibatch `(transitions, advantage, target)`; state `(params, opt)`.

    With `axis_name`, grads are taken at device-varying params (at replicated ones shard_map
    would psum them) and pmean'd with the loss statistics: every device takes the same step.
    """
    params, opt_state = state
    local = params if axis_name is None else jax.lax.pcast(params, axis_name, to="varying")
    grads, aux = jax.grad(functools.partial(ppo_loss, cfg, apply, axis_name=axis_name),
                          has_aux=True)(local, *mb)
    if axis_name is not None:
        grads, aux = jax.lax.pmean((grads, aux), axis_name)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return (optax.apply_updates(params, updates), opt_state), aux


def update_epoch(cfg: PPOConfig, apply: Callable, optimizer, carry: tuple, key: jax.Array,
                 axis_name: str | None = None) -> tuple[tuple, dict]:
    """One epoch: `shuffle` the `[B]` batch into `num_minibatches`, a `minibatch_step` each.

    `carry` is `(params, opt_state, (transitions, advantage, target))`; returns the updated
    carry and the per-minibatch loss statistics. With `axis_name`, each device permutes its
    own batch with the same `key`.
    """
    params, opt_state, batch = carry
    step = functools.partial(minibatch_step, cfg, apply, optimizer, axis_name=axis_name)
    (params, opt_state), aux = jax.lax.scan(step, (params, opt_state), shuffle(cfg, batch, key))
    return (params, opt_state, batch), aux


def learn(cfg: PPOConfig, apply: Callable, optimizer, params: Any, opt_state: Any,
          traj: Transition, last_value: jax.Array, key: jax.Array, axis_name: str | None = None
          ) -> tuple[Any, Any, jax.Array, dict]:
    """The learning phase of an update: GAE on `traj` `[T, N]`, then `update_epochs` epochs.

    Epoch e permutes the flattened time-major batch with `split(key, update_epochs)[e]`.
    Returns `(params, opt_state, target [T, N], aux)`; aux leaves are `[E, M]` loss statistics.
    """
    advantage, target = gae(traj, last_value, cfg.gamma, cfg.gae_lambda)
    flat = jax.tree.map(lambda x: x.reshape((cfg.batch_size,) + x.shape[2:]),
                        (traj, advantage, target))
    (params, opt_state, _), aux = jax.lax.scan(
        functools.partial(update_epoch, cfg, apply, optimizer, axis_name=axis_name),
        (params, opt_state, flat), jax.random.split(key, cfg.update_epochs))
    return params, opt_state, target, aux


def ppo_update(cfg: PPOConfig, fns: EnvFns, apply: Callable, optimizer, schedule: Callable,
               theta: jax.Array, rs: RunnerState, axis_name: str | None = None
               ) -> tuple[RunnerState, SegmentMetrics]:
    """One PPO update: rollout of `num_steps` moves, GAE, `update_epochs` epochs, metrics.

    With `axis_name`, `cfg.num_envs` is this device's share and the metrics are global.
    """
    lr = schedule(rs.update_step * cfg.update_epochs * cfg.num_minibatches)
    step = functools.partial(rollout_step, cfg, fns, apply, theta, axis_name=axis_name)
    rs, (traj, info) = jax.lax.scan(lambda r, _: step(r), rs, length=cfg.num_steps)
    _, last_value = apply(rs.params, jax.vmap(fns.board)(rs.env_state),
                          jax.vmap(fns.legal_action_mask)(rs.env_state))
    key, key_epochs = jax.random.split(rs.key)
    params, opt_state, target, aux = learn(cfg, apply, optimizer, rs.params, rs.opt_state,
                                           traj, last_value, key_epochs, axis_name)
    rs = rs.replace(params=params, opt_state=opt_state, key=key, update_step=rs.update_step + 1)
    residual = target - traj.value
    return rs, SegmentMetrics(
        **episode_metrics(info["done"], info["score"], info["length"], info["max_tile"],
                          info["r_shaped"], axis_name),
        explained_variance=1.0 - global_var(residual, axis_name)
        / (global_var(target, axis_name) + 1e-8),
        lr=jnp.asarray(lr, jnp.float32), **{k: jnp.mean(v) for k, v in aux.items()})


def train_segment(cfg: PPOConfig, update: Callable, rs: RunnerState, theta: jax.Array
                  ) -> tuple[RunnerState, SegmentMetrics]:
    """`cfg.updates_per_segment` PPO updates on the reward `theta . phi` (`[F]`, traced).

    Raises:
      ValueError: theta is not `[NUM_FEATURES]` (at trace time).
    """
    theta = jnp.asarray(theta, jnp.float32)
    if theta.shape != (NUM_FEATURES,):
        raise ValueError(f"theta must have shape ({NUM_FEATURES},), got {theta.shape}")
    return jax.lax.scan(lambda s, _: update(theta, s), rs, length=cfg.updates_per_segment)
