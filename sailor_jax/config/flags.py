"""Config fields as the user types them: their command-line flags, and validation messages
in those words. Host-only.

The CLIs parse their `Args` dataclass with tyro, which names the flag of field `f` at field
path `a.b` `--a.b.f`, underscores turned into dashes (`--sailor.max-len`), and drops the
prefix of a field annotated `tyro.conf.OmitArgPrefixes` (`--devices`, not `--scale.devices`).
The config dataclasses validate in `__post_init__` with `ValueError` messages that name their
fields (`window must be in [0, max_len=300], got -5`, `SailorConfig.num_seeds must be
positive`, `alignment.heldout needs trajectories >= 4`); `in_flags` rewrites such a message
with the flags of the config at a known path. `user_errors` wraps a tyro parse (the CLIs'
`sailor_jax.cli.parse_args`): through tyro's parse-error hook (`tyro._errors.on_parse_error`,
private: the project pins tyro 1.0.x) every rejection becomes one `error:` line in the
user's words, exit 2; an event it does not know keeps tyro's own report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import re
import sys
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import tyro
from tyro import _errors as tyro_errors

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
    for name, annotation in _fields(root).items():
        inner, omit = _dataclass(annotation)
        if inner is not None:
            yield from all_flags(inner, () if omit else (*prefix, name))
            continue
        yield flag_name((*prefix, name))
        if annotation is bool:
            yield flag_name((*prefix, f"no_{name}"))


@contextlib.contextmanager
def user_errors(root: type, argv: Sequence[str]) -> Iterator[None]:
    """While tyro parses `argv` into the dataclass `root`, report what it rejects as one
    `error: <what> (<what to do>)` line on stderr and exit with status 2.

    A value a config dataclass refuses in `__post_init__` is said with the flags of the
    fields its message names (`in_flags`; the config is found from tyro's
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
            usage_error(*text)

    with tyro_errors.on_parse_error(hook):
        yield


def usage_error(what: str, fix: str) -> None:
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
                                         list(all_flags(root)), n=1)
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
    under presets; a root dataclass's own error has none, or under presets its class name)."""
    path = getattr(error, "arg", "")
    path = [p.replace("-", "_") for p in path.split(".") if p and not p.startswith("__tyro")
            ] if isinstance(path, str) else []
    if path[:1] == [root.__name__]:  # under presets, the root's own error names its class
        path = path[1:]
    cls, prefix = config_at(root, path)
    if cls is None:
        return message, "see --help"
    text, named = in_flags(message, cls, prefix)
    if not named and prefix:
        group = flag_name(prefix)
        named = [a.partition("=")[0] for a in argv if a.startswith(group + ".")]
        text = f"{' '.join(named) or group + '.*'}: {text}"
    typed = [f for f in named if any(a.partition("=")[0] == f for a in argv)] or named
    return text, f"see {typed[0]} in --help" if typed else "see --help"
