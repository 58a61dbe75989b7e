"""PureJaxRL-style PPO on 2048 with the parametric reward `R_theta = theta . phi`.

`make_train(cfg)` returns `(init, train_segment)`. A segment is `cfg.updates_per_segment`
PPO updates (rollout of `num_steps` x `num_envs` moves, GAE, `update_epochs` x
`num_minibatches` clipped-objective steps) inside one compiled `lax.scan`. `theta` is a
traced argument, so new reward weights never recompile; with `num_seeds=S` both functions
are vmapped over a leading seed axis (runner state and theta), one compiled program.

References: Schulman et al. 2017 (PPO, clipped surrogate, eq. 7); Schulman et al. 2016 (GAE,
eq. 16); Lu et al. 2022 (PureJaxRL).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from sailor_jax import env
from sailor_jax.config import PPOConfig
from sailor_jax.features import NUM_FEATURES, phi
from sailor_jax.networks import make_network, masked_log_prob_entropy
from sailor_jax.reward import reward
from sailor_jax.types import RunnerState, RunningStats, SegmentMetrics, Transition


@dataclasses.dataclass(frozen=True)
class EnvFns:
    """The environment as pure single-game functions (static; the default is pgx 2048).

    Tests swap in tiny probe environments with the same signatures: `reset(key) -> state`,
    `step(state, action, key) -> (state, env.StepResult)` with auto-reset, `board(state) ->
    [16] int`, `legal_action_mask(state) -> [4] bool`, and `phi(board, next_board, score_gain,
    terminated) -> [F] float32`.
    """

    reset: Callable = env.reset
    step: Callable = env.step
    board: Callable = env.board_exponents
    legal_action_mask: Callable = env.legal_action_mask
    phi: Callable = phi


GAME_2048 = EnvFns()


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


def _update_stats(stats: RunningStats, x: jax.Array) -> RunningStats:
    """Merge a batch into running mean/variance (Chan et al. parallel algorithm)."""
    n = jnp.float32(x.size)
    mean, var = jnp.mean(x), jnp.var(x)
    total = stats.count + n
    delta = mean - stats.mean
    new_mean = stats.mean + delta * n / total
    m2 = stats.var * stats.count + var * n + delta**2 * stats.count * n / total
    return RunningStats(mean=new_mean, var=m2 / total, count=total)


def make_optimizer(cfg: PPOConfig) -> optax.GradientTransformation:
    """Adam (eps 1e-5) after global-norm clipping, with the configured learning-rate schedule."""
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm),
                       optax.adam(learning_rate=lr_schedule(cfg), eps=1e-5))


def lr_schedule(cfg: PPOConfig) -> Callable[[jax.Array], jax.Array]:
    """Map the optimiser step count (minibatch steps) to the learning rate."""
    steps_per_update = cfg.update_epochs * cfg.num_minibatches
    if cfg.lr_schedule == "constant":
        return lambda count: jnp.float32(cfg.lr) + 0.0 * count
    return lambda count: cfg.lr * jnp.clip(
        1.0 - (count // steps_per_update) / cfg.lr_decay_updates, 0.0, 1.0)


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

    Raises:
      ValueError: `num_seeds` not positive.
    """
    return jit_seeds(*_make_pure(cfg, env_fns), num_seeds)


def jit_seeds(init, segment, num_seeds: int | None):
    """Compile single-seed `(init, segment)` closures, lifted over `num_seeds` seeds.

    `num_seeds=None`: `(jit(init), jit(segment))`. Otherwise `init(key)` stacks the runs of
    `jax.random.split(key, S)` and `segment` is `jit(vmap(segment))`. The segment's state
    argument is donated. Shared by `ppo.make_train` and `dqn.make_train`.

    Raises:
      ValueError: `num_seeds` not positive.
    """
    if num_seeds is None:
        return jax.jit(init), jax.jit(segment, donate_argnums=0)
    if int(num_seeds) <= 0:
        raise ValueError(f"num_seeds must be positive, got {num_seeds}")
    init_one = jax.jit(init)

    def init_seeds(key: jax.Array):
        # A Python loop, not vmap: the vmapped orthogonal initialiser (QR) deadlocked the
        # XLA:CPU runtime here (jax 0.10.2). Init runs once per run, so this costs nothing.
        states = [init_one(k) for k in jax.random.split(key, num_seeds)]
        return jax.tree.map(lambda *xs: jnp.stack(xs), *states)

    return init_seeds, jax.jit(jax.vmap(segment), donate_argnums=0)


def _make_pure(cfg: PPOConfig, fns: EnvFns):
    """Return the unjitted single-seed `(init, segment)` closures over the static config."""
    init_params, apply = make_network(cfg.network)
    optimizer = make_optimizer(cfg)
    schedule = lr_schedule(cfg)
    n = cfg.num_envs

    def init(key: jax.Array) -> RunnerState:
        key_params, key_env, key_run = jax.random.split(key, 3)
        params = init_params(key_params)
        zeros = jnp.zeros((n,), jnp.float32)
        return RunnerState(
            params=params, opt_state=optimizer.init(params),
            env_state=jax.vmap(fns.reset)(jax.random.split(key_env, n)),
            key=key_run, update_step=jnp.int32(0), env_steps=jnp.int32(0),
            episode_score=zeros, episode_length=jnp.zeros((n,), jnp.int32),
            discounted_return=zeros,
            return_stats=RunningStats(mean=jnp.float32(0), var=jnp.float32(1),
                                      count=jnp.float32(1e-4)))

    def env_step(carry, _):
        rs, theta = carry
        key, key_action, key_step = jax.random.split(rs.key, 3)
        board = jax.vmap(fns.board)(rs.env_state)
        mask = jax.vmap(fns.legal_action_mask)(rs.env_state)
        logits, value = apply(rs.params, board, mask)
        action = jax.random.categorical(key_action, logits)
        log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], -1)[:, 0]
        env_state, res = jax.vmap(fns.step)(rs.env_state, action, jax.random.split(key_step, n))
        features = fns.phi(res.board, res.next_board, res.score_gain, res.terminated)
        r_shaped = reward(theta, features)
        ret = rs.discounted_return * cfg.gamma + r_shaped
        stats = _update_stats(rs.return_stats, ret) if cfg.normalize_rewards else rs.return_stats
        r_train = r_shaped / jnp.sqrt(stats.var + 1e-8) if cfg.normalize_rewards else r_shaped
        score = rs.episode_score + res.score_gain
        length = rs.episode_length + 1
        done = res.terminated
        info = dict(done=done, score=score, length=length, r_shaped=r_shaped,
                    max_tile=jnp.max(res.next_board, axis=-1))
        rs = rs.replace(
            env_state=env_state, key=key, env_steps=rs.env_steps + n,
            episode_score=jnp.where(done, 0.0, score), episode_length=jnp.where(done, 0, length),
            discounted_return=jnp.where(done, 0.0, ret), return_stats=stats)
        t = Transition(obs=board.astype(jnp.int8), legal_action_mask=mask, action=action,
                       log_prob=log_prob, value=value, reward=r_train, done=done)
        return (rs, theta), (t, info)

    def loss_fn(params, mb: Transition, advantage, target):
        logits, value = apply(params, mb.obs, mb.legal_action_mask)
        log_p, entropy = masked_log_prob_entropy(logits, mb.legal_action_mask)
        new_log_prob = jnp.take_along_axis(log_p, mb.action[:, None], -1)[:, 0]
        log_ratio = new_log_prob - mb.log_prob
        ratio = jnp.exp(log_ratio)
        adv = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
        policy_loss = -jnp.mean(jnp.minimum(
            ratio * adv, jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv))
        value_clipped = mb.value + jnp.clip(value - mb.value, -cfg.clip_eps, cfg.clip_eps)
        value_loss = 0.5 * jnp.mean(jnp.maximum((value - target) ** 2,
                                                (value_clipped - target) ** 2))
        ent = jnp.mean(entropy)
        loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * ent
        aux = dict(policy_loss=policy_loss, value_loss=value_loss, entropy=ent,
                   approx_kl=jnp.mean((ratio - 1) - log_ratio),
                   clip_fraction=jnp.mean(jnp.abs(ratio - 1) > cfg.clip_eps))
        return loss, aux

    def minibatch_step(carry, mb):
        params, opt_state = carry
        grads, aux = jax.grad(loss_fn, has_aux=True)(params, *mb)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), aux

    def epoch(carry, key):
        batch = carry[2]
        perm = jax.random.permutation(key, cfg.batch_size)
        shuffled = jax.tree.map(
            lambda x: x[perm].reshape((cfg.num_minibatches, -1) + x.shape[1:]), batch)
        (params, opt_state), aux = jax.lax.scan(minibatch_step, carry[:2], shuffled)
        return (params, opt_state, batch), aux

    def update(rs: RunnerState, theta: jax.Array) -> tuple[RunnerState, SegmentMetrics]:
        lr = schedule(rs.update_step * cfg.update_epochs * cfg.num_minibatches)
        (rs, _), (traj, info) = jax.lax.scan(env_step, (rs, theta), length=cfg.num_steps)
        _, last_value = apply(rs.params, jax.vmap(fns.board)(rs.env_state),
                              jax.vmap(fns.legal_action_mask)(rs.env_state))
        advantage, target = gae(traj, last_value, cfg.gamma, cfg.gae_lambda)
        flat = jax.tree.map(lambda x: x.reshape((cfg.batch_size,) + x.shape[2:]),
                            (traj, advantage, target))
        key, key_epochs = jax.random.split(rs.key)
        (params, opt_state, _), aux = jax.lax.scan(
            epoch, (rs.params, rs.opt_state, flat), jax.random.split(key_epochs, cfg.update_epochs))
        rs = rs.replace(params=params, opt_state=opt_state, key=key,
                        update_step=rs.update_step + 1)
        return rs, _metrics(traj, info, target, lr, aux)

    def segment(rs: RunnerState, theta: jax.Array) -> tuple[RunnerState, SegmentMetrics]:
        theta = jnp.asarray(theta, jnp.float32)
        if theta.shape != (NUM_FEATURES,):
            raise ValueError(f"theta must have shape ({NUM_FEATURES},), got {theta.shape}")
        return jax.lax.scan(lambda s, _: update(s, theta), rs, length=cfg.updates_per_segment)

    return init, segment


def _metrics(traj: Transition, info: dict, target, lr, aux: dict) -> SegmentMetrics:
    """Summarise one update's rollout and optimisation statistics (all scalars)."""
    done = info["done"]
    episodes = jnp.sum(done)
    denom = jnp.where(episodes > 0, episodes, 1)

    def finished_mean(x):
        return jnp.where(episodes > 0, jnp.sum(jnp.where(done, x, 0)) / denom, jnp.nan)

    residual = target - traj.value
    explained_variance = 1.0 - jnp.var(residual) / (jnp.var(target) + 1e-8)
    return SegmentMetrics(
        episode_score=finished_mean(info["score"]),
        episode_length=finished_mean(info["length"].astype(jnp.float32)),
        episode_max_tile=finished_mean(2.0 ** info["max_tile"].astype(jnp.float32)),
        episodes=episodes.astype(jnp.int32),
        max_tile=(2 ** jnp.max(info["max_tile"])).astype(jnp.int32),
        reward_mean=jnp.mean(info["r_shaped"]),
        explained_variance=explained_variance,
        lr=jnp.asarray(lr, jnp.float32),
        **{k: jnp.mean(v) for k, v in aux.items()},
    )
