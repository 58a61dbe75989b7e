"""The import rules: folders sit on the floors of their imports, no import circle, device
code stays host-free.

A folder's floor is the longest chain of imports below it (`floors`): a folder that imports no
other is on floor 0, every other one floor above the highest folder it imports. The floors
drawn in docs/architecture.md's module map (`documented_floors`) must be these, so an import
that changes a floor is one the picture shows; and a module imports its own folder and folders
on lower floors only (`upward_imports`). Every import statement counts: module-level, deferred
inside a function and `if TYPE_CHECKING:` alike. The foundation (types, errors, logging and
the package's __init__) counts as one folder.

`sailor_lab/` (the measurement harness beside the benchmarks and experiments) sits above the
whole package: it may import any of `sailor_jax`, and no `sailor_jax` module imports it.
"""

from __future__ import annotations

import ast
import functools
import json
import pathlib
import re
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "sailor_jax"
HARNESS = PACKAGE.parent / "sailor_lab"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
FOUNDATION = ("types", "errors", "logging")
TOP_LEVEL_FILES = {"__init__.py", "types.py", "errors.py", "logging.py", "cli.py"}
DEVICE_MODULES = ("game.env", "game.features", "game.reward", "game.expert", "agents.networks",
                  "agents.optimizer", "agents.policy", "agents.ppo", "agents.rollout",
                  "agents.evaluation", "agents.collectives", "agents.seeds")
HOST_ONLY = ("transformers", "torch", "skopt", "orbax", "tensorboardX", "sklearn", "cma")


def imported_modules(source: str, modules: set[str], package: str = "sailor_jax") -> set[str]:
    """The `package` modules a source imports anywhere in it (deferred and type-only too).

    `from package.pkg import name` counts as `package.pkg.name` when that is a module of
    `modules`, else as `package.pkg`.
    """
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == package}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == package:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in modules else node.module)
    return found


def folder(module: str) -> str:
    """The folder of a dotted `sailor_jax` module name: `run`, `cli`, ... or `foundation`
    (the package itself and its top-level types, errors and logging)."""
    parts = module.split(".")
    return "foundation" if len(parts) == 1 or parts[1] in FOUNDATION else parts[1]


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """`{folder: floor}` of a module import graph: 0 for a folder that imports no other, else
    one above the highest folder it imports. Raises RecursionError on a circle of folders."""
    imports: dict[str, set[str]] = {}
    for m, deps in graph.items():
        imports.setdefault(folder(m), set()).update(folder(d) for d in deps
                                                     if folder(d) != folder(m))

    @functools.cache
    def floor(f: str) -> int:
        return 1 + max(map(floor, imports[f])) if imports.get(f) else 0

    return {f: floor(f) for f in imports}


@functools.cache
def documented_floors() -> dict[str, int]:
    """`{folder: floor}` as docs/architecture.md's module map draws them (`  2  judges/ ...`)."""
    picture = re.search(r"```\n(.*?)```", ARCHITECTURE.read_text(encoding="utf-8"), re.S)
    return {m.group(2).removesuffix("/").removesuffix(".py"): int(m.group(1))
            for m in re.finditer(r"^  (\d)  (\S+)", picture.group(1), re.M)}


def layer(module: str) -> int:
    """The documented floor of a dotted `sailor_jax` module name."""
    return documented_floors()[folder(module)]


def package_graph(root: pathlib.Path = PACKAGE) -> dict[str, set[str]]:
    """`{module: imported sailor_jax modules}` for every module under `root`."""
    files = {".".join(("sailor_jax", *p.relative_to(root).with_suffix("").parts))
             .removesuffix(".__init__"): p for p in root.rglob("*.py")}
    return {m: imported_modules(p.read_text(), set(files)) - {m} for m, p in files.items()}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of another folder on the same or a higher documented floor, as
    'a (floor) -> b (floor)'."""
    return sorted(f"{m} ({layer(m)}) -> {d} ({layer(d)})" for m, deps in graph.items()
                  for d in deps if folder(d) != folder(m) and layer(d) >= layer(m))


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import circles (each as the modules along it), found by depth-first search.

    A package counts as its `__init__` (importing a submodule runs it first), so
    `judges.llm -> judges` is an edge only where the code imports the package itself.
    """
    cycles, state = [], {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if state.get(d) == "open":
                cycles.append(path[path.index(d):] + [d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_folders_import_downwards_only():
    assert upward_imports(package_graph()) == []


def test_the_module_maps_floors_are_the_import_graphs():
    """docs/architecture.md draws each folder on the floor its imports put it on."""
    assert documented_floors() == floors(package_graph())
    assert floors({"sailor_jax.run.a": {"sailor_jax.judges.b"},
                   "sailor_jax.judges.b": {"sailor_jax.game.c"}, "sailor_jax.game.c": set()}) \
        == {"run": 2, "judges": 1, "game": 0}


def test_no_import_cycle_deferred_or_type_only_included():
    assert import_cycles(package_graph()) == []


def test_top_level_holds_only_the_foundation_and_cli():
    assert {p.name for p in PACKAGE.glob("*.py")} == TOP_LEVEL_FILES
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} \
        == {"game", "config", "agents", "scale", "judges", "alignment", "run"}


@pytest.mark.parametrize("source, bad", [
    ("from sailor_jax.run import loop\n", "sailor_jax.run.loop"),
    ("def f():\n    from sailor_jax.judges.llm import LLMRanker\n", "sailor_jax.judges.llm"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sailor_jax.alignment\n",
     "sailor_jax.alignment"),
])
def test_checker_flags_an_upward_import(source, bad, tmp_path):
    """The rule can fail: an agents module importing run, judges (its own floor) or
    alignment is caught."""
    graph = package_graph()
    graph["sailor_jax.agents.scratch"] = imported_modules(source, set(graph))
    assert upward_imports(graph) == [f"sailor_jax.agents.scratch (2) -> {bad} ({layer(bad)})"]


def test_checker_finds_a_deferred_cycle():
    graph = {"sailor_jax.run.a": {"sailor_jax.run.b"}, "sailor_jax.run.b": {"sailor_jax.run.a"}}
    assert import_cycles(graph) == [["sailor_jax.run.a", "sailor_jax.run.b", "sailor_jax.run.a"]]


def test_package_never_imports_the_harness():
    assert {str(p.relative_to(PACKAGE)): sorted(found) for p in PACKAGE.rglob("*.py")
            if (found := imported_modules(p.read_text(), set(), "sailor_lab"))} == {}


@pytest.mark.parametrize("source, bad", [
    ("import sailor_lab.judge_eval\n", "sailor_lab.judge_eval"),
    ("def f():\n    from sailor_lab import render\n", "sailor_lab.render"),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sailor_lab.recovery import x\n",
     "sailor_lab.recovery"),
])
def test_checker_flags_a_harness_import(source, bad):
    """The rule can fail: a package module importing the harness is caught, deferred too."""
    assert imported_modules(source, {"sailor_lab.render"}, "sailor_lab") == {bad}


def test_harness_has_no_import_cycle():
    """The harness's modules import each other (and `sailor_jax`) without a circle."""
    files = {"sailor_lab." + p.stem: p for p in HARNESS.glob("*.py") if p.stem != "__init__"}
    graph = {m: imported_modules(p.read_text(), set(files), "sailor_lab") - {m}
             for m, p in files.items()}
    assert graph["sailor_lab.headroom"] >= {"sailor_lab.theta_search"}
    assert import_cycles(graph) == []


def test_device_modules_do_not_import_host_libraries():
    code = (
        "import json, sys\n"
        + "".join(f"import sailor_jax.{m}\n" for m in DEVICE_MODULES)
        + f"print(json.dumps(sorted(m for m in {HOST_ONLY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_judges_package_imports_without_torch():
    code = "import sys, sailor_jax.judges, sailor_jax.run.loop; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
