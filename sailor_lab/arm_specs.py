"""Arms written out on the command line: `NAME:field=value,field=value,...`.

`experiments/compare.py --arms` takes names of `sailor_jax.config.arms.ARMS` and arms written
out in this form beside them, as `--starts` takes named and written-out starts
(`sailor_lab.starts.parse_start`). A written-out arm is an `Arm` like a named one: the fields
it changes (dotted `SailorConfig` paths) from `SailorConfig()` or from `base=ARM`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from types import MappingProxyType

from sailor_jax.config import SailorConfig
from sailor_jax.config.arms import ARMS, Arm, leaf_fields
from sailor_jax.config.flags import near_name


def _value(path: str, text: str, default: object) -> object:
    """`text` as the value of field `path`, whose default is `default`: a Python literal
    (`0.5`, `True`, `None`, `(1, 2)`; `true`/`false` too), else the text itself, of the
    default's type (an int is a float where a float is wanted; a list a tuple).

    Raises:
      ValueError: a value of another type than the field's.
    """
    text = text.strip()
    try:
        value = ast.literal_eval({"true": "True", "false": "False"}.get(text, text))
    except (ValueError, SyntaxError):
        value = text
    wanted = type(default)
    if default is None or value is None:
        return value
    if wanted is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if wanted is tuple and isinstance(value, list):
        return tuple(value)
    if type(value) is not wanted:
        raise ValueError(f"{path} takes a {wanted.__name__} (default {default!r}), got {text!r}")
    return value


def parse_arm(spec: str, arms: Mapping[str, Arm] = ARMS) -> tuple[str, Arm]:
    """An arm written out on the command line: `NAME:path=value,path=value,...`.

    `path` is a `SailorConfig` field's dotted path (`alignment.heldout`, `ranker.llm.mode`),
    `value` a Python literal or a word (`_value`); `base=ARM` starts from another arm of
    `arms` instead of `SailorConfig()`. The arm's `what` is the spec itself.

    Raises:
      ValueError: a malformed spec, a name already in `arms`, an unknown field (the message
        names the closest known one) or base, or a value of the wrong type.
    """
    name, colon, body = spec.partition(":")
    name = name.strip()
    if not colon or not name or not body.strip():
        raise ValueError(f"arm {spec!r}: expected NAME:field=value,field=value")
    if name in arms:
        raise ValueError(f"arm {spec!r}: {name!r} is already an arm's name; choose another")
    defaults, changes, base = leaf_fields(SailorConfig()), {}, None
    for item in re.split(r",(?![^()\[\]]*[)\]])", body):  # not the commas of a tuple
        path, eq, text = (part.strip() for part in item.partition("="))
        # the flag's spelling names the same field: --sailor.alignment.bo-calls
        path = path.removeprefix("--").removeprefix("sailor.").replace("-", "_")
        if not eq or not path:
            raise ValueError(f"arm {spec!r}: {item!r} is not field=value")
        if path == "base":
            if text not in arms:
                raise ValueError(f"arm {spec!r}: unknown base arm {text!r}; known: "
                                 f"{', '.join(arms)}")
            base = text
        elif path not in defaults:
            close = near_name(path, defaults)
            hint = f"; did you mean {close!r}?" if close else ""
            raise ValueError(f"arm {spec!r}: SailorConfig has no field {path!r}{hint}")
        else:
            changes[path] = _value(path, text, defaults[path])
    return name, Arm(spec, MappingProxyType(changes), base=base)
