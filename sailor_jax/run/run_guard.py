"""One run per folder, and run-time failures a user can act on as one line. Host-only.

`claim_out_dir` wraps a whole run: it checks the folder (`run_dir.check_out_dir`, before
anything is written), takes the folder's exclusive lock (`filelock`, a `flock` on
`<out>/.lock` that the operating system drops when the process dies), checks again under
the lock, writes `config.json` and holds the lock until the run returns. A second run on the
same folder gets one `error:` line naming the holder's process id and changes nothing. While
the run runs, Ctrl-C becomes `errors.Interrupted` (`interrupted; continue with --resume`;
SIGTERM, as `errors.Terminated`, says `terminated; ...`) and a full disk or a folder that
became unwritable a `UserError` naming the path and the free space; the last good checkpoint
stays. Every other exception passes unchanged.

In a multi-process run process 0 alone takes the lock (it alone writes the folder's files)
and tells the others whether it got it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
from collections.abc import Iterator
from typing import Any

import filelock
import numpy as np

from sailor_jax.errors import Interrupted, UserError, stop_word
from sailor_jax.run import run_dir
from sailor_jax.scale import sharding

LOCK_NAME = ".lock"
"""The lock file inside a run folder (holds the holder's process id while locked)."""
FULL = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
        errno.EROFS: "read-only file system"}
"""errno -> reason of a write that failed because of the disk, wherever the path."""
DENIED = (errno.EACCES, errno.EPERM)
"""errnos of a write refused inside the run folder (it became unwritable)."""
FULL_TEXT = ("No space left on device", "Disk quota exceeded", "Read-only file system")
"""The same, as text inside errors that wrap them (TensorStore's, under orbax)."""

def _holder(lock_path: str) -> str:
    try:
        with open(lock_path, encoding="utf-8") as f:
            pid = f.read().strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "another process"

@contextlib.contextmanager
def lock_out_dir(out_dir: str) -> Iterator[None]:
    """Hold the exclusive lock of `out_dir` (created if missing); process 0 only.

    Raises:
      UserError: another process holds it (its process id named); nothing is changed. Or
        the folder cannot be created.
    """
    lock, holder = None, "see process 0"
    if sharding.is_main_process():
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as error:  # checked before (run_dir.check_writable); changed since
            raise UserError(f"--out {out_dir}: cannot create it ({error.strerror or error})",
                            "choose a folder you can write to") from None
        path = os.path.join(out_dir, LOCK_NAME)
        lock = filelock.FileLock(path, timeout=0, on_acquired=_write_pid)
        try:
            lock.acquire()
        except filelock.Timeout:
            lock = None
            holder = _holder(path)
    got = sharding.broadcast_from_main(np.asarray([lock is not None], np.int32))
    if not got[0]:
        raise UserError(f"--out {out_dir}: another run ({holder}) is using this folder",
                        "wait for it to end, or choose another --out")
    try:
        yield
    finally:
        if lock is not None:
            lock.release()

def _write_pid(fd: int) -> None:
    os.write(fd, str(os.getpid()).encode())

def _free(path: str) -> str:
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        return f"{shutil.disk_usage(path or '.').free / 2**20:,.1f} MiB free"
    except OSError:
        return "free space unknown"

def write_failure(error: BaseException, out_dir: str) -> UserError | None:
    """The one-line `UserError` for `error` if it (or an error it was raised from) is a full
    disk or a write refused inside `out_dir`; None for anything else."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        path, reason = out_dir, None
        if isinstance(error, OSError) and error.errno in FULL:
            path, reason = error.filename or out_dir, FULL[error.errno]
        elif (isinstance(error, OSError) and error.errno in DENIED and error.filename
              and os.path.abspath(str(error.filename)).startswith(os.path.abspath(out_dir))):
            path, reason = error.filename, "permission denied"
        else:
            reason = next((t.lower() for t in FULL_TEXT if t in str(error)), None)
        if reason:
            steps = run_dir.saved_steps(out_dir)
            if steps:
                return UserError(f"cannot write {path}: {reason} ({_free(str(path))}; the run "
                                 f"keeps its last good checkpoint of segment {steps[-1]})",
                                 "free space or make the folder writable, then continue with "
                                 "--resume")
            return UserError(f"cannot write {path}: {reason} ({_free(str(path))}; the run "
                             f"ended before its first checkpoint)",
                             f"free space, then {run_dir.restart_advice(out_dir)}")
        error = error.__cause__ or error.__context__
    return None

class _QuietFullDisk(logging.Filter):
    """Drops the log records (orbax's background writers log a traceback per thread) of a
    write that failed because the disk is full or read-only: `write_failure` says it once."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage() + (str(record.exc_info[1]) if record.exc_info else "")
        return not any(t in text for t in FULL_TEXT)

@contextlib.contextmanager
def quiet_full_disk() -> Iterator[None]:
    """Inside the block, orbax's logs of a full or read-only disk are not printed."""
    quiet, logger = _QuietFullDisk(), logging.getLogger("absl")
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)

@contextlib.contextmanager
def claim_out_dir(out_dir: str, config: Any, resume: bool) -> Iterator[dict]:
    """Own `out_dir` for one run: check, lock, write `config.json`; yield the config JSON.

    Args:
      out_dir: the run folder.
      config: the run config dataclass (`run_dir.config_json`).
      resume: the run continues the one in `out_dir`.

    A folder that has a lock file is locked first, so that a run started while another runs
    there is told so (not that the folder holds a run); any other folder is checked before
    the lock file is created in it.

    Raises:
      UserError: `run_dir.check_out_dir` refuses the folder (before anything is written);
        another process holds its lock; inside the block, a write failed because the disk
        is full or the folder became unwritable.
      Interrupted: Ctrl-C or SIGTERM (`errors.Terminated`) inside the block.
    """
    if not os.path.exists(os.path.join(out_dir, LOCK_NAME)):
        run_dir.check_out_dir(out_dir, config, resume)  # before the lock file is written
    with lock_out_dir(out_dir), quiet_full_disk():
        written = run_dir.prepare_out_dir(out_dir, config, resume)  # checked again, locked
        try:
            yield written
        except KeyboardInterrupt as error:  # Ctrl-C, or SIGTERM (errors.Terminated)
            if not run_dir.run_started(out_dir):
                raise Interrupted(f"{stop_word(error)} before the first checkpoint; "
                                  f"{run_dir.restart_advice(out_dir)}") from error
            raise Interrupted(f"{stop_word(error)}; continue with --resume (--out {out_dir})"
                              ) from error
        except Exception as error:
            failure = write_failure(error, out_dir)
            if failure is None:
                raise
            raise failure from error
