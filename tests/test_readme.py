"""The commands the README, the pages of docs/ and the scripts' docstrings show must parse.

Every `python experiments/...` or `python benchmarks/...` command of README.md and
docs/*.md (fenced and indented code blocks, with `\\` continuations joined, env
assignments and `$ ` prompts allowed, and inline code spans) and of the module docstrings
of `experiments/*.py`, `benchmarks/*.py` and the scripts with a command line in
`benchmarks/gpu/` and the folders of `benchmarks/results/` goes through its script's own parser
in-process: `parse(argv)` where the script has one (sailor.py, compare.py), else
`tyro.cli(Args, args=argv)` as its `__main__` block does. A renamed flag then fails here
instead of leaving the docs wrong. Appending `--help` would not catch it: tyro prints the
help and exits 0 however many unknown flags come before `--help`.

Also: every `--flag` a script's docstring names is in that script's `--help`, and every one
the prose of the README and of a docs/ page names is in some script's (or is pip's, ruff's,
sbatch's, XLA's, vLLM's: `OTHER_FLAGS`); `--help` exits 0 for every script (in-process, plus
one real subprocess for the scripts with presets, whose help must name `--preset {...}` and
`--debug`); every `--recipe` those commands run is a recipe of today; `.ci/run` runs the
README's install command word for word; the CLI console does not wrap tables at 80 columns in
a file; no file of the project refers to documents outside it; every relative markdown link
of the README, docs/ and `benchmarks/results.md` resolves to a file of the project.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import glob
import importlib
import io
import itertools
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable

import pytest
import tyro
from support import ROOT, load_script

README = os.path.join(ROOT, "README.md")
DOCS = [README, *sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))]
"""The user's documents, whose commands must parse today: the README and the pages of docs/."""
RESULTS_INDEX = os.path.join(ROOT, "benchmarks", "results.md")
"""The index of the raw results under `benchmarks/results/` (its links are checked)."""
CHANGELOG = os.path.join(ROOT, "CHANGELOG.md")
"""What changed, by capability (its links are checked)."""


def has_command_line(path: str) -> bool:
    """Whether the script at `path` runs as a program (`if __name__ == "__main__":`)."""
    with open(path, encoding="utf-8") as f:
        return 'if __name__ == "__main__":' in f.read()


SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "experiments", "*.py"))
                 + glob.glob(os.path.join(ROOT, "benchmarks", "*.py"))
                 + [p for pattern in (("gpu", "*.py"), ("results", "**", "*.py"))
                    for p in glob.glob(os.path.join(ROOT, "benchmarks", *pattern), recursive=True)
                    if has_command_line(p)])
"""The scripts whose commands the documents show: the tools (with the GPU check's
`benchmarks/gpu/`), and the studies' own scripts in their results folders."""

COMMAND = re.compile(r"((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*python\s+"
                     r"(?:experiments|benchmarks)/[\w./]+\.py\b.*)", re.DOTALL)
"""A command: optional `NAME=value` env assignments, `python`, a script, its arguments."""

PLACEHOLDERS: frozenset[str] = frozenset()
"""Commands shown with placeholders (`...`) for arguments: the only ones not parsed (none)."""


def extract_commands(text: str) -> list[str]:
    """Return every command `text` (Markdown or a docstring) shows, in order.

    Lines of fenced code blocks and lines that start with a command (indented blocks,
    docstring examples) are read with `\\` continuations joined and a leading `$ ` or other
    words before `python` (`srun`) dropped; then inline code spans (which may wrap) that
    start with a command. Shell comments stay in the command (`shlex` drops them).
    """
    commands, rest, fenced = [], [], False
    lines = iter(text.splitlines())
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            rest.append("")
            continue
        starts = re.match(r"\s*(\$\s+)?" + COMMAND.pattern, line)
        if fenced or starts:
            while line.rstrip().endswith("\\"):
                line = line.rstrip()[:-1] + " " + next(lines, "").strip()
            found = COMMAND.search(line)
            if found:
                commands.append(" ".join(found.group(1).split()))
            rest.append("")
        else:
            rest.append(line)
    for span in re.findall(r"`([^`]+)`", "\n".join(rest)):
        if COMMAND.match(span.strip()):
            commands.append(" ".join(span.split()))
    return commands


def split_command(command: str) -> tuple[str, list[str]]:
    """`(script path relative to the repo, argv)` of a command; env assignments dropped."""
    words = shlex.split(command, comments=True)
    while "=" in words[0]:
        words.pop(0)
    assert words[0] == "python", command
    return words[1], [w for w in words[2:] if w != "--debug"]


def docstring_commands(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read()), clean=False) or ""
    return extract_commands(doc)


def readme_commands(path: str = README) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return extract_commands(f.read())


def parser(relpath: str) -> Callable[[list[str]], object]:
    """The script's argument parser: its `parse(argv)`, else `tyro.cli(Args, args=argv)`."""
    module = load_script(relpath, cached=True)
    if hasattr(module, "parse"):
        return module.parse
    return lambda argv: tyro.cli(module.Args, args=argv)


def _relpath(path: str) -> str:
    return os.path.relpath(path, ROOT).replace(os.sep, "/")


ALL_COMMANDS = sorted({(where, c) for where, cmds in
                       [(_relpath(p), readme_commands(p)) for p in DOCS]
                       + [(_relpath(p), docstring_commands(p)) for p in SCRIPTS]
                       for c in cmds if c not in PLACEHOLDERS})


def test_extractor_reads_blocks_continuations_and_spans():
    text = "\n".join([
        "Run `python experiments/a.py --x 1`, or wrapped `python experiments/b.py",
        "--y 2`; not `experiments/c.py --z` nor `python -m pytest`.",
        "```bash",
        "XLA_FLAGS=--xla_force_host_platform_device_count=4 python benchmarks/d.py \\",
        "    --devices 4   # a comment",
        "srun python experiments/e.py --distributed",
        "```",
        "```",
        "$ python experiments/f.py --preset smoke",
        "┃ output ┃",
        "```",
        "    python experiments/g.py --json",
    ])
    assert extract_commands(text) == [
        "XLA_FLAGS=--xla_force_host_platform_device_count=4 python benchmarks/d.py "
        "--devices 4 # a comment",
        "python experiments/e.py --distributed",
        "python experiments/f.py --preset smoke",
        "python experiments/g.py --json",
        "python experiments/a.py --x 1",
        "python experiments/b.py --y 2",
    ]
    assert split_command(extract_commands(text)[0]) == ("benchmarks/d.py", ["--devices", "4"])


def _rename_first_flag(command: str) -> str | None:
    """`command` with its first `--flag` renamed `--renamed-flag`; None if it has no flag."""
    renamed = re.sub(r"(?<=\s)--(?=[A-Za-z])", "--renamed-", command, count=1)
    return None if renamed == command else renamed


def test_a_renamed_flag_in_the_readme_fails(capsys):
    """A README with a flag renamed (`--ranker.llm.model` for `--sailor.ranker.llm.model`) must
    fail, and so must every README command with its first flag renamed."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert "--sailor.ranker.llm.model Qwen/" in text
    broken = [c for c in extract_commands(text.replace("--sailor.ranker.llm.model Qwen/",
                                                       "--ranker.llm.model Qwen/"))
              if "--ranker.llm.model" in c and "--sailor.ranker" not in c]
    assert broken
    broken += [r for c in set(readme_commands()) - PLACEHOLDERS
               if (r := _rename_first_flag(c)) is not None]
    assert len(broken) >= len(set(readme_commands())) >= 8  # the README's every command
    for command in broken:
        script, argv = split_command(command)
        with pytest.raises(SystemExit) as error:
            parser(script)(argv)
        assert error.value.code != 0, command
    capsys.readouterr()


FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w.-]*")
"""A `--flag` in prose, help text or a command (`--base.*` gives `--base.`)."""

OTHER_FLAGS = frozenset({
    "--index-url", "--no-deps", "--dry-run", "--no-compile",  # pip
    "--exclude",  # ruff
    "--nodes", "--ntasks-per-node", "--gpus-per-node", "--time",  # sbatch
    "--xla_force_host_platform_device_count", "--xla_backend_optimization_level",  # XLA_FLAGS
    "--xla_llvm_disable_expensive_passes", "--xla_cpu_parallel_codegen_split_count",
    "--xla_cpu_use_fusion_emitters", "--xla_cpu_use_thunk_runtime", "--xla_disable_hlo_passes",
    "--xla_cpu_multi_thread_eigen", "--xla_cpu_opt_preset", "--xla_cpu_emitter_verification_level",
    "--xla_cpu_copy_insertion_use_region_analysis",
    "--port", "--gpu-memory-utilization", "--max-logprobs",  # vllm serve, the test server
    "--host", "--n_ctx", "--logits_all", "--model_alias",  # llama-cpp-python's server
    "--alias",  # llama.cpp's llama-server
    "--allow-requantize", "--modelfile",  # llama-quantize, ollama show
    "--no-binary", "--build", "--target",  # pip download, cmake
    "--durations", "--collect-only", "--dist",  # pytest, pytest-xdist
    "--subprocesses", "--native",  # py-spy record
})
"""Flags the README and docstrings name that belong to other programs."""


@functools.cache
def script_flags(relpath: str) -> frozenset[str]:
    """Every flag the script's `--help` lists (plus `--preset` and `--debug` with presets)."""
    printed = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "400"  # no wrapping inside the help
    try:
        with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
            parser(relpath)(["--help"])
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    flags = {f.rstrip(".-") for f in FLAG.findall(printed.getvalue())}
    presets = hasattr(load_script(relpath, cached=True), "PRESETS")
    return frozenset(flags | ({"--preset", "--debug"} if presets else set()))


MODULE_CLIS = ("sailor_jax.judges.model_parts", "sailor_lab.openai_server")
"""The package's own `python -m` commands (tyro over their `main`), whose flags docs may name."""


@functools.cache
def module_flags(module: str) -> frozenset[str]:
    """Every flag the `python -m module` command's `--help` lists."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
        tyro.cli(importlib.import_module(module).main, args=["--help"])
    return frozenset(f.rstrip(".-") for f in FLAG.findall(printed.getvalue()))


def unknown_flags(text: str, known: frozenset[str]) -> list[str]:
    """The flags `text` names that are neither in `known` nor prefixes of known ones."""
    named = {f.rstrip("-") for f in FLAG.findall(text)}
    return sorted(f for f in named - OTHER_FLAGS
                  if f.rstrip(".") not in known
                  and not (f.endswith(".") and any(k.startswith(f) for k in known)))


@pytest.mark.parametrize("script", [_relpath(p) for p in SCRIPTS])
def test_docstring_names_only_the_scripts_flags(script: str):
    with open(os.path.join(ROOT, script), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    assert unknown_flags(doc, script_flags(script)) == []


@pytest.mark.parametrize("doc", [_relpath(p) for p in DOCS])
def test_docs_name_only_existing_flags(doc: str):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        text = f.read()
    known = frozenset().union(*(script_flags(_relpath(p)) for p in SCRIPTS),
                              *(module_flags(m) for m in MODULE_CLIS))
    assert unknown_flags(text, known) == []
    assert unknown_flags("`--sailor.*` and `--sailor.nope`", known) == ["--sailor.nope"]


def test_readme_and_docstrings_show_commands():
    scripts = {split_command(c)[0] for _, c in ALL_COMMANDS}
    assert "experiments/sailor.py" in scripts and len(ALL_COMMANDS) >= 30
    assert scripts <= {_relpath(p) for p in SCRIPTS}, scripts - {_relpath(p) for p in SCRIPTS}
    assert PLACEHOLDERS <= set(readme_commands())  # drop a placeholder the README lost


@pytest.mark.parametrize(("where", "command"), ALL_COMMANDS)
def test_command_parses(where: str, command: str):
    script, argv = split_command(command)
    stderr, helps = io.StringIO(), "--help" in argv or "-h" in argv
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            parser(script)(argv)
    except SystemExit as error:
        if not (helps and error.code == 0):
            pytest.fail(f"{where}: `{command}` does not parse (exit {error.code}):\n"
                        f"{stderr.getvalue()}")
    else:
        assert not helps, f"{where}: `{command}` should print the help and exit"


def test_commands_name_only_existing_recipes():
    """A `--recipe` a document or docstring runs is a recipe of today (`config.recipes`, the
    harness's DQN recipes)."""
    from sailor_jax.config import recipes
    from sailor_lab.dqn import DQN_RECIPES

    known = {**recipes.RECIPES, **DQN_RECIPES}
    unknown = []
    for where, command in ALL_COMMANDS:
        script, argv = split_command(command)
        if script.startswith("benchmarks/") and "--recipe" in argv:
            names = itertools.takewhile(lambda w: not w.startswith("-"),
                                        argv[argv.index("--recipe") + 1:])
            unknown += [(where, name) for name in names if name not in known]
    assert unknown == []


@pytest.mark.parametrize("script", [_relpath(p) for p in SCRIPTS])
def test_help_exits_zero(script: str, capsys):
    with pytest.raises(SystemExit) as error:
        parser(script)(["--help"])
    assert error.value.code == 0
    printed = capsys.readouterr().out
    assert "usage:" in printed
    if hasattr(load_script(script, cached=True), "PRESETS"):
        assert "--preset" in printed and "--debug" in printed


@pytest.mark.parametrize("script", ["experiments/sailor.py", "experiments/compare.py"])
def test_help_in_a_real_process(script: str):
    """`python SCRIPT --help` as a user types it: exit 0, the preset optional in the usage
    line, one line per preset, `--debug` named, and at 100 columns no line wider and no more
    than 137 lines (the main job's 83 flags, and tyro's frame around each of its 11 groups of
    options: 4 lines a group)."""
    done = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"usage: {script} [PRESET] ")
    for name in load_script(script, cached=True).PRESETS:
        assert sum(line.startswith(f"  {name} ") for line in lines) == 1, name
    assert "--debug" in done.stdout and "-H, --help-verbose" in done.stdout
    assert len(lines) <= 137 and max(map(len, lines)) <= 100, (len(lines), max(map(len, lines)))


def test_ci_installs_as_the_readme_says():
    """`.ci/run` runs the README's install commands, word for word and in order, the
    environment first."""
    with open(README, encoding="utf-8") as f:
        install = re.search(r"## Install.*?```bash\n(.*?)\n```", f.read(), re.DOTALL).group(1)
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read().splitlines()
    lines = install.splitlines()
    assert "--index-url https://download.pytorch.org/whl/cpu" in lines[-1]
    assert lines[0] == "python3 -m venv .venv && source .venv/bin/activate"
    assert all(line in ci for line in lines), [line for line in lines if line not in ci]
    assert [ci.index(line) for line in lines] == sorted(ci.index(line) for line in lines)


def test_console_is_wide_when_output_goes_to_a_file(monkeypatch):
    """The README shows the smoke tables as drawn into a file: `PIPE_WIDTH` wide, not 80."""
    from sailor_jax import cli

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert cli.make_console().width == cli.PIPE_WIDTH
    monkeypatch.setenv("COLUMNS", "100")
    assert cli.make_console().width == 100


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
"""A markdown link's target: `[text](target)`."""


def relative_links(path: str) -> list[str]:
    """The targets of the markdown links of `path` that point into the project (no scheme,
    no in-page `#anchor`), anchors dropped."""
    with open(path, encoding="utf-8") as f:
        targets = LINK.findall(f.read())
    return [t.split("#")[0] for t in targets
            if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


@pytest.mark.parametrize("doc", [_relpath(p) for p in [*DOCS, RESULTS_INDEX, CHANGELOG]])
def test_relative_links_resolve(doc: str):
    folder = os.path.dirname(os.path.join(ROOT, doc))
    missing = [t for t in relative_links(os.path.join(ROOT, doc))
               if not os.path.exists(os.path.normpath(os.path.join(folder, t)))]
    assert missing == [], f"{doc} links to missing files: {missing}"


def test_relative_links_are_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("[a](docs/x.md#y) [b](https://example.org) [c](#here) ![d](f.png)\n")
    assert relative_links(str(page)) == ["docs/x.md", "f.png"]


OUTSIDE = ("../" + "shared", "DESIGN" + ".md", "STYLE" + ".md", "FIELD" + "_NOTES")
"""Documents outside the project that a clone does not have (spelt apart: this file is read)."""


def test_no_file_refers_to_documents_outside_the_project():
    """The README and docs/architecture.md sent contributors to a folder beside the
    project, which a clone does not have; what a contributor needs is in docs/contributing.md."""
    found = []
    for folder, dirs, names in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("runs", "__pycache__")
                   and not d.endswith(".egg-info")]
        for name in names:
            if name.endswith((".py", ".md", ".toml", ".txt", ".cfg", ".sh")):
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                    text = f.read()
                found += [f"{os.path.relpath(os.path.join(folder, name), ROOT)}: {needle}"
                          for needle in OUTSIDE if needle in text]
    assert found == []
    assert os.path.exists(os.path.join(ROOT, "docs", "contributing.md"))


PAGE_LINK = re.compile(r"\[`?([\w./-]+\.md)`?\]\(([^)\s]+)\)")
"""A markdown link whose label is a page's file name: `[repair.md](repair.md#anchor)`."""


def mislabelled_links(path: str) -> list[str]:
    """The links of `path` whose label names one page and whose target is another (in-page
    `#anchor` targets and web addresses left out)."""
    with open(path, encoding="utf-8") as f:
        found = PAGE_LINK.findall(f.read())
    return [f"[{label}]({target})" for label, target in found
            if not target.startswith("#") and not re.match(r"[a-z][a-z0-9+.-]*:", target)
            and os.path.basename(label) != os.path.basename(target.split("#")[0])]


@pytest.mark.parametrize("doc", [_relpath(p) for p in [*DOCS, RESULTS_INDEX, CHANGELOG]])
def test_a_link_labelled_with_a_page_goes_to_that_page(doc: str):
    assert mislabelled_links(os.path.join(ROOT, doc)) == []


def test_mislabelled_links_are_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("[repair.md](agent.md#which) [agent.md](agent.md#x) "
                    "[`docs/agent.md`](docs/agent.md) [a page](other.md) [x.md](#here)\n")
    assert mislabelled_links(str(page)) == ["[repair.md](agent.md#which)"]


def package_modules() -> list[str]:
    """Every module of `sailor_jax` and `sailor_lab` by its file's stem (no `__init__`)."""
    paths = [*glob.glob(os.path.join(ROOT, "sailor_jax", "**", "*.py"), recursive=True),
             *glob.glob(os.path.join(ROOT, "sailor_lab", "*.py"))]
    return sorted({os.path.splitext(os.path.basename(p))[0] for p in paths} - {"__init__"})


def test_the_module_map_lists_every_module():
    """docs/architecture.md names every module of both packages: in its layer picture (the
    code block of folders and their modules) or in the first column of its tables (`| `name` |`,
    or several names in one cell)."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    pictures = re.findall(r"```\n(.*?)```", text, re.S)
    cells = [line.split("|")[1] for line in text.splitlines() if line.startswith("| `")]
    listed = {word for block in pictures for word in re.findall(r"[A-Za-z_]\w*", block)}
    listed |= {name for cell in cells for name in re.findall(r"`([\w.]+)`", cell)}
    assert [m for m in package_modules() if m not in listed] == []


def test_verbose_help_shows_every_description_whole():
    """`compare.py -H` at 100 columns: no description cut (`[...]`), no line wider."""
    done = subprocess.run([sys.executable, "experiments/compare.py", "-H"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if "[...]" in line]
    assert max(map(len, lines)) <= 100
    assert "sailor_reliability_random_judge" in done.stdout


def test_the_smoke_output_on_the_running_page_has_todays_format():
    """docs/running.md's smoke block (written by `docs/smoke_output.py`) has what today's
    `sailor.py` prints: its header, the tables' titles and rows, the outcomes' line, the
    wall-clock phases and, last before the results' path, the paired verdict line, in that
    order."""
    from sailor_jax.game.features import FEATURE_NAMES
    from sailor_jax.run.results import PHASES

    with open(os.path.join(ROOT, "docs", "running.md"), encoding="utf-8") as f:
        block = re.search(r"```\n\$ python experiments/sailor.py --preset smoke --out "
                          r"/tmp/readme_smoke\n(.*?)```", f.read(), re.S).group(1)
    sailor = load_script("experiments/sailor.py", cached=True)
    expected = [r"^SAILOR preset=smoke start=pays_for_dying ranker=\{'kind': 'expert'.* "
                r"out=/tmp/readme_smoke$",
                r"^SAILOR .*: 2/2 iterations, ", r"theta history \(seed mean\), preference pairs",
                *[rf"^│ {name} +│" for name in FEATURE_NAMES],
                r"^│ \|D_neg\| ", r"^│ \|D_pos\| ", r"^│ update ",
                "^" + re.escape(sailor.columns_legend(8)[:60]),
                r"^theta updates: .*\(" + re.escape(sailor.OUTCOMES_HELP[:40]),
                r"final agents, 32,768 env steps per seed \(greedy policy, native game score\)",
                r"^│ +SAILOR │", r"^│ pays_for_dying kept fixed │",
                r"wall-clock \(s\)", r"^┃ " + r" ┃ ".join(PHASES) + r" ┃",
                r"^SAILOR against pays_for_dying kept fixed, paired by seed: ",
                r"^results: /tmp/readme_smoke/results.json$"]
    lines, at = block.splitlines(), 0
    for pattern in expected:
        found = next((k for k in range(at, len(lines)) if re.search(pattern, lines[k])), None)
        assert found is not None, f"no line matching {pattern!r} after line {at}"
        at = found + 1
