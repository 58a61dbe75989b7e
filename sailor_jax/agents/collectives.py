"""Batch statistics of an env batch that may be split over devices (`sailor_lab.env_sharding`).

Device code. Each function reduces all elements of a local array `x`; when `axis_name` names
a mesh axis of an enclosing `jax.shard_map`, it also reduces over the shards of every device on
that axis, so the result is the statistic of the concatenated global batch and is the same on
every device. Shards must have equal sizes (then the mean of the per-device means is the global
mean). With `axis_name=None` each function is exactly the plain `jnp` reduction it replaces
(the same operations, so the single-device PPO path stays bit-identical).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["axis_size", "global_max", "global_mean", "global_std", "global_sum", "global_var"]


def axis_size(axis_name: str | None) -> int:
    """Devices on the mesh axis `axis_name` (a Python int at trace time); 1 for None."""
    return 1 if axis_name is None else jax.lax.axis_size(axis_name)


def global_mean(x: jax.Array, axis_name: str | None = None) -> jax.Array:
    """Mean `[]` of `x` (any shape, floating) over all elements of all shards."""
    mean = jnp.mean(x)
    return mean if axis_name is None else jax.lax.pmean(mean, axis_name)


def global_var(x: jax.Array, axis_name: str | None = None) -> jax.Array:
    """Population variance `[]` (ddof 0, two-pass about the global mean) of `x` over all shards."""
    if axis_name is None:
        return jnp.var(x)
    centered = x - global_mean(x, axis_name)
    return jax.lax.pmean(jnp.mean(centered * centered), axis_name)


def global_std(x: jax.Array, axis_name: str | None = None) -> jax.Array:
    """Population standard deviation `[]` of `x` over all shards (`x.std()` when unsharded)."""
    return x.std() if axis_name is None else jnp.sqrt(global_var(x, axis_name))


def global_sum(x: jax.Array, axis_name: str | None = None) -> jax.Array:
    """Sum `[]` of `x` over all shards (bool sums to int32, like `jnp.sum`)."""
    total = jnp.sum(x)
    return total if axis_name is None else jax.lax.psum(total, axis_name)


def global_max(x: jax.Array, axis_name: str | None = None) -> jax.Array:
    """Maximum `[]` of `x` over all shards."""
    top = jnp.max(x)
    return top if axis_name is None else jax.lax.pmax(top, axis_name)
