"""Lift single-seed `(init, segment)` closures over S vmapped seeds and compile them.

Compiled entry points: the one place where `ppo.make_train` and `dqn.make_train` turn their
pure single-seed functions into jitted, seed-vmapped ones (state donated).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def jit_seeds(init, segment, num_seeds: int | None):
    """Compile single-seed `(init, segment)` closures, lifted over `num_seeds` seeds.

    `num_seeds=None`: `(jit(init), jit(segment))`. Otherwise `init(key)` stacks the runs of
    `jax.random.split(key, S)` and `segment` is `jit(vmap(segment))`. The segment's state
    argument is donated. Shared by `ppo.make_train` and `dqn.make_train`; `seed` axis first.

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
