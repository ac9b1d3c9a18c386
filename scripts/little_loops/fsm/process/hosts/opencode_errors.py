"""Reading opencode's API errors: which limit, when it resets, and how the run ended.

opencode retries a 429, 5xx or overload itself (5 retries; it waits what `retry-after` /
`retry-after-ms` say, however long) and then prints one `error` event whose `data` holds
the last answer whole: `statusCode`, `responseHeaders`, `responseBody`. The provider's
body names the limit (`error.code` / `error.type`: OpenAI's `insufficient_quota`, the
`usage_limit_reached` of ChatGPT-plan backends) and may say when it resets
(`error.resets_at`, epoch seconds, or `resets_in_seconds`); OpenAI-style headers give
`x-ratelimit-reset-requests` / `-tokens` as durations (`6m0s`, `20ms`).

While it sleeps out a long `retry-after` opencode prints nothing on stdout; with
`--print-logs --log-level ERROR` its stderr has a `message="stream error"` line with the
provider's words, so a run stopped by the wall clock can still be told a usage limit.
"""

from __future__ import annotations

import json
import re
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = [
    "error_reset_at",
    "is_auth_failure",
    "is_usage_limit",
    "limit_name",
    "stderr_stream_error",
]

USAGE_LIMIT_NAMES = frozenset(
    {"usage_limit_reached", "usage_limit_exceeded", "insufficient_quota", "quota_exceeded"}
)
"""Limit names (`error.code` / `error.type`) that mean the account's quota is spent."""

_USAGE_WORDS = re.compile(r"usage limit|exceeded your current quota|quota exceeded", re.I)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_RESET_KINDS = ("requests", "tokens")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_STREAM_ERROR = re.compile(r'message="stream error".*?error\.error="(?:AI_\w+: )?([^"]*)"')


def limit_name(data: dict[str, Any]) -> str | None:
    """The provider's name of the error (`error.code`, else `error.type`) in its body."""
    error = _body_error(data)
    for key in ("code", "type"):
        if isinstance(error.get(key), str) and error[key]:
            return str(error[key])
    return None


def error_reset_at(data: dict[str, Any], at: float | None) -> float | None:
    """When the limit of a 429 resets (epoch seconds): the body's `resets_at`, else its
    `resets_in_seconds`, else the latest `x-ratelimit-reset-*`, else `retry-after`; the
    relative ones counted from `at` (the event's time). None when nothing says."""
    error = _body_error(data)
    resets_at = _number(error.get("resets_at"))
    if resets_at is not None:
        return resets_at / 1000 if resets_at > 1e12 else resets_at
    if at is None:
        return None
    wait = _number(error.get("resets_in_seconds"))
    if wait is None:
        wait = _header_wait(_headers(data), at)
    return at + wait if wait is not None else None


def is_usage_limit(message: str, name: str | None) -> bool:
    """A 429 (or its words) saying the account's quota is spent, not a passing rate limit."""
    return name in USAGE_LIMIT_NAMES or bool(_USAGE_WORDS.search(message))


def is_auth_failure(status: int | None, error_name: str | None) -> bool:
    """The provider refused the key or login (opencode's own `ProviderAuthError`, or an
    HTTP 401/403)."""
    return status in (401, 403) or error_name == "ProviderAuthError"


def stderr_stream_error(stderr: str) -> str | None:
    """The provider's words in the last `stream error` line opencode logged, if any."""
    found = _STREAM_ERROR.findall(stderr)
    return found[-1] if found else None


def _header_wait(headers: dict[str, str], at: float) -> float | None:
    resets = [
        _duration(headers.get(f"x-ratelimit-reset-{kind}")) for kind in ("requests", "tokens")
    ]
    known = [seconds for seconds in resets if seconds is not None]
    if known:
        return max(known)
    milliseconds = _number(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    return _retry_after(headers.get("retry-after"), at)


def _retry_after(value: str | None, at: float) -> float | None:
    """`retry-after`: seconds, or an HTTP date."""
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        return max(parsedate_to_datetime(value).timestamp() - at, 0.0)
    except (TypeError, ValueError):
        return None


def _duration(value: str | None) -> float | None:
    """`6m0s`, `1.5s`, `20ms` in seconds (None when not one)."""
    if not value or _DURATION_PART.sub("", value.strip()):
        return None
    return sum(float(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(value))


def _headers(data: dict[str, Any]) -> dict[str, str]:
    headers = data.get("responseHeaders")
    if not isinstance(headers, dict):
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def _body_error(data: dict[str, Any]) -> dict[str, Any]:
    """The `error` object of the response body (JSON text), or {}."""
    body = data.get("responseBody")
    try:
        parsed = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        return {}
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
