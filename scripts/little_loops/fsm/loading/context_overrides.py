"""`--context KEY=VALUE`: values a run sets in `${context.KEY}`, over the loop file's own.

The overrides are merged into the loop file's mapping before it is checked and built, so
`${context.KEY}` for a key only the command line defines passes validation for that run
(and only for it: `validate` still reports it). Values are strings, as typed. The run's
state file keeps them (`context_overrides`), so `resume` runs with the same values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

CONTEXT_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
"""A key `${context.KEY}` can name: no dots (they separate levels), no spaces."""


def parse_assignment(text: str) -> tuple[str, str]:
    """`KEY=VALUE` -> (KEY, VALUE); ValueError with a one-line reason otherwise."""
    key, equals, value = text.partition("=")
    if not equals:
        raise ValueError(f"expected KEY=VALUE, got '{text}'")
    if not CONTEXT_KEY.fullmatch(key):
        raise ValueError(
            f"'{key}' is not a context key (letters, digits, '_' and '-', "
            "not starting with a digit or '-')"
        )
    return key, value


def with_context_overrides(data: dict[str, Any], overrides: Mapping[str, str]) -> dict[str, Any]:
    """`data` with `overrides` set in its `context` (a copy; `data` is not changed).

    A `context` that is not a mapping is left as it is, so the loop file's own mistake is
    reported as usual.
    """
    if not overrides:
        return data
    context = data.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        return data
    return {**data, "context": {**context, **overrides}}
