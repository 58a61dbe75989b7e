"""Checkpoints with orbax (the only module that imports it). Host-only.

A checkpoint step holds one pytree (`state`: runner state, theta, anything array-valued)
and one JSON dict (`meta`: theta history, optimiser history, counters). Restores always go
against an abstract target (`jax.eval_shape` of a freshly built state), so dataclass and
optax state types come back intact. PRNG keys are raw `uint32[2]` arrays throughout the
package, so no typed-key serialisation is involved. Arrays may be sharded global
`jax.Array`s (each process writes its own shards; every process must call `save`) and
restore onto whatever sharding the abstract target carries, also another device count.
"""

from __future__ import annotations

import os
from typing import Any

import orbax.checkpoint as ocp


class Checkpointer:
    """Save/restore `(state pytree, meta dict)` per step under `directory`. Host-only.

    Args:
      directory: checkpoint folder (created if missing).
      max_to_keep: how many most recent steps to keep (None keeps all).
    """

    def __init__(self, directory: str | os.PathLike, max_to_keep: int | None = 3):
        self.directory = os.path.abspath(os.fspath(directory))
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                               enable_async_checkpointing=False)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_step(self) -> int | None:
        """Return the newest saved step, or None if there is none."""
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def save(self, step: int, state: Any, meta: dict) -> None:
        """Write step `step` and wait until it is on disk.

        Raises:
          ValueError: step `step` already exists (never overwritten silently), or is older
            than the latest saved step (orbax would skip it without saving).
          RuntimeError: orbax declined to save for another reason.
        """
        if step in self._manager.all_steps():
            raise ValueError(f"checkpoint step {step} already exists in {self.directory}")
        latest = self.latest_step()
        if latest is not None and step < latest:
            raise ValueError(f"checkpoint step {step} is older than the latest saved step "
                             f"{latest} in {self.directory}; steps must increase")
        saved = self._manager.save(step, args=ocp.args.Composite(
            state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta)))
        self._manager.wait_until_finished()
        if not saved:
            raise RuntimeError(f"orbax did not save checkpoint step {step} in {self.directory}")

    def restore(self, abstract_state: Any, step: int | None = None) -> tuple[Any, dict]:
        """Load `(state, meta)` of `step` (default: the latest).

        Args:
          abstract_state: pytree of `jax.ShapeDtypeStruct` (e.g. `jax.eval_shape(init, key)`)
            with the structure to restore into.
          step: which step; None = latest.

        Raises:
          FileNotFoundError: no checkpoint in the directory.
        """
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint found in {self.directory}")
        restored = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state), meta=ocp.args.JsonRestore()))
        return restored["state"], restored["meta"]

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
