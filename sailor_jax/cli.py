"""What the `experiments/` CLIs share: presets through tyro, run names, the progress bar.

Host-only. Presets are tyro's own mechanism (`tyro.extras.overridable_config_cli`: one
subcommand per preset, every field overridable after it); `--preset NAME` is accepted as the
same thing, so `python experiments/sailor.py --preset cpu --sailor.iterations 3` and
`python experiments/sailor.py cpu --sailor.iterations 3` parse alike.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TypeVar

import tyro
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

T = TypeVar("T")


def parse_with_presets(presets: Mapping[str, tuple[str, T]], argv: Sequence[str],
                       description: str, default: str = "smoke") -> tuple[str, T]:
    """Parse `argv` over the defaults of one preset; return `(preset name, parsed config)`.

    Args:
      presets: preset name -> (one-line description, default config object).
      argv: command-line arguments: `[--preset NAME | NAME] [--field value ...]`.
      description: the `--help` text.
      default: the preset used when none is named.

    Raises:
      SystemExit: unknown preset or field, or a bad value (tyro prints the usage).
    """
    argv, name = list(argv), default
    for i, arg in enumerate(argv):
        if arg == "--preset" or arg.startswith("--preset="):
            value = arg.partition("=")[2] or (argv[i + 1] if i + 1 < len(argv) else "")
            del argv[i:i + (1 if "=" in arg else 2)]
            name = value
            break
    else:
        if argv and argv[0] in presets:
            name = argv.pop(0)
    choices = ",".join(sorted(presets))
    config = tyro.extras.overridable_config_cli(
        presets, args=[name, *argv],
        description=f"{description} (preset: {name}; choose with --preset {{{choices}}})")
    return name, config


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
