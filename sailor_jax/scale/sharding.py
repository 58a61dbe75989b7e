"""Seed sharding: the vmapped seed axis of a run laid out over a 1-D device mesh ("seed").

Host-side helpers around `jax.sharding`. Seeds (SAILOR rows, baseline rows) are independent,
so spreading the leading `[R, ...]` axis of the runner state and of theta over devices needs
no communication inside a segment: the jitted `vmap(segment)` propagates the input sharding
(`NamedSharding(mesh, PartitionSpec("seed"))`) and every device trains its own rows. When R
does not divide the device count, the state is padded to the next multiple with copies of
the last row (they train, are never read, and are dropped before checkpoints and host work),
so row r computes the same thing whatever the device count.

The mesh axis is of type `Auto`, so slicing rows (`runner.rows`) of a sharded array works
for any row count (with `Explicit` axes, jax 0.10 refuses a slice whose size does not divide
the axis). Multi-process runs (`jax.distributed`) use the same layout over the global
devices; `to_host` gathers from every process.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

from sailor_jax.errors import UserError

__all__ = ["SeedLayout", "barrier", "broadcast_from_main", "initialize_distributed",
           "is_main_process", "resolve_devices", "to_host"]


def resolve_devices(devices: int | None) -> list[jax.Device]:
    """The first `devices` of `jax.devices()` (all, when None), the mesh's devices.

    In a multi-process run these are the global devices of every process.

    Raises:
      UserError: `devices` is not in `1 .. jax.device_count()`.
    """
    available = jax.devices()
    if devices is None:
        return available
    if not 1 <= int(devices) <= len(available):
        raise UserError(
            f"--devices must be in 1..{len(available)} (the {available[0].platform} devices "
            f"JAX sees), got {devices}", "on a CPU, more devices need "
            "XLA_FLAGS=--xla_force_host_platform_device_count=N set before JAX starts")
    return available[:int(devices)]


@dataclasses.dataclass(frozen=True)
class SeedLayout:
    """`rows` vmapped rows over a 1-D `seed` mesh, padded to a multiple of its size.

    Args:
      rows: R, the real rows (seeds, or SAILOR + baseline seeds) of the run.
      devices: how many devices (None: all of `jax.devices()`).
    """

    rows: int
    devices: int | None = None

    def __post_init__(self) -> None:
        if self.rows <= 0:
            raise ValueError(f"rows must be positive, got {self.rows}")
        resolve_devices(self.devices)

    @functools.cached_property
    def mesh(self) -> Mesh:
        devices = resolve_devices(self.devices)
        return jax.make_mesh((len(devices),), ("seed",), axis_types=(AxisType.Auto,),
                             devices=devices)

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def padded_rows(self) -> int:
        """R rounded up to a multiple of the device count (the rows the program trains)."""
        return math.ceil(self.rows / self.num_devices) * self.num_devices

    @property
    def sharding(self) -> NamedSharding:
        """Leading axis split over `seed`, other axes whole."""
        return NamedSharding(self.mesh, PartitionSpec("seed"))

    @property
    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec())

    def put(self, tree: Any) -> Any:
        """Host arrays `[R, ...]` -> global arrays `[padded_rows, ...]` sharded over `seed`.

        Padding rows copy row R-1. Leaves must be host-readable (NumPy or process-local
        jax arrays); every process passes the same values.
        """
        def one(x):
            x = np.asarray(x)
            if x.shape[0] != self.rows:
                raise ValueError(f"expected a leading axis of {self.rows} rows, got {x.shape}")
            x = np.concatenate([x, np.repeat(x[-1:], self.padded_rows - self.rows, 0)])
            return jax.make_array_from_callback(x.shape, self.sharding, lambda idx: x[idx])

        return jax.tree.map(one, tree)

    def abstract_checkpoint(self, tree: Any) -> Any:
        """The `jax.ShapeDtypeStruct` target a `[R, ...]` checkpoint restores into: sharded
        over `seed` when no padding is needed, else replicated (then `pad` it)."""
        sharding = self.sharding if self.padded_rows == self.rows else self.replicated
        return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
                            jax.eval_shape(lambda: tree))

    def pad(self, tree: Any) -> Any:
        """Global arrays `[R, ...]` (restored) -> `[padded_rows, ...]` sharded over `seed`."""
        if self.padded_rows == self.rows:
            return tree
        extra = self.padded_rows - self.rows
        return jax.jit(lambda t: jax.tree.map(
            lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], extra, 0)]), t),
            out_shardings=self.sharding)(tree)

    def unpad(self, tree: Any) -> Any:
        """Global arrays `[padded_rows, ...]` -> the real rows `[R, ...]` (for checkpoints):
        the same arrays when nothing is padded, else replicated copies of the first R rows."""
        if self.padded_rows == self.rows:
            return tree
        return jax.jit(lambda t: jax.tree.map(lambda x: x[:self.rows], t),
                       out_shardings=self.replicated)(tree)

    def to_host(self, tree: Any) -> Any:
        """Global arrays `[padded_rows, ...]` -> NumPy `[R, ...]`, gathered from all processes."""
        return jax.tree.map(lambda x: x[:self.rows], to_host(tree))


def to_host(tree: Any) -> Any:
    """`jax.device_get`, or `multihost_utils.process_allgather` when some leaf lives partly on
    another process's devices. Every process must call it (a collective in that case)."""
    leaves = jax.tree.leaves(tree)
    if all(not isinstance(x, jax.Array) or x.is_fully_addressable for x in leaves):
        return jax.device_get(tree)
    return multihost_utils.process_allgather(tree, tiled=True)


def initialize_distributed() -> None:
    """`jax.distributed.initialize`: make this process one of a multi-process program.

    Call before any other JAX work. JAX detects the coordinator, the process count and this
    process's index under Slurm, Open MPI, Kubernetes or mpi4py; elsewhere they come from the
    environment variables `JAX_COORDINATOR_ADDRESS` (HOST:PORT of process 0),
    `JAX_NUM_PROCESSES` and `JAX_PROCESS_ID`, set for each process. On CPU the processes
    talk over Gloo.

    Raises:
      UserError: neither a launcher nor the environment variables say how to join (JAX's
        own error, re-raised with what to set).
    """
    count, index = os.environ.get("JAX_NUM_PROCESSES"), os.environ.get("JAX_PROCESS_ID")
    try:
        jax.distributed.initialize(num_processes=int(count) if count else None,
                                   process_id=int(index) if index else None)
    except ValueError as e:
        raise UserError(f"--distributed: jax.distributed.initialize failed ({e})",
                        "start the processes under Slurm or Open MPI, or set "
                        "JAX_COORDINATOR_ADDRESS=HOST:PORT, JAX_NUM_PROCESSES=N and "
                        "JAX_PROCESS_ID=I for each") from e


def is_main_process() -> bool:
    """True on process 0, the one that writes logs and results and runs the judge."""
    return jax.process_index() == 0


def broadcast_from_main(x: np.ndarray) -> np.ndarray:
    """Process 0's value of the host array `x` on every process (identity with one process).

    Every process must call it with an array of the same shape and dtype. The processes
    meet at a `barrier` first: process 0 may arrive long after the others (it runs the
    judge), and Gloo, JAX's CPU collectives, gives up on a peer after 30 s.
    """
    if jax.process_count() == 1:
        return x
    barrier("broadcast_from_main")
    return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(x)))


BARRIER_TIMEOUT_S = 24 * 3600
"""How long a process waits at a `barrier` for the others (a dead process is noticed
sooner: the coordination service's heartbeats end the program)."""
_barriers_passed = 0


def barrier(name: str, timeout_s: float = BARRIER_TIMEOUT_S) -> None:
    """Wait until every process reaches `name` (no-op with one process).

    A barrier of JAX's coordination service (the key-value store behind
    `jax.distributed`), not a device collective, so it has no 30 s Gloo deadline. Every
    process must pass the same barriers in the same order (each call gets a unique id).

    Raises:
      RuntimeError: `jax.distributed` is not initialised with more than one process, or
        the others did not arrive within `timeout_s` (JAX's error).
    """
    global _barriers_passed
    if jax.process_count() == 1:
        return
    from jax._src import distributed  # the client is not exposed publicly

    client = distributed.global_state.client
    if client is None:
        raise RuntimeError("sharding.barrier: several processes but no jax.distributed client")
    _barriers_passed += 1
    client.wait_at_barrier(f"sailor_jax/{name}/{_barriers_passed}", int(timeout_s * 1000))
