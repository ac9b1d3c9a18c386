"""How a failed `codex exec` turn failed: usage limit, transient, auth or other (pure).

The machine-readable answer is the rollout file's `codex_error_info` (`codex_rollout`);
when there is none (no rollout found), codex's message is read instead (spec
agent-hosts.md §1, errors table): "You've hit your usage limit. ... try again at 7:56 PM."
and "Quota exceeded." are usage limits; "high demand", rate limits, overloads, 5xx and
"exceeded retry limit" are transient; a 401/403 is an auth failure. The reset time comes
from the quota window the API reported (an exact epoch), else from the message's time of
day, which codex prints in the local time zone without seconds.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from typing import Any

from little_loops.fsm.model.host_ending import EndingKind

__all__ = ["kind_of_error", "reset_from_message"]

_BY_INFO: dict[str, EndingKind] = {
    "usage_limit_exceeded": "usage_limit",
    "rate_limit_exceeded": "transient",
    "internal_server_error": "transient",
    "server_overloaded": "transient",
    "response_too_many_failed_attempts": "transient",
    "response_stream_disconnected": "transient",
    "unauthorized": "auth",
}
_USAGE_WORDS = re.compile(r"hit your usage limit|Quota exceeded", re.IGNORECASE)
_TRANSIENT_WORDS = re.compile(
    r"high demand|rate limit|overloaded|exceeded retry limit|Reconnecting|"
    r"status:? (?:429|5\d\d)\b",
    re.IGNORECASE,
)
_AUTH_WORDS = re.compile(r"status:? 40[13]\b|Unauthorized|invalid api key", re.IGNORECASE)
_AT_TIME = re.compile(r"try again at (?P<hour>\d{1,2}):(?P<minute>\d{2})\s?(?P<half>AM|PM)", re.I)
_PASSED_GRACE = timedelta(hours=1)


def kind_of_error(error_info: Any, message: str) -> EndingKind:
    """The kind of a failed turn, from its `codex_error_info` else from its message."""
    from_info = _kind_of_info(error_info)
    if from_info is not None:
        return from_info
    if _USAGE_WORDS.search(message):
        return "usage_limit"
    if _AUTH_WORDS.search(message):
        return "auth"
    if _TRANSIENT_WORDS.search(message):
        return "transient"
    return "other"


def _kind_of_info(error_info: Any) -> EndingKind | None:
    if isinstance(error_info, str):
        return _BY_INFO.get(error_info)
    if not isinstance(error_info, dict) or len(error_info) != 1:
        return None
    ((name, detail),) = error_info.items()
    status = detail.get("http_status_code") if isinstance(detail, dict) else None
    if status in (401, 403):
        return "auth"
    if status == 429 or (isinstance(status, int) and status >= 500):
        return "transient"
    return _BY_INFO.get(name)


def reset_from_message(message: str, now: float) -> float | None:
    """The epoch second of "try again at 1:16 AM" (local time, the next such minute;
    one that passed less than an hour ago is that past one: nothing to wait)."""
    found = _AT_TIME.search(message)
    if found is None:
        return None
    hour, minute = int(found["hour"]), int(found["minute"])
    if not 1 <= hour <= 12 or minute > 59:
        return None
    hour = hour % 12 + (12 if found["half"].upper() == "PM" else 0)
    today = datetime.fromtimestamp(now).date()
    for shift in (-1, 0, 1):
        moment = datetime.combine(today + timedelta(days=shift), time(hour, minute)).timestamp()
        if moment >= now - _PASSED_GRACE.total_seconds():
            return moment
    return None
