"""The PPO optimiser: Adam after global-norm gradient clipping, and its learning-rate schedule.

Shared by `agents.ppo` and its env-sharded form (`sailor_lab.env_sharding`), so both step
with the same schedule. References: Kingma & Ba 2015 (Adam); Andrychowicz et al. 2021
("What Matters in On-Policy RL", linear learning-rate decay).
"""

from __future__ import annotations

import optax

from sailor_jax.config import PPOConfig


def make_optimizer(cfg: PPOConfig) -> optax.GradientTransformation:
    """Adam (eps 1e-5) after global-norm clipping, with the configured learning-rate schedule."""
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm),
                       optax.adam(learning_rate=lr_schedule(cfg), eps=1e-5))


def lr_schedule(cfg: PPOConfig) -> optax.Schedule:
    """Map the optimiser step count (minibatch steps) to the learning rate (an optax schedule).

    "constant": `cfg.lr`; "linear": from `cfg.lr` to 0 over `cfg.lr_decay_updates` PPO
    updates, constant within an update (`update_epochs * num_minibatches` optimiser steps),
    then exactly 0 (`optax.linear_schedule` alone ends at +-1e-11 under XLA's fused
    multiply-add, a negative learning rate; the joined constant keeps it at 0).

    Raises:
      ValueError: a linear schedule over "the whole run" (`lr_decay_updates=0`) not yet
        resolved to a number of updates with `PPOConfig.over_run`.
    """
    steps_per_update = cfg.update_epochs * cfg.num_minibatches
    if cfg.lr_schedule == "constant":
        return optax.constant_schedule(cfg.lr)
    if cfg.lr_decay_updates <= 0:
        raise ValueError("lr_schedule='linear' with lr_decay_updates=0 decays over the whole "
                         "run, which this config does not know: build the optimiser from "
                         "cfg.over_run(total PPO updates per seed)")
    linear = optax.join_schedules([optax.linear_schedule(cfg.lr, 0.0, cfg.lr_decay_updates),
                                   optax.constant_schedule(0.0)], [cfg.lr_decay_updates])
    return lambda count: linear(count // steps_per_update)
