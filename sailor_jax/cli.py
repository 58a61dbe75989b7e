"""What the `experiments/` CLIs share: presets through tyro, run names, console, progress bar.

Host-only. `ScaleArgs` are the device and multi-process flags every CLI shares (`--devices`,
`--distributed`, ...; `start` applies them). Presets are tyro's own mechanism
(`tyro.extras.overridable_config_cli`: one subcommand per preset, every field overridable
after it); `--preset NAME` is accepted as the same thing, so
`python experiments/sailor.py --preset cpu --sailor.iterations 3` and
`python experiments/sailor.py cpu --sailor.iterations 3` parse alike.

Every CLI parses through `parse_args` or `parse_with_presets`, which say what tyro rejects in
the user's words, on one `error:` line with exit status 2: a config value its dataclass
refuses names the flag as typed and the flags of the fields it is bound by
(`error: --sailor.window must be in [0, --sailor.max-len=300], got -5 (...)`,
`config.flags`), an unknown flag suggests the nearest known one. `--debug` (or
`SAILOR_DEBUG=1`) shows tyro's own report instead. This uses tyro's parse-error hook
(`tyro._errors.on_parse_error`, private: the project pins tyro 1.0.x; an event it does not
know keeps tyro's report).
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import jax
import tyro
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from tyro import _errors as tyro_errors

from sailor_jax.config import flags
from sailor_jax.errors import DEBUG_HELP, debug_requested
from sailor_jax.scale import sharding

T = TypeVar("T")
PIPE_WIDTH = 160
"""Columns of the CLI console when stdout is not a terminal."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScaleArgs:
    """Devices and processes (flags without a prefix: `--devices 4`, `--distributed`)."""

    devices: int | None = None
    """Devices the vmapped seed rows are sharded over (default: all devices JAX sees; on a
    CPU, more than one needs XLA_FLAGS=--xla_force_host_platform_device_count=N)."""
    distributed: bool = False
    """Join a multi-process program (`jax.distributed.initialize`) before anything else:
    process 0 writes logs and results and runs the judge, the others follow its theta."""
    coordinator_address: str | None = None
    """With --distributed: HOST:PORT of process 0 (None: auto-detected, e.g. under Slurm)."""
    num_processes: int | None = None
    """With --distributed: the number of processes (None: auto-detected)."""
    process_id: int | None = None
    """With --distributed: this process's index, 0..num_processes-1 (None: auto-detected)."""


Scale = Annotated[ScaleArgs, tyro.conf.OmitArgPrefixes]
"""The `ScaleArgs` field type of a CLI's Args: its flags carry no `--scale.` prefix."""


def join_processes(argv: Sequence[str]) -> None:
    """With `--distributed` in `argv`, join the multi-process program now.

    `jax.distributed.initialize` must run before JAX starts its backend, and importing pgx
    (so `sailor_jax.game.env` and everything above it) already starts it: the CLIs call this
    first, before those imports, and parse the `ScaleArgs` flags out of `argv` alone.

    Raises:
      UserError: the distributed arguments are incomplete (see
        `sharding.initialize_distributed`).
    """
    if "--distributed" not in argv:
        return
    scale, _ = parse_args(ScaleArgs, argv, return_unknown_args=True)
    if not jax.distributed.is_initialized():
        sharding.initialize_distributed(scale.coordinator_address, scale.num_processes,
                                        scale.process_id)


def start(scale: ScaleArgs) -> Console:
    """Check `--distributed` took effect and return the CLI's console: quiet (writing
    nowhere) on processes other than 0.

    Raises:
      RuntimeError: `--distributed` was given but `join_processes` did not run first.
      UserError: `--devices` is more than JAX sees (`sharding.resolve_devices`), checked
        here, before the run writes its folder.
    """
    if scale.distributed and not jax.distributed.is_initialized():
        raise RuntimeError("--distributed: call cli.join_processes(sys.argv) before "
                           "importing pgx or anything that starts JAX")
    sharding.resolve_devices(scale.devices)
    return make_console(quiet=not sharding.is_main_process())


def make_console(quiet: bool = False, stderr: bool = False) -> Console:
    """A `rich` console as wide as the terminal, or `PIPE_WIDTH` columns when the output goes
    to a file or pipe (where rich's default of 80 wraps the summary tables); `COLUMNS` in the
    environment still wins. `stderr=True` writes to stderr: what a CLI prints for people
    under `--json`, whose stdout holds JSON lines only."""
    console = Console(quiet=quiet, stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH
    return console


def parse_with_presets(presets: Mapping[str, tuple[str, T]], argv: Sequence[str],
                       description: str, default: str = "smoke") -> tuple[str, T]:
    """Parse `argv` over the defaults of one preset; return `(preset name, parsed config)`.

    Args:
      presets: preset name -> (one-line description, default config object).
      argv: command-line arguments: `[--preset NAME | NAME] [--field value ...]`.
      description: what the CLI is, the first words of its `--help` text (which goes on
        with the preset, every preset, and `--debug`: `preset_help`).
      default: the preset used when none is named.

    Raises:
      SystemExit: status 2 after one `error:` line (`user_errors`): an unknown preset or
        flag, or a bad value.
    """
    argv, name, given = list(argv), default, "--preset "
    for i, arg in enumerate(argv):
        if arg == "--preset" or arg.startswith("--preset="):
            value = arg.partition("=")[2] or (argv[i + 1] if i + 1 < len(argv) else "")
            value = "" if value.startswith("-") else value  # `--preset --out x`: no name
            del argv[i:i + (2 if value and "=" not in arg else 1)]
            name = value
            break
    else:
        if argv and (argv[0] in presets or not argv[0].startswith("-")):
            name, given = argv.pop(0), "preset "
    if name not in presets:
        _usage_error(f"{given}{name}: no such preset" if name else "--preset needs a name",
                     f"known: {', '.join(presets)}")
    root = type(presets[name][1])
    with user_errors(root, argv):
        config = tyro.extras.overridable_config_cli(
            {key: (preset_help(description, key, presets, default), value)
             for key, (_, value) in presets.items()},
            args=[name, *argv], description=description)
    return name, config


def parse_args(f: Callable[..., T], argv: Sequence[str], **kwargs: Any) -> T:
    """`tyro.cli(f, args=argv, **kwargs)` with what tyro rejects said on one line.

    Args:
      f: the CLI's `Args` dataclass (or any class tyro parses).
      argv: command-line arguments.

    Raises:
      SystemExit: status 2 after one `error:` line (`user_errors`).
    """
    with user_errors(f, argv):
        return tyro.cli(f, args=list(argv), **kwargs)


@contextlib.contextmanager
def user_errors(root: type, argv: Sequence[str]) -> Iterator[None]:
    """While tyro parses `argv` into the dataclass `root`, report what it rejects as one
    `error: <what> (<what to do>)` line on stderr and exit with status 2.

    A value a config dataclass refuses in `__post_init__` is said with the flags of the
    fields its message names (`config.flags.in_flags`; the config is found from tyro's
    field path), or after the flags the user typed for that config when it names none; a
    value that does not convert, a choice not offered, a missing value or argument names
    the flag; an unknown flag suggests the nearest one of `root`. Any other failure, and
    every failure under `--debug` / `SAILOR_DEBUG=1`, keeps tyro's own report.

    Raises:
      SystemExit: status 2, from inside tyro's parse.
    """
    if debug_requested(sys.argv):
        yield
        return

    def hook(event: tyro_errors.ParseErrorEvent) -> None:
        text = _describe(event, root, list(argv))
        if text is not None:
            _usage_error(*text)

    with tyro_errors.on_parse_error(hook):
        yield


def _usage_error(what: str, fix: str) -> None:
    """Print `error: <what> (<fix>)` to stderr and exit with status 2 (argparse's)."""
    print(f"error: {what} ({fix})", file=sys.stderr)
    raise SystemExit(2)


def _flag(argument: Any) -> str | None:
    """The flag (or positional name) of one of tyro's argument definitions, or None."""
    try:
        return str(argument.lowered.name_or_flags[0])
    except (AttributeError, IndexError, TypeError):
        return None


def _describe(event: tyro_errors.ParseErrorEvent, root: type, argv: list[str]
              ) -> tuple[str, str] | None:
    """`(what, fix)` of a tyro parse failure, or None to keep tyro's report."""
    if isinstance(event, tyro_errors.InstantiationFailure):
        if event.argument is None:
            return _config_error(event.message, root, argv, sys.exc_info()[1])
        flag = _flag(event.argument)
        if flag is None:
            return None
        metavar = getattr(event.argument.lowered, "metavar", None) or "another value"
        return (f"{flag} {' '.join(_values(flag, argv))}: expected {metavar}",
                f"see {flag} in --help")
    if isinstance(event, tyro_errors.UnrecognizedArgs):
        near = difflib.get_close_matches(event.tokens[0].partition("=")[0],
                                         list(flags.all_flags(root)), n=1)
        return (f"unrecognized argument{'s' * (len(event.tokens) > 1)} "
                f"{' '.join(event.tokens)}", (f"did you mean {near[0]}? " if near else "")
                + "see --help")
    flag = _flag(getattr(event, "argument", None))
    if isinstance(event, tyro_errors.InvalidChoice) and flag:
        return f"{flag} {event.value}: not a choice", f"choose {', '.join(event.choices)}"
    if isinstance(event, tyro_errors.BadValue) and flag:
        return f"{flag}: a bad or missing value", f"see {flag} in --help"
    if isinstance(event, tyro_errors.MissingArgs):
        names = [_flag(a.arg) or "?" for a in event.missing_arguments]
        return f"missing {', '.join(names)}", "see --help"
    return None


def _values(flag: str, argv: list[str]) -> list[str]:
    """The values the user gave `flag` in `argv` (after it, up to the next flag)."""
    for i, arg in enumerate(argv):
        if arg == flag:
            rest = argv[i + 1:]
            return rest[:next((j for j, a in enumerate(rest) if a.startswith("--")), len(rest))]
        if arg.startswith(flag + "="):
            return [arg.partition("=")[2]]
    return []


def _config_error(message: str, root: type, argv: list[str], error: BaseException | None
                  ) -> tuple[str, str]:
    """`(what, fix)` of a config dataclass's `ValueError` `message`; tyro's error carries
    the field path of the config that raised it (`arg`, e.g. `__tyro-dummy-inner__.sailor`
    under presets; a root dataclass's own error has none)."""
    path = getattr(error, "arg", "")
    path = [p.replace("-", "_") for p in path.split(".") if p and not p.startswith("__tyro")
            ] if isinstance(path, str) else []
    cls, prefix = flags.config_at(root, path)
    if cls is None:
        return message, "see --help"
    text, named = flags.in_flags(message, cls, prefix)
    if not named and prefix:
        group = flags.flag_name(prefix)
        named = [a.partition("=")[0] for a in argv if a.startswith(group + ".")]
        text = f"{' '.join(named) or group + '.*'}: {text}"
    typed = [f for f in named if any(a.partition("=")[0] == f for a in argv)] or named
    return text, f"see {typed[0]} in --help" if typed else "see --help"


def preset_help(description: str, name: str, presets: Mapping[str, tuple[str, object]],
                default: str = "smoke") -> str:
    """The `--help` text of preset `name`: what it is, every preset, `--debug`."""
    width = max(map(len, presets))
    lines = [f"{description}: the options of preset {name} ({presets[name][0]}).", "",
             f"Presets (--preset {{{','.join(presets)}}}, or the name as the first argument; "
             f"default {default}):"]
    lines += [f"  {key:<{width}}  {text}" for key, (text, _) in presets.items()]
    lines += ["", f"Every option below overrides the preset's value. {DEBUG_HELP}"]
    return "\n".join(lines)


def default_run_name(preset: str, judge: str, seed: int, root: str = "runs") -> str:
    """`{root}/{preset}__{judge}__{seed}__{unix time}` (CleanRL's run-name scheme)."""
    judge = judge.replace("/", "-").replace(":", "-")
    return f"{root}/{preset}__{judge}__{seed}__{int(time.time())}"


def progress_bar(console: Console, unit: str, remaining: bool = False) -> Progress:
    """The `rich` progress bar of the CLIs: description, bar, `done/total unit`, elapsed."""
    columns = [TextColumn("{task.description}"), BarColumn(),
               TextColumn(f"{{task.completed}}/{{task.total}} {unit}"), TimeElapsedColumn()]
    if remaining:
        columns.append(TimeRemainingColumn())
    return Progress(*columns, console=console)
