"""Durations written in loop files: a number of seconds, or text such as `90s`, `30m`,
`12h`, `2d` or `1h30m`."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DURATION_PATTERN", "format_duration", "parse_duration"]

DURATION_PATTERN = r"^\s*(\d+(\.\d+)?\s*[smhd]\s*)+$"
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: Any) -> float:
    """Seconds in `value`; ValueError (a one-line reason) when it is not a duration >= 0."""
    if isinstance(value, bool):
        raise ValueError(f"must be a duration (seconds, or like 90s, 30m, 12h), got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"must be a duration >= 0, got {value!r}")
        return float(value)
    if isinstance(value, str) and re.match(DURATION_PATTERN, value):
        return float(sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(value)))
    raise ValueError(f"must be a duration (seconds, or like 90s, 30m, 12h), got {value!r}")


def format_duration(seconds: float) -> str:
    """`3h12m`, `5m03s`, `42s`: how long, for a person reading a progress line."""
    whole = max(round(seconds), 0)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
