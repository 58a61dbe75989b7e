"""Config fields as the user types them: their command-line flags, and validation messages
in those words. Host-only.

The CLIs parse their `Args` dataclass with tyro, which names the flag of field `f` at field
path `a.b` `--a.b.f`, underscores turned into dashes (`--sailor.max-len`), and drops the
prefix of a field annotated `tyro.conf.OmitArgPrefixes` (`--devices`, not `--scale.devices`).
The config dataclasses validate in `__post_init__` with `ValueError` messages that name their
fields (`window must be in [0, max_len=300], got -5`, `SailorConfig.num_seeds must be
positive`, `alignment.heldout needs trajectories >= 4`); `in_flags` rewrites such a message
with the flags of the config at a known path, so a CLI can say it in the user's words
(`sailor_jax.cli.parse_args`).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Iterator, Sequence
from typing import Any

import tyro

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
