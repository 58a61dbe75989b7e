"""User mistakes as one exception type, and the CLIs' one way of reporting them. Host-only.

A `UserError` is raised for input the user can fix (a flag, a path, a config value, a run
folder); its message is `<what> (<how to fix>)`. The CLIs run their `main` through
`report_user_errors`, which prints `error: <message>` on one line and exits with status 2
(the status argparse and tyro use for usage errors). Every other exception is a bug and
keeps its traceback. `--debug` on the command line, or `SAILOR_DEBUG=1` in the environment,
shows the traceback of user errors too. Ctrl-C (a `KeyboardInterrupt`) is one line too, with
exit status 130 (128 + SIGINT, what a shell reports); inside a run it is an `Interrupted`
that says how to continue. SIGTERM (`kill`, a scheduler's stop) is handled alike: while
`report_user_errors` runs, it raises `Terminated` (a `KeyboardInterrupt`) in the main thread,
so the run stops as on Ctrl-C and says `terminated; continue with --resume ...`, exit status
143 (128 + SIGTERM).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

DEBUG_FLAG = "--debug"
DEBUG_ENV = "SAILOR_DEBUG"
DEBUG_HELP = (f"Add {DEBUG_FLAG} (or set {DEBUG_ENV}=1) to see the Python traceback of an "
              "'error:' line.")


class UserError(ValueError):
    """A mistake in the user's input: what is wrong, and how to fix it.

    A `ValueError`, so code that validates with `ValueError` keeps working.

    Args:
      what: what is wrong, naming the flag, path or value.
      fix: how to fix it (may be empty).
    """

    def __init__(self, what: str, fix: str = "") -> None:
        self.what, self.fix = what, fix
        super().__init__(f"{what} ({fix})" if fix else what)


class MissingFileError(UserError, FileNotFoundError):
    """A file or folder the user named does not exist or holds no run.

    Both a `UserError` (one line from the CLIs) and a `FileNotFoundError`.
    """


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a run that can continue; the message says how
    (`interrupted; continue with --resume ...`, or `terminated; ...`), and the `Terminated`
    it was raised from, if any, gives the exit status. A `KeyboardInterrupt`, so code that
    cleans up on one still does."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: raised in the main thread by the handler `report_user_errors`
    installs, so that a run stops (and keeps its last checkpoint) as on Ctrl-C."""


INTERRUPT_STATUS = 130
"""Exit status after Ctrl-C: 128 + SIGINT, as a shell reports a process killed by it."""
TERMINATE_STATUS = 128 + signal.SIGTERM
"""Exit status after SIGTERM (143), as a shell reports a process killed by it."""


def stop_word(error: BaseException | None) -> str:
    """`terminated` if `error` is (or was raised, at any depth, from) a `Terminated`, else
    `interrupted`."""
    while error is not None:
        if isinstance(error, Terminated):
            return "terminated"
        error = error.__cause__
    return "interrupted"


def _terminate(signum: int, frame: Any) -> None:
    """The SIGTERM handler: raise `Terminated`; a second SIGTERM kills at once."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated("terminated")


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM until the block ends, then deliver the first one that came.

    For a step that must not stop half-way (writing a checkpoint: orbax's background threads
    of a save cut short print tracebacks at interpreter shutdown). After the block the
    handlers that were there come back and the held signal is raised again
    (`signal.raise_signal`), so it acts exactly as it would have: `Terminated` under
    `report_user_errors`, `KeyboardInterrupt` for Ctrl-C. A second signal inside the block
    does not wait: a second Ctrl-C raises `KeyboardInterrupt` there, a second SIGTERM ends
    the process (its default action). Outside the main thread (where Python cannot set
    handlers) the block runs unguarded.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        if not held:
            held.append(signum)
        elif signum == signal.SIGTERM:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
        else:
            raise KeyboardInterrupt

    previous = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    if held:
        signal.raise_signal(held[0])


def debug_requested(argv: Sequence[str]) -> bool:
    """True if `argv` holds `--debug` or `SAILOR_DEBUG` is set to something other than 0."""
    return DEBUG_FLAG in argv or os.environ.get(DEBUG_ENV, "0") not in ("", "0")


def report_user_errors(main: Callable[[list[str]], T], argv: Sequence[str] | None = None) -> T:
    """Run `main(argv without --debug)`; turn a `UserError` into one line and exit 2.

    Args:
      main: the CLI's entry point, taking the argument list.
      argv: command-line arguments (default `sys.argv[1:]`).

    Returns:
      What `main` returns.

    While `main` runs in the main thread, SIGTERM raises `Terminated` there (the previous
    handler comes back afterwards).

    Raises:
      SystemExit: status 2 after printing `error: <message>` to stderr, for a `UserError`;
        status 130 after `error: interrupted...` for Ctrl-C (`KeyboardInterrupt`), 143 after
        `error: terminated...` for SIGTERM (an `Interrupted` names how to continue). All
        are re-raised with their traceback instead under `--debug` / `SAILOR_DEBUG=1`.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        return main([a for a in argv if a != DEBUG_FLAG])
    except UserError as error:
        if debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt as error:
        if debug:
            raise
        word = stop_word(error)
        print(f"error: {error if isinstance(error, Interrupted) else word}", file=sys.stderr)
        raise SystemExit(TERMINATE_STATUS if word == "terminated" else INTERRUPT_STATUS
                         ) from None
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
