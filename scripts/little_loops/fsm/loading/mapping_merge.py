"""One mapping merged over another, as `from:`, `flow:` bodies and fragments merge."""

from __future__ import annotations

from typing import Any

__all__ = ["deep_merge"]


def deep_merge(
    base: dict[str, Any], over: dict[str, Any], *, none_removes: bool = True
) -> dict[str, Any]:
    """`over` merged over `base`: maps merge at every depth, anything else replaces; a
    None in `over` removes the key (`from:`, §6) unless `none_removes` is False (a
    fragment's state keeps a written null, §5)."""
    merged = dict(base)
    for key, value in over.items():
        if value is None and none_removes:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value, none_removes=none_removes)
        else:
            merged[key] = value
    return merged
