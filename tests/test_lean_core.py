"""The lean core stays lean: round bounds on the package's size, its config fields and the
CLIs' flags, and no history (issue or round numbers, dates) in the code.

Each bound is a round number with headroom, not today's count: it catches a change that grows
the core by a large step (a second copy of a subsystem, a flag per setting), and says nothing
of the small ones a feature needs. Code lines are lines with a token of code: docstrings,
comments and blank lines do not count, so documentation costs nothing.
"""

from __future__ import annotations

import ast
import contextlib
import glob
import io
import os
import re
import tokenize

import pytest
from support import ROOT, load_script

CONFIG_FIELDS_CAP = 120
SAILOR_FLAGS_CAP = 100
COMPARE_FLAGS_CAP = 70
PACKAGE_CODE_CAP = 7_000
"""The package's code lines (`code_lines`), at most."""
HISTORY = re.compile(r"\b[Ii]ssue[ -]?\d+|\b[Rr]ound \d+|\b20\d\d-\d\d-\d\d")
"""An issue or round number, or a date: history, which belongs in CHANGELOG.md and git."""
FLAG = re.compile(r"^[│ ]*\s(--[a-z0-9][\w.-]*)", re.M)


def config_fields() -> dict[str, int]:
    """Fields per config dataclass of `sailor_jax/config/`, by `ast`."""
    counts = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "sailor_jax", "config", "*.py"))):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    "dataclass" in ast.unparse(d) for d in node.decorator_list):
                counts[node.name] = sum(isinstance(s, ast.AnnAssign) for s in node.body)
    return counts


def help_flags(script: str, monkeypatch) -> set[str]:
    monkeypatch.setenv("COLUMNS", "80")  # one column: a flag opens its line
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit):
        load_script(script).parse(["--help"])
    return set(FLAG.findall(printed.getvalue()))


def test_config_fields_are_capped():
    counts = config_fields()
    assert "SailorConfig" in counts and counts["SailorConfig"] > 10
    assert sum(counts.values()) <= CONFIG_FIELDS_CAP, counts


def test_the_main_jobs_help_is_capped(monkeypatch):
    flags = help_flags("experiments/sailor.py", monkeypatch)
    assert "--sailor.iterations" in flags and "--resume" in flags
    assert len(flags) <= SAILOR_FLAGS_CAP, sorted(flags)


def test_the_comparisons_help_is_capped_and_runs_the_recommended_sailor(monkeypatch):
    flags = help_flags("experiments/compare.py", monkeypatch)
    assert {"--arms", "--starts", "--judge"} <= flags
    assert len(flags) <= COMPARE_FLAGS_CAP, sorted(flags)
    compare = load_script("experiments/compare.py")
    assert "sailor" in compare.Args().arms


def code_lines(source: str) -> int:
    """Lines of `source` that hold a token of code: not blank, not only a comment, and not part
    of a docstring (a string standing alone as a statement: a module's, class's or function's
    docstring, or one under an attribute)."""
    documentation = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)  # a statement list (a lambda's is an expression)
        for statement in body if isinstance(body, list) else ():
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                    and isinstance(statement.value.value, str):
                documentation.update(range(statement.lineno, statement.end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    code = {line for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type not in skip for line in range(token.start[0], token.end[0] + 1)}
    return len(code - documentation)


def test_code_lines_count_code_only():
    source = ('"""Module\n\ndocstring."""\n\nimport os  # why\n\n\ndef f(x):\n'
              '    """Doc."""\n    # a comment\n    y = """a string\n    of code"""\n'
              '    return (x,\n            y)\n\n\nA = 1\n"""What A is."""\n')
    assert code_lines(source) == 1 + 1 + 2 + 2 + 1  # import, def, y = ..., return, A


def test_the_package_is_capped():
    lines = 0
    for path in glob.glob(os.path.join(ROOT, "sailor_jax", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            lines += code_lines(f.read())
    assert 1000 < lines <= PACKAGE_CODE_CAP


def test_no_history_in_the_code():
    """No issue or round number or date in a `.py` file outside `tests/` (stored raw results
    under `benchmarks/results/` are data)."""
    found = []
    for folder in ("sailor_jax", "sailor_lab", "experiments", "benchmarks"):
        for path in glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True):
            if os.sep + "results" + os.sep in path:
                continue
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if HISTORY.search(line):
                        found.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert found == []
    assert HISTORY.search("since 2026-11-28 (issue 49)") and not HISTORY.search("theta0 1.0")


MEASURED = re.compile(r"\d%|\[[-+]\d[\d,.]*, [-+]\d[\d,.]*\]|\[\d*\.\d+, \d*\.\d+\]"
                      r"|\b[AH]\d00\b|steps/s\b")
"""What a measured result looks like in prose: a percentage, a signed interval, a named GPU,
a throughput. Bounds such as `[0, 1]` and defaults are not measured results."""


def test_no_measured_result_in_the_packages_docstrings():
    """A docstring under `sailor_jax/` says what a thing is, its shapes, units, errors and
    source; measured results age, so they live in docs/ and the results folders."""
    found = []
    for path in glob.glob(os.path.join(ROOT, "sailor_jax", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str) and MEASURED.search(node.value.value):
                found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}: "
                             f"{MEASURED.search(node.value.value).group(0)}")
    assert found == []
    assert [bool(MEASURED.search(t)) for t in ("78.6% of games", "+454 [+232, +677]",
                                               "0.83 [0.76, 0.92]", "on one H100", "in [0, 1]",
                                               "in [-1, 1]", "beta 0.9")] \
        == [True, True, True, True, False, False, False]
