"""Config fields as the user types them: their command-line flags, and validation messages
in those words. Host-only.

The CLIs parse their `Args` dataclass with tyro, which names the flag of field `f` at field
path `a.b` `--a.b.f`, underscores turned into dashes (`--sailor.max-len`), and drops the
prefix of a field annotated `tyro.conf.OmitArgPrefixes` (`--devices`, not `--scale.devices`).
The config dataclasses validate in `__post_init__` with `ValueError` messages that name their
fields (`window must be in [0, max_len=300], got -5`, `SailorConfig.num_seeds must be
positive`, `alignment.heldout needs trajectories >= 4`); `in_flags` rewrites such a message
with the flags of the config at a known path. `user_errors` wraps a tyro parse (the CLIs'
`sailor_jax.cli.parse_args`): `argv_error` checks what the flags' types decide before tyro
runs, and what tyro still rejects is said from the `ValueError` behind it, so every rejection
is one `error:` line in the user's words, exit 2. Only tyro's public API is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import sys
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import tyro

from sailor_jax.errors import debug_requested

FIELD_WORD = re.compile(r"(?<![\w.'\"/-])(?:_?[A-Z][A-Za-z0-9]*\.)?([a-z_][a-z0-9_]*"
                        r"(?:\.[a-z_][a-z0-9_]*)*)(?![\w'\"])")
"""A word of a message that may name a field: `max_len`, `alignment.heldout`, or one with
its class in front (`SailorConfig.num_seeds`); not inside a quoted value or a path."""


def flag_name(prefix: Sequence[str]) -> str:
    """The flag of the field at flag path `prefix` (`("sailor", "max_len")` ->
    `--sailor.max-len`), as tyro names it."""
    return "--" + ".".join(name.replace("_", "-") for name in prefix)


def _fields(cls: type) -> dict[str, Any]:
    """`{field name: annotation}` of a dataclass, `Annotated` extras kept."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError):  # an annotation that does not resolve: names only
        hints = {}
    return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(cls)}


def _dataclass(annotation: Any) -> tuple[type | None, bool]:
    """`(the dataclass an annotation holds or None, whether its flags omit the prefix)`;
    `Annotated[...]` and `X | None` are looked through."""
    omit = False
    if typing.get_origin(annotation) is typing.Annotated:
        omit = any(m is tyro.conf.OmitArgPrefixes for m in annotation.__metadata__)
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next((a for a in typing.get_args(annotation)
                           if dataclasses.is_dataclass(a)), None)
    return (annotation if isinstance(annotation, type) and dataclasses.is_dataclass(annotation)
            else None), omit


def config_at(root: type, path: Sequence[str]) -> tuple[type | None, tuple[str, ...]]:
    """The config dataclass at field path `path` of the dataclass `root`, and its flag path.

    Returns:
      `(class, flag path)`: the flag path is `path` less the prefixes tyro omits; `(None,
      ())` when `path` leaves the dataclasses.
    """
    cls, prefix = root, ()
    for name in path:
        annotation = _fields(cls).get(name) if dataclasses.is_dataclass(cls) else None
        cls, omit = _dataclass(annotation)
        if cls is None:
            return None, ()
        prefix = () if omit else (*prefix, name)
    return cls, tuple(prefix)


def _field_flag(cls: type, prefix: tuple[str, ...], dotted: str) -> str | None:
    """The flag of the field `dotted` (`max_len`, `alignment.heldout`) of `cls`, or None."""
    *parents, name = dotted.split(".")
    inner, inner_prefix = config_at(cls, parents)
    if inner is None or name not in _fields(inner):
        return None
    return flag_name((*prefix, *inner_prefix, name))


def in_flags(message: str, cls: type, prefix: Sequence[str]) -> tuple[str, list[str]]:
    """Rewrite every field of `cls` that `message` names as its flag under `prefix`.

    Args:
      message: a validation message of a `cls` instance (`window must be in [0,
        max_len=300], got -5`).
      cls: the config dataclass that raised it.
      prefix: the flag path of that config (`config_at`), e.g. `("sailor",)`.

    Returns:
      `(message, the flags it now names, in order)`: `--sailor.window must be in [0,
      --sailor.max-len=300], got -5`; a class name in front of a field (`SailorConfig.`)
      goes. Words that name no field of `cls` stay as they are.
    """
    named: list[str] = []

    def replace(match: re.Match) -> str:
        flag = _field_flag(cls, tuple(prefix), match.group(1))
        if flag is None:
            return match.group(0)
        named.append(flag)
        return flag

    return FIELD_WORD.sub(replace, message), named


def all_flags(root: type, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every flag of the fields of the dataclass `root` (a bool also as `--no-...`)."""
    yield from flag_types(root, prefix)


def flag_types(root: type, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """`{flag: annotation}` of every field of the dataclass `root` that is not a dataclass
    (a bool also as `--no-...`; a positional field under its name, `results-dir`)."""
    flags: dict[str, Any] = {}
    for name, annotation in _fields(root).items():
        inner, omit = _dataclass(annotation)
        if inner is not None:
            flags.update(flag_types(inner, () if omit else (*prefix, name)))
            continue
        if _positional(annotation):
            flags[name.replace("_", "-")] = annotation
            continue
        flags[flag_name((*prefix, name))] = annotation
        if annotation is bool:
            flags[flag_name((*prefix, f"no_{name}"))] = annotation
    return flags


def config_path(root: type, cls: type) -> list[str] | None:
    """The field path of the first config of type `cls` inside the dataclass `root` (`[]`
    for `root` itself), or None."""
    if root is cls:
        return []
    for name, annotation in _fields(root).items():
        inner, _ = _dataclass(annotation)
        below = config_path(inner, cls) if inner is not None else None
        if below is not None:
            return [name, *below]
    return None


def _positional(annotation: Any) -> bool:
    return typing.get_origin(annotation) is typing.Annotated and any(
        m is tyro.conf.Positional for m in annotation.__metadata__)


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _metavar(annotation: Any) -> str | None:
    """What a flag of type `annotation` takes, as its `--help` writes it (`INT`, `{a,b}`,
    `None or FLOAT ...`), or None for a type this check leaves to tyro."""
    annotation = _strip(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        inner = _metavar(rest[0]) if len(rest) == 1 else None
        return f"None or {inner}" if inner and len(rest) < len(args) else None
    if origin is typing.Literal:
        return "{" + ",".join(map(str, args)) + "}"
    if origin in (tuple, list) and args and all(_metavar(a) for a in args if a is not ...):
        return f"{_metavar(args[0])} ..."
    return {int: "INT", float: "FLOAT", str: "STR"}.get(annotation)


def _converts(annotation: Any, token: str) -> bool:
    """Whether `token` is a value of one element of `annotation` (a `_metavar` type)."""
    annotation = _strip(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return (token == "None" and type(None) in args) or any(
            _converts(a, token) for a in args if a is not type(None))
    if origin is typing.Literal:
        return token in map(str, args)
    if origin in (tuple, list):
        return _converts(args[0], token)
    try:
        annotation(token)
    except (TypeError, ValueError):
        return False
    return True


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest single-character insertions, deletions and
    substitutions that turn `a` into `b`."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def near_name(name: str, known, max_edits: int = 2) -> str | None:
    """The known name closest to `name` within `max_edits` edits (a typo a person makes;
    `edit_distance`), or None: what a did-you-mean suggests."""
    best = min(known, key=lambda k: edit_distance(name, k), default=None)
    return best if best is not None and edit_distance(name, best) <= max_edits else None


def argv_error(root: type, argv: list[str]) -> tuple[str, str] | None:
    """`(what, fix)` of what the flags' types alone reject in `argv`, or None.

    An unknown flag (with the nearest known one of `root`), a flag without the value its
    type needs, a value that is not of its type or not a choice, or a required argument not
    given. What the types cannot decide (a value a config refuses, a surplus value) is left
    to the parse.
    """
    if {"-h", "--help", "-H", "--help-verbose"} & set(argv):
        return None
    known, free, i = flag_types(root), 0, 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            free += not arg.startswith("-")
            i += 1
            continue
        flag, eq, inline = arg.partition("=")
        values = [inline] if eq else _values(flag, argv[i:])
        if flag not in known:
            near = near_name(flag, known)
            return (f"unrecognized arguments {' '.join([arg, *values])}",
                    (f"did you mean {near}? " if near else "") + "see --help")
        metavar = _metavar(known[flag])
        if not eq and (known[flag] is bool or metavar and not metavar.endswith("...")):
            values = values[:known[flag] is not bool]  # a bool takes none, a scalar one
        i += 1 + (0 if eq else len(values))
        if known[flag] is bool or metavar is None:
            continue
        if not values:
            return f"{flag}: a value is missing", f"expected {metavar}; see {flag} in --help"
        bad = next((v for v in values if not _converts(known[flag], v)), None)
        if bad is not None and typing.get_origin(_strip(known[flag])) is typing.Literal:
            return f"{flag} {bad}: not a choice", f"choose {metavar.strip('{}').replace(',', ', ')}"
        if bad is not None:
            return f"{flag} {' '.join(values)}: expected {metavar}", f"see {flag} in --help"
    missing = [flag for flag in known if _required(root, flag) and (
        flag not in {arg.partition("=")[0] for arg in argv} if flag[:2] == "--" else not free)]
    return (f"missing {', '.join(missing)}", "see --help") if missing else None


def _required(root: type, flag: str) -> bool:
    """Whether the top-level field of `root` that `flag` names has no default."""
    name = flag.lstrip("-").replace("-", "_")
    field = next((f for f in dataclasses.fields(root) if f.name == name), None)
    return field is not None and field.default is dataclasses.MISSING \
        and field.default_factory is dataclasses.MISSING


@contextlib.contextmanager
def user_errors(root: type, argv: Sequence[str]) -> Iterator[None]:
    """While tyro parses `argv` into the dataclass `root`, report what it rejects as one
    `error: <what> (<what to do>)` line on stderr and exit with status 2.

    Before tyro runs, `argv_error` checks what a flag's type alone decides: an unknown flag
    (with the nearest one of `root`), a missing value or argument, a value that does not
    convert, a choice not offered. A value a config dataclass then refuses in `__post_init__`
    is said with the flags of the fields its message names (`in_flags`; the config is the
    `self` of the `__post_init__` that raised), or after the flags the user typed for that
    config when it names none. Anything else tyro rejects is its own report's message on one
    line. Under `--debug` / `SAILOR_DEBUG=1` tyro's own report is printed as it is.

    Only tyro's public API is used: its report goes to a buffer (`redirect_stderr`) and the
    `ValueError` behind a rejection is the `SystemExit`'s context.

    Raises:
      SystemExit: status 2, before or from inside tyro's parse.
    """
    if debug_requested(sys.argv):
        yield
        return
    problem = argv_error(root, list(argv))
    if problem is not None:
        usage_error(*problem)
    report = io.StringIO()
    try:
        with contextlib.redirect_stderr(report):
            yield
    except SystemExit as stop:
        if stop.code in (0, None):
            raise
        refused = _refusal(stop)
        if refused is not None:
            usage_error(*_config_error(str(refused[0]), root, list(argv), refused[1]))
        usage_error(_report_message(report.getvalue()), "see --help")


def _refusal(stop: BaseException) -> tuple[ValueError, type] | None:
    """The `ValueError` a config dataclass's `__post_init__` raised behind `stop`, and the
    class, or None."""
    error = stop.__context__
    while error is not None and not isinstance(error, ValueError):
        error = error.__context__
    if error is None:
        return None
    owner, tb = None, error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        this = frame.f_locals.get("self")
        if frame.f_code.co_name == "__post_init__" and dataclasses.is_dataclass(this):
            owner = type(this)
        tb = tb.tb_next
    return (error, owner) if owner is not None else None


def _report_message(report: str) -> str:
    """The message of a tyro error report on one line: its text without the frame (a box on
    a terminal, rules of dashes elsewhere), the title, and the pointers to --help."""
    lines = [line.strip().strip("│╭╮╰╯").strip() for line in report.splitlines()]
    rule = [not line.strip("─-= ") for line in lines]
    words, boxed = [], "╭" in report
    first = next((i for i, line in enumerate(lines) if line and not rule[i]), -1)
    for i, line in enumerate(lines):
        if line.startswith(("For full", "Argument helptext")):  # the pointers close it
            break
        title = report.splitlines()[i].lstrip().startswith("╭") if boxed else (
            i == first and i + 1 < len(lines) and rule[i + 1] and bool(lines[i + 1]))
        if not (rule[i] or title):
            words.append(line)
    return " ".join(words) or "the arguments were rejected"


def usage_error(what: str, fix: str) -> None:
    """Print `error: <what> (<fix>)` to stderr and exit with status 2 (argparse's)."""
    print(f"error: {what} ({fix})", file=sys.stderr)
    raise SystemExit(2)


def _values(flag: str, argv: list[str]) -> list[str]:
    """The values the user gave `flag` in `argv` (after it, up to the next flag)."""
    for i, arg in enumerate(argv):
        if arg == flag:
            rest = argv[i + 1:]
            return rest[:next((j for j, a in enumerate(rest) if a.startswith("--")), len(rest))]
        if arg.startswith(flag + "="):
            return [arg.partition("=")[2]]
    return []


def _config_error(message: str, root: type, argv: list[str], owner: type
                  ) -> tuple[str, str]:
    """`(what, fix)` of the `ValueError` `message` that config dataclass `owner` raised in
    its `__post_init__` while `root` was parsed from `argv`."""
    path = config_path(root, owner)
    cls, prefix = config_at(root, path) if path is not None else (None, ())
    if cls is None:
        return message, "see --help"
    text, named = in_flags(message, cls, prefix)
    if not named and prefix:
        group = flag_name(prefix)
        named = [a.partition("=")[0] for a in argv if a.startswith(group + ".")]
        text = f"{' '.join(named) or group + '.*'}: {text}"
    typed = [f for f in named if any(a.partition("=")[0] == f for a in argv)] or named
    return text, f"see {typed[0]} in --help" if typed else "see --help"
