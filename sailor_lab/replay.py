"""A circular replay buffer of preallocated device arrays (DQN). Device code, jit/vmap-safe."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class ReplayBuffer:
    """Circular buffer of `C` items: `data` leaves are `[C, ...]`, preallocated."""

    data: Any  # pytree of [C, ...] arrays
    position: jax.Array  # [] int32 next slot to write
    size: jax.Array  # [] int32 filled slots, <= C


def init_buffer(item: Any, capacity: int) -> ReplayBuffer:
    """Allocate an empty buffer of `capacity` copies of `item`'s structure (zeros)."""
    data = jax.tree.map(lambda x: jnp.zeros((capacity,) + jnp.shape(x), jnp.asarray(x).dtype),
                        item)
    return ReplayBuffer(data=data, position=jnp.int32(0), size=jnp.int32(0))


def buffer_add(buffer: ReplayBuffer, items: Any) -> ReplayBuffer:
    """Write a batch of `N` items at the write position, wrapping around. Compiled-safe.

    Args:
      buffer: capacity `C`.
      items: pytree like the buffer's data, leaves `[N, ...]`, `N <= C` (static).

    Raises:
      ValueError: `N > C` (slots would be written twice in one call).
    """
    capacity = jax.tree.leaves(buffer.data)[0].shape[0]
    n = jax.tree.leaves(items)[0].shape[0]
    if n > capacity:
        raise ValueError(f"cannot add {n} items to a replay buffer of capacity {capacity}")
    index = (buffer.position + jnp.arange(n)) % capacity
    data = jax.tree.map(lambda d, x: d.at[index].set(x.astype(d.dtype)), buffer.data, items)
    return ReplayBuffer(data=data, position=(buffer.position + n) % capacity,
                        size=jnp.minimum(buffer.size + n, capacity))


def buffer_sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Any:
    """Draw `batch_size` (static) items uniformly, with replacement, from the filled slots.

    Compiled-safe. An empty buffer returns copies of slot 0 (callers wait for data).
    """
    index = jax.random.randint(key, (batch_size,), 0, jnp.maximum(buffer.size, 1))
    return jax.tree.map(lambda d: d[index], buffer.data)
