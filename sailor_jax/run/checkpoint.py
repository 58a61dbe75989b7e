"""Checkpoints with orbax (the only module that imports it). Host-only.

A checkpoint step holds one pytree (`state`: runner state, theta, anything array-valued)
and one JSON dict (`meta`: theta history, optimiser history, counters). Restores always go
against an abstract target (`jax.eval_shape` of a freshly built state), so dataclass and
optax state types come back intact. PRNG keys are raw `uint32[2]` arrays throughout the
package, so no typed-key serialisation is involved. Arrays may be sharded global
`jax.Array`s (each process writes its own shards; every process must call `save`) and
restore onto whatever sharding the abstract target carries, also another device count.

Corruption. Orbax checks no checksums: flipped bytes in a zstd-compressed array chunk can
restore silently as garbage, while a cut or garbled JSON/metadata file fails with a
`JSONDecodeError`, `UnicodeDecodeError` or TensorStore `ValueError` (observed with orbax
0.12.8). So `save` also stores a SHA-256 of the state's bytes in the meta (`DIGEST_KEY`), and
`restore` recomputes it and refuses a mismatch. `restore_newest` tries the steps newest first
and moves the ones that fail aside (`<step>.unusable`), so a run resumes from the newest step
that restores. A save killed midway leaves only orbax's `<step>.orbax-checkpoint-tmp*`
folder: orbax lists no step for it, and the next `Checkpointer` on the folder removes it (in
the background, done before its first save).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, NamedTuple

import jax
import numpy as np
import orbax.checkpoint as ocp

from sailor_jax.errors import UserError, stops_held
from sailor_jax.scale import sharding

DIGEST_KEY = "state_sha256"
"""Meta key of the state's SHA-256 (`state_digest`); `restore` strips it again."""


class Restored(NamedTuple):
    """What `Checkpointer.restore_newest` restored, and which newer steps it skipped."""

    state: Any
    meta: dict
    step: int
    skipped: list[tuple[int, str]]
    """`(step, why it did not restore)` of each newer step, newest first (moved aside)."""


def state_digest(state: Any) -> str:
    """SHA-256 hex digest of every leaf's dtype, shape and bytes, in leaf order. Host-only.

    Gathers the leaves to the host (`sharding.to_host`; every process must call it in a
    multi-process run), so the digest does not depend on the sharding or device count.
    """
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(sharding.to_host(state)):
        x = np.ascontiguousarray(leaf)
        digest.update(f"{x.dtype.str}{x.shape}".encode())
        digest.update(x.tobytes())
    return digest.hexdigest()


def restore_failure(error: Exception) -> str:
    """One short line saying why a restore failed (TensorStore errors span many lines)."""
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    return text if len(text) <= 160 else text[:157] + "..."


class Checkpointer:
    """Save/restore `(state pytree, meta dict)` per step under `directory`. Host-only.

    Args:
      directory: checkpoint folder (created if missing).
      max_to_keep: how many most recent steps to keep (None keeps all); at least 2, so that
        an older step is there to fall back to when the newest does not restore.

    Raises:
      ValueError: `max_to_keep` is less than 2.
    """

    def __init__(self, directory: str | os.PathLike, max_to_keep: int | None = 3):
        if max_to_keep is not None and max_to_keep < 2:
            raise ValueError(f"max_to_keep must be >= 2 or None, got {max_to_keep}: with one "
                             "checkpoint a corrupt newest one leaves nothing to resume from")
        self.directory = os.path.abspath(os.fspath(directory))
        options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True,
                                               enable_async_checkpointing=False,
                                               cleanup_tmp_directories=True)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def latest_step(self) -> int | None:
        """Return the newest saved step, or None if there is none."""
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def save(self, step: int, state: Any, meta: dict) -> None:
        """Write step `step` and wait until it is on disk; the meta gets the state's SHA-256
        (`DIGEST_KEY`, see `state_digest`; `restore` strips it). Ctrl-C and SIGTERM wait
        until the step is written (`errors.stops_held`).

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
        meta = {**meta, DIGEST_KEY: state_digest(state)}
        with stops_held():  # a save cut short leaves orbax threads that print at shutdown
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
          ValueError: the restored state's SHA-256 differs from the one saved with it.
          Exception: whatever orbax raises for a damaged step (`JSONDecodeError`,
            `UnicodeDecodeError`, TensorStore `ValueError`, ...).
        """
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint found in {self.directory}")
        restored = self._manager.restore(step, args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state), meta=ocp.args.JsonRestore()))
        state, meta = restored["state"], dict(restored["meta"])
        saved = meta.pop(DIGEST_KEY, None)  # absent in checkpoints written before it existed
        if saved is not None and saved != state_digest(state):
            raise ValueError("the restored state's SHA-256 differs from the one saved with it "
                             "(damaged array data)")
        return state, meta

    def restore_newest(self, abstract_state: Any) -> Restored:
        """Restore the newest step that restores; move the newer, damaged ones aside.

        Steps are tried newest first (`restore`); each that fails is renamed to
        `<step>.unusable` (process 0, once one has restored) so that saving its step again
        works and orbax no longer lists it.

        Args:
          abstract_state: as `restore`.

        Returns:
          `Restored(state, meta, step, skipped)`.

        Raises:
          FileNotFoundError: no checkpoint in the directory.
          UserError: no step restores (one line naming the folder and each step's reason);
            nothing is moved.
        """
        steps = sorted(self._manager.all_steps(), reverse=True)
        if not steps:
            raise FileNotFoundError(f"no checkpoint found in {self.directory}")
        skipped: list[tuple[int, str]] = []
        for step in steps:
            try:
                state, meta = self.restore(abstract_state, step)
            except Exception as error:  # orbax raises many types for a damaged step
                skipped.append((step, restore_failure(error)))
                continue
            self._move_aside([s for s, _ in skipped])
            return Restored(state, meta, step, skipped)
        reasons = "; ".join(f"step {s}: {why}" for s, why in skipped)
        raise UserError(f"--resume: no checkpoint in {self.directory} restores ({reasons})",
                        "the run cannot continue; start it again with another --out")

    def _move_aside(self, steps: list[int]) -> None:
        """Rename the step folders `steps` to `<step>.unusable` (a free name) on process 0."""
        if steps and sharding.is_main_process():
            for step in steps:
                source = os.path.join(self.directory, str(step))
                target, n = source + ".unusable", 1
                while os.path.exists(target):
                    target, n = f"{source}.unusable{n}", n + 1
                os.rename(source, target)
        if steps:
            sharding.barrier("checkpoint: moved aside")
            self._manager.reload()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
