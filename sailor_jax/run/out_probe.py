"""Can `--out` be created and written? Found by doing it, before a run does any work.
Host-only.

`check_writable` creates the folder (with its missing parents) and a probe file, then removes
both: permission bits are not asked (`os.access` passes as root on a read-only mount or under
/proc). Runs started side by side into sibling folders share their missing parents. Every
script's `--out` check (`run_dir.check_out_dir`, `loop.run`, `train_fixed`, `compare.py`,
`plot.py`, the theta search; `watch.py` for the folder of the file it writes) is this one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile

from sailor_jax.errors import UserError
from sailor_jax.scale import sharding


def check_writable(out_dir: str, shown: str | None = None) -> None:
    """Raise `UserError` unless `out_dir` can be created and written, found by doing it.

    The folder (with its missing parents) is created and a probe file written in it, then
    both are removed again: permission bits are not asked (`os.access` passes as root on a
    read-only mount or under /proc), so this works as the run's own writes will. Process 0
    only (it alone writes the folder; two processes probing one shared folder would race).
    `shown` is the `--out` value the error line names when it is not `out_dir` itself (a
    file to be written in `out_dir`); the line then names the folder too.

    Raises:
      UserError: a part of the path is a file; a folder cannot be created (missing parent
        that cannot be made, a read-only file system, a name too long: the line names the
        folder, the reason and the longest name allowed) or no file can be written in it.
    """
    if not sharding.is_main_process():
        return
    path = os.path.abspath(out_dir)
    shown = shown or out_dir
    for attempt in range(PROBE_ATTEMPTS):
        existing = path
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        try:  # one stat: a folder a run beside this one removes since is not taken for a file
            if not stat.S_ISDIR(os.stat(existing).st_mode):
                raise UserError(f"--out {shown}: {existing} is a file, not a folder",
                                "choose another --out")
            _create_and_probe(existing, path)
            return
        except FileNotFoundError as error:  # a run beside this one removed a shared parent
            if attempt + 1 == PROBE_ATTEMPTS:  # or the parent cannot hold folders (/proc)
                raise _unwritable(shown, out_dir, path, existing, error) from None
        except OSError as error:
            raise _unwritable(shown, out_dir, path, existing, error) from None


PROBE_ATTEMPTS = 20
"""`check_writable` tries this often: runs started side by side into sibling folders create
and remove their shared missing parents at the same time."""


def _create_and_probe(existing: str, path: str) -> None:
    """Create the folders below `existing` down to `path`, write and remove a probe file in
    `path`, remove the folders this call created (a folder another process created at the
    same time is used as it is; one still in use stays).

    Raises:
      OSError: what creating or writing raised.
    """
    created: list[str] = []
    try:
        for folder in _missing_folders(existing, path):
            try:
                os.mkdir(folder)
                created.append(folder)
            except FileExistsError:  # a folder removed since raises FileNotFoundError: retried
                if not stat.S_ISDIR(os.stat(folder).st_mode):
                    raise
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-"):
            pass
    finally:
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _missing_folders(existing: str, path: str) -> list[str]:
    """The folders from below `existing` down to `path`, outermost first."""
    missing = []
    while path != existing:
        missing.append(path)
        path = os.path.dirname(path)
    return missing[::-1]


def _unwritable(shown: str, out_dir: str, path: str, existing: str, error: OSError
                ) -> UserError:
    """The `UserError` of a failed `check_writable`: what could not be done, and why."""
    target = str(error.filename or path)
    it = "it" if shown == out_dir else path
    what = (f"cannot write a file in {it}" if os.path.isdir(path)
            else f"cannot create {it if target == path else target}")
    fix = "choose a folder you can write to"
    if error.errno == errno.ENAMETOOLONG:
        try:
            longest = os.pathconf(existing, "PC_NAME_MAX")
        except (OSError, ValueError):
            longest = 255
        fix = f"use folder names of at most {longest} bytes"
    return UserError(f"--out {shown}: {what} ({error.strerror or error})", fix)
