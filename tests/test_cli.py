"""Tests for `sailor_jax.cli`: presets through tyro, --preset, run names, progress bar."""

from __future__ import annotations

import dataclasses
import re

import pytest
from rich.console import Console

from sailor_jax import cli


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Args:
    iterations: int = 1
    name: str = "x"


PRESETS = {"smoke": ("tiny", _Args(iterations=2)), "cpu": ("bigger", _Args(iterations=6))}


@pytest.mark.parametrize("argv", [["--preset", "cpu"], ["--preset=cpu"], ["cpu"]])
def test_every_preset_spelling_gives_the_same_config(argv):
    name, args = cli.parse_with_presets(PRESETS, [*argv, "--name", "y"], "test")
    assert name == "cpu" and args == _Args(iterations=6, name="y")


def test_default_preset_and_overrides():
    assert cli.parse_with_presets(PRESETS, [], "test") == ("smoke", _Args(iterations=2))
    name, args = cli.parse_with_presets(PRESETS, ["--iterations", "9"], "test")
    assert name == "smoke" and args.iterations == 9


@pytest.mark.parametrize("argv", [["--preset", "nope"], ["--preset"], ["--bogus", "1"],
                                  ["--iterations", "many"]])
def test_bad_arguments_exit_with_usage(argv, capsys):
    with pytest.raises(SystemExit):
        cli.parse_with_presets(PRESETS, argv, "test")


def test_default_run_name_is_path_safe():
    name = cli.default_run_name("smoke", "llm:Qwen/Qwen2.5-1.5B", 3)
    assert re.fullmatch(r"runs/smoke__llm-Qwen-Qwen2\.5-1\.5B__3__\d{10}", name), name


def test_progress_bar_shows_the_unit():
    console = Console(record=True, width=120)
    with cli.progress_bar(console, "segments") as progress:
        task = progress.add_task("train", total=4)
        progress.update(task, advance=3)
    assert "3/4 segments" in console.export_text()
