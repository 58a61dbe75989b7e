"""PureJaxRL-style DQN on 2048 with the parametric reward `R_theta = theta . phi`.

The reward-transfer test trains this value-based learner on a theta found with PPO. Like
`ppo.make_train`, `make_train(cfg)` returns `(init, train_segment)`: a segment is
`cfg.num_steps` vectorised env steps (`num_envs` moves each) inside one compiled `lax.scan`;
after each step the transitions go into a circular replay buffer (preallocated device arrays)
and, every `train_frequency` steps once `learning_starts` env steps are done, `gradient_steps`
Huber TD updates run on uniform minibatches. `theta` is traced: new weights never recompile.

Action masking (pgx ends the game on an illegal move): the epsilon-greedy policy explores
uniformly over legal actions and exploits the argmax over legal actions, and the bootstrap of
the TD target maximises over the legal actions of the next state (zero after a terminal move).

References: Mnih et al. 2015 (DQN: replay, target network, epsilon-greedy, clipped TD error);
van Hasselt et al. 2016 (Double DQN, eq. 4); Lu et al. 2022 (PureJaxRL).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from sailor_jax.agents import evaluation
from sailor_jax.agents.networks import MASKED_LOGIT, make_network
from sailor_jax.agents.policy import episode_metrics, policy_step
from sailor_jax.agents.seeds import jit_seeds
from sailor_jax.config import NetworkConfig
from sailor_jax.game.env import GAME_2048, EnvFns
from sailor_jax.game.features import NUM_FEATURES
from sailor_jax.game.reward import reward
from sailor_jax.run.runner import nanmean
from sailor_lab.replay import ReplayBuffer, buffer_add, buffer_sample, init_buffer

MASKED_Q: float = MASKED_LOGIT
"""Q-value given to illegal actions: far below any real value, finite (0 * MASKED_Q = 0)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class DQNConfig:
    """DQN hyperparameters (static: baked into the compiled segment)."""

    num_envs: int = 64
    """Parallel 2048 games."""
    num_steps: int = 128
    """Vectorised env steps per compiled segment (num_envs moves each)."""
    buffer_size: int = 100_000
    """Replay capacity in transitions (per seed); the oldest are overwritten."""
    batch_size: int = 256
    """Transitions per gradient update (sampled uniformly with replacement)."""
    lr: float = 2.5e-4
    """Adam learning rate."""
    gamma: float = 0.99
    """Discount factor."""
    train_frequency: int = 1
    """Vectorised env steps between rounds of gradient updates."""
    gradient_steps: int = 1
    """Gradient updates per round."""
    target_update_interval: int = 250
    """Gradient updates between target-network updates."""
    tau: float = 1.0
    """Target update step: 1.0 copies the online network, < 1 is a Polyak (soft) update."""
    epsilon_start: float = 1.0
    """Exploration rate at env step 0."""
    epsilon_end: float = 0.05
    """Exploration rate after the linear decay."""
    epsilon_decay_steps: int = 50_000
    """Env steps (per seed) of the linear decay from epsilon_start to epsilon_end."""
    learning_starts: int = 5_000
    """Env steps (per seed) collected before the first update."""
    max_grad_norm: float = 10.0
    """Global gradient-norm clip."""
    double_dqn: bool = True
    """Double DQN target: online argmax, target-network value (van Hasselt et al. 2016)."""
    network: NetworkConfig = NetworkConfig(hidden_sizes=(256, 256), activation="relu",
                                           first_layer="embedding", trunk="separate")
    """Q-network MLP sizes."""

    def __post_init__(self) -> None:
        for name in ("num_envs", "num_steps", "buffer_size", "batch_size", "train_frequency",
                     "gradient_steps", "target_update_interval", "epsilon_decay_steps"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"DQNConfig.{name} must be a positive integer, "
                                 f"got {getattr(self, name)}")
        checks = {"learning_starts": self.learning_starts >= 0,
                  "buffer_size": self.buffer_size >= max(self.num_envs, self.batch_size),
                  "gamma": 0 < self.gamma <= 1, "tau": 0 < self.tau <= 1, "lr": self.lr > 0,
                  "max_grad_norm": self.max_grad_norm > 0,
                  "epsilon_start": 0 <= self.epsilon_start <= 1,
                  "epsilon_end": 0 <= self.epsilon_end <= self.epsilon_start}
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"DQNConfig.{name} = {getattr(self, name)} is out of range "
                                 f"(num_envs={self.num_envs}, batch_size={self.batch_size}, "
                                 f"epsilon_start={self.epsilon_start})")

    @property
    def steps_per_segment(self) -> int:
        """Env steps (moves) one segment plays, per seed."""
        return self.num_envs * self.num_steps


DQN_RECIPES: dict[str, DQNConfig] = {
    "dqn": DQNConfig(),
    "dqn_afterstates": DQNConfig(network=dataclasses.replace(DQNConfig().network,
                                                             actions="afterstates")),
}
"""Recipe name -> `DQNConfig` (`benchmarks/learning.py`): the transfer experiment's DQN
(Q-values of the board's 4 moves) and the same with each move's Q-value read from its
afterstate."""


@struct.dataclass
class DQNTransition:
    """One move for one game (a batch adds `[N]`; the buffer stores `[C, ...]`)."""

    obs: jax.Array  # [16] int8 board before the move
    action: jax.Array  # [] int32
    reward: jax.Array  # [] float32 r_shaped = theta . phi
    next_obs: jax.Array  # [16] int8 board the agent sees next (ignored when terminated)
    next_mask: jax.Array  # [4] bool legal actions there
    terminated: jax.Array  # [] bool, the move ended the game (no bootstrap)


@struct.dataclass
class DQNState:
    """Everything a DQN segment needs to continue (one seed)."""

    params: Any  # online Q-network parameters
    target_params: Any  # target Q-network parameters
    opt_state: Any  # optax state
    env_state: Any  # batched [N] env state
    buffer: ReplayBuffer  # of DQNTransition
    key: jax.Array  # PRNG key
    env_steps: jax.Array  # [] int32 per-seed env steps done so far
    update_step: jax.Array  # [] int32 gradient updates done so far
    episode_score: jax.Array  # [N] float32 game score of the running episode
    episode_length: jax.Array  # [N] int32 moves of the running episode


@struct.dataclass
class DQNMetrics:
    """Summaries of one segment, scalars (`[S]` under seed vmap)."""

    episode_score: jax.Array  # float32 mean game score of episodes that ended (NaN if none)
    episode_length: jax.Array  # float32 mean moves of episodes that ended (NaN if none)
    episode_max_tile: jax.Array  # float32 mean max tile value of episodes that ended
    episodes: jax.Array  # int32 episodes that ended
    max_tile: jax.Array  # int32 largest tile value on any board
    reward_mean: jax.Array  # float32 mean shaped reward per move
    loss: jax.Array  # float32 mean Huber TD loss of the updates (NaN if none ran)
    q_mean: jax.Array  # float32 mean Q(s, a) of the sampled transitions (NaN if none)
    epsilon: jax.Array  # float32 exploration rate at the end of the segment
    updates: jax.Array  # int32 gradient updates run in the segment


def masked_q(q: jax.Array, mask: jax.Array) -> jax.Array:
    """Set illegal actions' Q-values to `MASKED_Q`: `[..., 4] float32` -> same shape."""
    return jnp.where(mask, q, MASKED_Q)


def epsilon_greedy(key: jax.Array, q: jax.Array, mask: jax.Array, epsilon: jax.Array
                   ) -> jax.Array:
    """Pick `[N] int32` actions: w.p. epsilon uniform over legal actions, else legal argmax.

    Args:
      key: PRNG key.
      q: `[N, 4] float32` Q-values (illegal entries ignored whatever their value).
      mask: `[N, 4] bool` legal actions, at least one True per row.
      epsilon: `[]` exploration rate in [0, 1] (traced).
    """
    key_explore, key_random = jax.random.split(key)
    random = jax.random.categorical(key_random, jnp.where(mask, 0.0, MASKED_Q))
    explore = jax.random.uniform(key_explore, q.shape[:1]) < epsilon
    return jnp.where(explore, random, jnp.argmax(masked_q(q, mask), -1)).astype(jnp.int32)


def segment_record(metrics: DQNMetrics) -> tuple[dict[str, float], np.ndarray]:
    """A DQN segment's log scalars (mean TD loss and epsilon over the rows) and each row's
    mean game score (`float64[R]`): `FixedReward.segment_record` for a DQN run. Host-only."""
    return ({"losses/td_loss": nanmean(np.ravel(metrics.loss)),
             "charts/epsilon": nanmean(np.ravel(metrics.epsilon))},
            np.ravel(metrics.episode_score))


def epsilon_at(cfg: DQNConfig, env_steps: jax.Array) -> jax.Array:
    """Linear decay from `epsilon_start` to `epsilon_end` over `epsilon_decay_steps` env steps."""
    frac = jnp.clip(env_steps / cfg.epsilon_decay_steps, 0.0, 1.0)
    return jnp.float32(cfg.epsilon_start + frac * (cfg.epsilon_end - cfg.epsilon_start))


def td_target(reward_: jax.Array, terminated: jax.Array, q_next_online: jax.Array,
              q_next_target: jax.Array, next_mask: jax.Array, gamma: float,
              double_dqn: bool) -> jax.Array:
    """One-step TD target over legal next actions (Mnih et al. 2015; van Hasselt et al. 2016).

    `y = r + gamma * Q_target(s', a*)`, with `a* = argmax_legal Q_online(s', .)` (Double DQN)
    or `a* = argmax_legal Q_target(s', .)`; `y = r` when the move ended the game.

    Args:
      reward_: `[B] float32`. terminated: `[B] bool`.
      q_next_online, q_next_target: `[B, 4] float32` Q-values of the next state.
      next_mask: `[B, 4] bool` legal actions of the next state.
      gamma: discount (static). double_dqn: which target (static).

    Returns:
      `[B] float32` targets (no gradient flows through them).
    """
    chooser = q_next_online if double_dqn else q_next_target
    best = jnp.argmax(masked_q(chooser, next_mask), -1)
    bootstrap = jnp.take_along_axis(q_next_target, best[:, None], -1)[:, 0]
    return jax.lax.stop_gradient(reward_ + gamma * jnp.where(terminated, 0.0, bootstrap))


@functools.lru_cache(maxsize=16)
def make_train(cfg: DQNConfig, num_seeds: int | None = None, env_fns: EnvFns = GAME_2048):
    """Build the compiled `(init, train_segment)` pair (the API of `ppo.make_train`, cached
    like it).

    `init(key) -> DQNState`: fresh networks (target = online), optimiser, empty buffer and
    `num_envs` games. `train_segment(state, theta) -> (state, DQNMetrics)`: `cfg.num_steps`
    vectorised env steps with updates, on the reward `theta . phi`; theta is `[F] float32`
    and traced (no recompilation when it changes). Compiled; the input state is donated.

    With `num_seeds=S`, `init` builds S runs from `jax.random.split(key, S)` (a Python loop
    over the compiled single-seed init, as in `ppo.make_train`) and `train_segment` takes
    `[S, ...]` states and `[S, F]` thetas; seed s matches the single-seed functions.
    `env_fns` swaps the environment (probe environments in tests); static.

    Raises:
      ValueError: `num_seeds` not positive; theta of the wrong shape (when traced).
    """
    return jit_seeds(*_make_pure(cfg, env_fns), num_seeds)


def _make_pure(cfg: DQNConfig, fns: EnvFns):
    """Return the unjitted single-seed `(init, segment)` functions over the static config."""
    init_params, apply = make_network(cfg.network, head="q")
    optimizer = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(cfg.lr))

    def segment(s: DQNState, theta: jax.Array) -> tuple[DQNState, DQNMetrics]:
        return train_segment(cfg, fns, apply, optimizer, s, theta)  # chex counts its traces

    return functools.partial(init_dqn, cfg, fns, init_params, optimizer), segment


def init_dqn(cfg: DQNConfig, fns: EnvFns, init_params, optimizer, key: jax.Array) -> DQNState:
    """Fresh networks (target = online), optimiser, empty buffer and `num_envs` games."""
    key_params, key_env, key_run = jax.random.split(key, 3)
    params, n = init_params(key_params), cfg.num_envs
    empty = DQNTransition(obs=jnp.zeros((16,), jnp.int8), action=jnp.int32(0),
                          reward=jnp.float32(0), next_obs=jnp.zeros((16,), jnp.int8),
                          next_mask=jnp.zeros((4,), bool), terminated=jnp.bool_(False))
    return DQNState(
        params=params, target_params=params, opt_state=optimizer.init(params),
        env_state=jax.vmap(fns.reset)(jax.random.split(key_env, n)),
        buffer=init_buffer(empty, cfg.buffer_size), key=key_run,
        env_steps=jnp.int32(0), update_step=jnp.int32(0),
        episode_score=jnp.zeros((n,), jnp.float32), episode_length=jnp.zeros((n,), jnp.int32))


def dqn_loss(apply, params, batch: DQNTransition, target: jax.Array):
    """Huber TD loss of a minibatch (Mnih et al. 2015); returns `(loss [], Q(s, a) [B])`."""
    q = jnp.take_along_axis(apply(params, batch.obs), batch.action[:, None], -1)[:, 0]
    return jnp.mean(optax.huber_loss(q, target)), q


def sgd_step(cfg: DQNConfig, apply, optimizer, s: DQNState) -> tuple[DQNState, tuple]:
    """One TD update on a uniform replay minibatch, then the (soft or hard) target update."""
    key, key_sample = jax.random.split(s.key)
    batch = buffer_sample(s.buffer, key_sample, cfg.batch_size)
    target = td_target(batch.reward, batch.terminated, apply(s.params, batch.next_obs),
                       apply(s.target_params, batch.next_obs), batch.next_mask,
                       cfg.gamma, cfg.double_dqn)
    (loss, q), grads = jax.value_and_grad(functools.partial(dqn_loss, apply), has_aux=True)(
        s.params, batch, target)
    updates, opt_state = optimizer.update(grads, s.opt_state, s.params)
    params = optax.apply_updates(s.params, updates)
    step = s.update_step + 1
    soft = optax.incremental_update(params, s.target_params, cfg.tau)
    sync = step % cfg.target_update_interval == 0
    target_params = jax.tree.map(lambda a, b: jnp.where(sync, a, b), soft, s.target_params)
    s = s.replace(params=params, target_params=target_params, opt_state=opt_state,
                  key=key, update_step=step)
    return s, (loss, jnp.mean(q))


def train_round(cfg: DQNConfig, apply, optimizer, s: DQNState):
    """`cfg.gradient_steps` TD updates; returns the state and their mean loss and Q."""
    step = functools.partial(sgd_step, cfg, apply, optimizer)
    s, (loss, q) = jax.lax.scan(lambda st, _: step(st), s, length=cfg.gradient_steps)
    return s, jnp.mean(loss), jnp.mean(q)


def _act(apply, params, epsilon, key, board, mask):
    """The DQN behaviour policy: epsilon-greedy over legal actions."""
    return epsilon_greedy(key, apply(params, board), mask, epsilon), None


def env_step(cfg: DQNConfig, fns: EnvFns, apply, optimizer, theta: jax.Array, s: DQNState):
    """One move of every env into the buffer, then a training round when it is due."""
    act = functools.partial(_act, apply, s.params, epsilon_at(cfg, s.env_steps))
    key, move, _ = policy_step(fns, act, s.env_state, s.key)
    res, env_state = move.result, move.env_state
    r_shaped = reward(theta, fns.phi(res.board, res.next_board, res.score_gain, res.terminated))
    item = DQNTransition(obs=move.board, action=move.action, reward=r_shaped,
                         next_obs=jax.vmap(fns.board)(env_state),
                         next_mask=jax.vmap(fns.legal_action_mask)(env_state),
                         terminated=res.terminated)
    score, length, done = s.episode_score + res.score_gain, s.episode_length + 1, res.terminated
    s = s.replace(env_state=env_state, key=key, env_steps=s.env_steps + cfg.num_envs,
                  buffer=buffer_add(s.buffer, item), episode_score=jnp.where(done, 0.0, score),
                  episode_length=jnp.where(done, 0, length))
    ready = ((s.env_steps >= cfg.learning_starts) & (s.buffer.size >= cfg.batch_size)
             & ((s.env_steps // cfg.num_envs) % cfg.train_frequency == 0))
    s, loss, q = jax.lax.cond(ready, functools.partial(train_round, cfg, apply, optimizer),
                              lambda s: (s, jnp.float32(0), jnp.float32(0)), s)
    info = dict(done=done, score=score, length=length, r_shaped=r_shaped, loss=loss, q=q,
                ready=ready, max_tile=jnp.max(res.next_board, axis=-1))
    return s, info


def train_segment(cfg: DQNConfig, fns: EnvFns, apply, optimizer, s: DQNState,
                  theta: jax.Array) -> tuple[DQNState, DQNMetrics]:
    """`cfg.num_steps` env steps with updates on the reward `theta . phi` (`[F]`, traced).

    Raises:
      ValueError: theta is not `[NUM_FEATURES]` (at trace time).
    """
    theta = jnp.asarray(theta, jnp.float32)
    if theta.shape != (NUM_FEATURES,):
        raise ValueError(f"theta must have shape ({NUM_FEATURES},), got {theta.shape}")
    step = functools.partial(env_step, cfg, fns, apply, optimizer, theta)
    s, info = jax.lax.scan(lambda st, _: step(st), s, length=cfg.num_steps)
    return s, _metrics(info, epsilon_at(cfg, s.env_steps), cfg.gradient_steps)


def _metrics(info: dict, epsilon: jax.Array, gradient_steps: int) -> DQNMetrics:
    """Summarise one segment's `[T, N]` / `[T]` step records into scalars."""
    rounds = jnp.sum(info["ready"])

    def round_mean(x):
        return jnp.where(rounds > 0, jnp.sum(jnp.where(info["ready"], x, 0.0))
                         / jnp.maximum(rounds, 1), jnp.nan)

    return DQNMetrics(
        **episode_metrics(info["done"], info["score"], info["length"], info["max_tile"],
                          info["r_shaped"]),
        loss=round_mean(info["loss"]), q_mean=round_mean(info["q"]), epsilon=epsilon,
        updates=(rounds * gradient_steps).astype(jnp.int32))


@functools.lru_cache(maxsize=16)
def make_evaluate(net: NetworkConfig, num_episodes: int, max_len: int = 50_000,
                  greedy: bool = True, env_fns: EnvFns = GAME_2048):
    """Build the compiled `evaluate(params, key) -> evaluation.EpisodeStats` for a Q-network.

    The PPO evaluation protocol (`evaluation.make_policy_evaluate`) with legal-masked
    Q-values as scores: greedy = argmax over legal actions (sampled = softmax of Q). Static
    and cached like `evaluation.make_evaluate`. Raises ValueError for non-positive sizes.
    """
    _, apply = make_network(net, head="q")
    return evaluation.make_policy_evaluate(
        lambda params, board, mask: masked_q(apply(params, board), mask),
        num_episodes, max_len, greedy, env_fns)
