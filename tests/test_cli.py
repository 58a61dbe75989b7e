"""Tests for `sailor_jax.cli`: presets through tyro, --preset, run names, progress bar."""

from __future__ import annotations

import dataclasses
import io
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


@pytest.mark.parametrize(("argv", "line"), [
    (["--preset", "nope"], "error: --preset nope: no such preset (known: smoke, cpu)"),
    (["nope"], "error: preset nope: no such preset (known: smoke, cpu)"),
    (["--preset"], "error: --preset needs a name (known: smoke, cpu)"),
    (["--bogus", "1"], "error: unrecognized arguments --bogus 1 (see --help)"),
    (["--iteration", "1"], "error: unrecognized arguments --iteration 1 (did you mean "
                           "--iterations? see --help)"),
    (["--iterations", "many"], "error: --iterations many: expected INT (see --iterations in "
                               "--help)"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, line, capsys, monkeypatch):
    monkeypatch.delenv("SAILOR_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli.parse_with_presets(PRESETS, argv, "test")
    assert exit_.value.code == 2
    assert capsys.readouterr().err == line + "\n"


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Checked:
    low: int = 0
    high: int = 1

    def __post_init__(self):
        if not self.low < self.high:
            raise ValueError(f"_Checked.low must be below high={self.high}, got {self.low}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Outer:
    inner: _Checked = _Checked()
    name: str = "x"


def test_parse_args_names_the_flags_of_a_refused_value(capsys, monkeypatch):
    monkeypatch.delenv("SAILOR_DEBUG", raising=False)
    assert cli.parse_args(_Outer, ["--inner.high", "5"]) == _Outer(inner=_Checked(high=5))
    with pytest.raises(SystemExit) as exit_:
        cli.parse_args(_Outer, ["--inner.low", "3"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("error: --inner.low must be below --inner.high=1, got 3 "
                                       "(see --inner.low in --help)\n")


def test_default_run_name_is_path_safe():
    name = cli.default_run_name("smoke", "llm:Qwen/Qwen2.5-1.5B", 3)
    assert re.fullmatch(r"runs/smoke__llm-Qwen-Qwen2\.5-1\.5B__3__\d{10}", name), name


def test_progress_bar_shows_the_unit():
    console = Console(record=True, width=120, force_terminal=True)
    with cli.progress_bar(console, "segments") as progress:
        task = progress.add_task("train", total=4)
        progress.update(task, advance=3)
    assert "3/4 segments" in console.export_text()


def test_progress_to_a_file_is_a_line_per_step_with_its_rate():
    """Without a terminal rich would draw the bar only at the end: each step prints a line
    instead, as it happens."""
    out = io.StringIO()
    console = Console(file=out, width=120)
    assert not console.is_terminal
    with cli.progress_bar(console, "iterations") as progress:
        task = progress.add_task("theta0.sailor", total=3)
        progress.advance(task)
        assert out.getvalue().startswith("theta0.sailor: 1/3 iterations, ")  # already there
        progress.update(task, advance=1)
        progress.update(task, description="theta0.sailor")  # nothing new: no line
        progress.update(task, description="theta0.sailor  warm-up 1/8 updates")  # a note
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "theta0.sailor: 1/3 iterations", "theta0.sailor: 2/3 iterations",
        "theta0.sailor  warm-up 1/8 updates: 2/3 iterations"]
    assert all(" min" in line for line in lines)  # minutes elapsed (the rate once it has one)
