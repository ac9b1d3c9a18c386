"""One event as one JSON line: writing it so it never fails, reading it back leniently."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Deeper than this, an event value is written with str(): it can only be a cycle or junk.
_MAX_EVENT_DEPTH = 64


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A copy of `value` that json can always write (str() for anything unusual)."""
    if depth > _MAX_EVENT_DEPTH:
        return str(value)
    if isinstance(value, dict):
        return {str(key): _jsonable(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item, depth + 1) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def event_line(event: Mapping[str, Any]) -> bytes:
    """One compact JSON line for an event; never fails on odd values."""
    try:
        text = json.dumps(event, default=str)
    except (TypeError, ValueError, RecursionError):  # non-str keys, cycles
        text = json.dumps(_jsonable(event))
    return (text + "\n").encode("utf-8")


def parse_event_line(line: bytes) -> dict[str, Any] | None:
    """The event on one line, or None for a blank, damaged or non-object line."""
    if not line.strip():
        return None
    try:
        event = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None
