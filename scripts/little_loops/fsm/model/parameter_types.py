"""Whether a value reads as a parameter's type (spec/ll-head-dialect.md §2.4, §9d).

HEAD checks only literals; here a value is also checked after interpolation and on the
command line, where it is text: `"6"` reads as an `integer`, `true` does not. The value
itself is passed on unchanged.
"""

from __future__ import annotations

import math
from typing import Any

from little_loops.fsm.model.head_parts import ParameterSpec

__all__ = ["type_problem"]

_BOOLEAN_TEXTS = ("true", "false")


def type_problem(spec: ParameterSpec, value: Any) -> str | None:
    """Why `value` is not of `spec.type` (None: it is)."""
    kind = spec.type
    if kind == "enum":
        allowed = spec.values or []
        if value in allowed or str(value) in [str(item) for item in allowed]:
            return None
        return f"must be one of {', '.join(map(str, allowed))}, got {value!r}"
    reads = _READERS.get(kind)
    if reads is None or reads(value):
        return None
    return f"must be {'an' if kind == 'integer' else 'a'} {kind}, got {value!r}"


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, str):
        try:
            int(value.strip())
        except ValueError:
            return False
        return True
    return False


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        try:
            return math.isfinite(float(value.strip()))
        except ValueError:
            return False
    return False


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool) or (
        isinstance(value, str) and value.strip().lower() in _BOOLEAN_TEXTS
    )


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_anything(value: Any) -> bool:
    return True


_READERS = {
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "string": _is_string,
    "path": _is_anything,
}
