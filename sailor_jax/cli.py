"""What the `experiments/` CLIs share: presets through tyro, run names, console, progress bar.

Host-only. `ScaleArgs` are the device and multi-process flags every CLI shares (`--devices`,
`--distributed`, ...; `start` applies them). A preset is a default config that tyro parses
the flags over (`tyro.cli(..., default=...)`), named first or by `--preset NAME`, so
`python experiments/sailor.py --preset cpu --sailor.iterations 3` and
`python experiments/sailor.py cpu --sailor.iterations 3` parse alike. `--help` is tyro's
compact help (one line per flag; `-H` adds what each means) after one line per preset.

Every CLI parses through `parse_args` or `parse_with_presets`, which say what tyro rejects in
the user's words, on one `error:` line with exit status 2: a config value its dataclass
refuses names the flag as typed and the flags of the fields it is bound by
(`error: --sailor.window must be in [0, --sailor.max-len=300], got -5 (...)`), an unknown
flag suggests the nearest known one (`config.flags.user_errors`). `--debug` (or
`SAILOR_DEBUG=1`) shows tyro's own report instead. A CLI that resumes by running the same
command again says so on Ctrl-C or SIGTERM (`resumed_by_rerunning`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, TypeVar

import jax
import tyro
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from sailor_jax.config import SailorConfig
from sailor_jax.config.flags import usage_error, user_errors
from sailor_jax.errors import DEBUG_FLAG, Interrupted, stop_word
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
    process 0 writes logs and results and runs the judge, the others follow its theta. Under
    Slurm or Open MPI the processes find each other; elsewhere set JAX_COORDINATOR_ADDRESS,
    JAX_NUM_PROCESSES and JAX_PROCESS_ID for each (`sharding.initialize_distributed`)."""


Scale = Annotated[ScaleArgs, tyro.conf.OmitArgPrefixes]
"""The `ScaleArgs` field type of a CLI's Args: its flags carry no `--scale.` prefix."""


def join_processes(argv: Sequence[str]) -> None:
    """With `--distributed` in `argv`, join the multi-process program now.

    `jax.distributed.initialize` must run before JAX starts its backend, and importing pgx
    (so `sailor_jax.game.env` and everything above it) already starts it: the CLIs call this
    first, before those imports.

    Raises:
      UserError: neither a launcher nor the environment says how to join (see
        `sharding.initialize_distributed`).
    """
    if "--distributed" in argv and not jax.distributed.is_initialized():
        sharding.initialize_distributed()


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
                       description: str, default: str = "smoke",
                       listings: Mapping[str, Mapping[str, str]] = {}) -> tuple[str, T]:
    """Parse `argv` over the defaults of one preset; return `(preset name, parsed config)`.

    Args:
      presets: preset name -> (one-line description, default config object).
      argv: command-line arguments: `[--preset NAME | NAME] [--field value ...]`.
      description: what the CLI is, the first words of its `--help` text (which goes on
        with the preset, every preset, and `--debug`: `preset_help`).
      default: the preset used when none is named.
      listings: more one-line-per-name lists for `--help` (`preset_help`), by title.

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
        usage_error(f"{given}{name}: no such preset" if name else "--preset needs a name",
                     f"known: {', '.join(presets)}")
    root = type(presets[name][1])
    script = sys.argv[0] if sys.argv and sys.argv[0] else "prog"
    with user_errors(root, argv):
        config = tyro.cli(root, default=presets[name][1], args=argv, compact_help=True,
                          prog=f"{script} [PRESET]",
                          description=preset_help(
                              description, name, presets, default, listings=listings,
                              verbose="-H" in argv or "--help-verbose" in argv))
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


def preset_sizes(cfg: SailorConfig) -> str:
    """What a SAILOR preset trains, for its `--help` line: trunk, envs, seeds (+ baseline rows),
    theta updates (the warm-up's before training, then one per iteration) and env steps per
    seed."""
    hidden = "x".join(map(str, cfg.ppo.network.hidden_sizes))
    rows = f"{cfg.num_seeds} + {cfg.num_seeds} baseline" if cfg.baseline else f"{cfg.num_seeds}"
    updates = cfg.warmup_updates + cfg.iterations
    return (f"{hidden} trunk, {cfg.ppo.num_envs} envs x {rows} seeds, {updates} updates of theta "
            f"({cfg.warmup_updates} before training), "
            f"{cfg.iterations * cfg.ppo.steps_per_segment:,} env steps per seed")


def preset_line(cfg: SailorConfig) -> str:
    """A preset's budget in a few words: env steps per seed, seeds, judge."""
    rows = f"{cfg.num_seeds} + {cfg.num_seeds}" if cfg.baseline else f"{cfg.num_seeds}"
    return (f"{cfg.iterations * cfg.ppo.steps_per_segment:,} env steps x {rows} seeds, "
            f"{cfg.ranker.kind} judge")


def preset_help(description: str, name: str, presets: Mapping[str, tuple[str, object]],
                default: str = "smoke", verbose: bool = False,
                listings: Mapping[str, Mapping[str, str]] = {}) -> str:
    """The `--help` text of preset `name`: what the CLI is, the presets, any `listings`
    (a title, then one line per name; with `verbose`, each whole), the `-H` and `--debug`
    hints, fitted to the terminal (`COLUMNS`). A preset's text is its one-line summary, then
    (after a newline) what `-H` (`verbose`) shows instead: its sizes and why."""
    width = max(40, shutil.get_terminal_size().columns - 2)
    lines = textwrap.wrap(f"{description} (preset {name}). PRESET (or --preset NAME; default "
                          f"{default}):", width)
    texts = {key: text.partition("\n")[::2] for key, (text, _) in presets.items()}
    lines += one_line_each({key: details if verbose and details else summary
                            for key, (summary, details) in texts.items()}, width, wrap=verbose)
    for title, items in listings.items():
        lines += ["", *textwrap.wrap(title, width), *one_line_each(items, width, wrap=verbose)]
    return "\n".join([*lines, "", f"Options override the preset's values; -H says what each "
                                   f"means, {DEBUG_FLAG} shows an error's traceback."])


def one_line_each(items: Mapping[str, str], width: int, wrap: bool = False) -> list[str]:
    """`  name  text` per item, names aligned, each text cut to one line of `width` columns
    (`[...]` where cut), or wrapped under its name with `wrap`."""
    key_width = max(map(len, items), default=0)
    lines = []
    for key, text in items.items():
        head = f"  {key:<{key_width}}  "
        if wrap:
            lines += textwrap.wrap(text, width, initial_indent=head,
                                   subsequent_indent=" " * len(head))
        else:
            lines.append(head + textwrap.shorten(text, max(20, width - len(head))))
    return lines


@contextlib.contextmanager
def resumed_by_rerunning(out: str) -> Iterator[None]:
    """For a CLI that resumes by running the same command again (no `--resume` flag):
    Ctrl-C or SIGTERM inside says so, instead of a run folder's `continue with --resume`.

    Raises:
      Interrupted: `interrupted; run the same command again to continue (--out OUT)` (or
        `terminated; ...` after SIGTERM, `errors.stop_word`).
    """
    try:
        yield
    except KeyboardInterrupt as error:
        raise Interrupted(f"{stop_word(error)}; run the same command again to continue "
                          f"(--out {out})") from error


def default_run_name(preset: str, judge: str, seed: int, root: str = "runs") -> str:
    """`{root}/{preset}__{judge}__{seed}__{unix time}` (CleanRL's run-name scheme)."""
    judge = judge.replace("/", "-").replace(":", "-")
    return f"{root}/{preset}__{judge}__{seed}__{int(time.time())}"


class _LineProgress(Progress):
    """Progress without a terminal (output sent to a file or pipe), where rich draws its bar
    only at the end: one line per step a task makes, with its rate and time left, and one per
    new description between steps (a run's warm-up updates), so that the log shows the run is
    alive."""

    unit = ""

    def update(self, task_id, **kwargs) -> None:
        task = self._tasks[task_id]
        before = task.completed, task.description
        super().update(task_id, **kwargs)
        self._say(task_id, before)

    def advance(self, task_id, advance: float = 1) -> None:
        task = self._tasks[task_id]
        before = task.completed, task.description
        super().advance(task_id, advance)
        self._say(task_id, before)

    def _say(self, task_id, before: tuple[float, str]) -> None:
        task = self._tasks[task_id]
        if (task.completed, task.description) == before:
            return
        speed, left = task.speed, task.time_remaining
        rate = f", {speed * 60:.2f} {self.unit}/min" if speed else ""
        eta = f", about {left / 60:.0f} min left" if left is not None else ""
        self.console.print(f"{task.description}: {task.completed:g}/{task.total:g} {self.unit}, "
                           f"{(task.elapsed or 0.0) / 60:.1f} min{rate}{eta}", highlight=False)


def progress_bar(console: Console, unit: str, remaining: bool = False) -> Progress:
    """The `rich` progress bar of the CLIs: description, bar, `done/total unit`, elapsed. With
    output to a file or pipe, a line per step instead (`done/total unit`, minutes, rate and
    time left)."""
    if not console.is_terminal:
        line = _LineProgress(console=console, disable=True)
        line.unit = unit
        return line
    columns = [TextColumn("{task.description}"), BarColumn(),
               TextColumn(f"{{task.completed}}/{{task.total}} {unit}"), TimeElapsedColumn()]
    if remaining:
        columns.append(TimeRemainingColumn())
    return Progress(*columns, console=console)
