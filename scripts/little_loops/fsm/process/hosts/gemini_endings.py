"""Telling how a Gemini CLI run ended (pure, no I/O): `gemini_ending`.

What Gemini CLI 0.61 gives (measured against the fake API, `scripts/tests/e2e/fake_gemini.py`):

- the exit code of an API error is the HTTP status mod 256 (`process.exit(status)`):
  429 -> 173, 500 -> 244, 503 -> 247, 400 -> 144, 401 -> 145, 403 -> 147; 41 is its
  own "invalid auth method" exit; other failures exit 1;
- stream-json's last line is `result` with `status: "error"` and `error.message`:
  `[API Error: You have exhausted your daily quota on this model.]` (a daily quota: the
  CLI drops the reset time, and Google's daily quotas reset at midnight US Pacific time),
  `[API Error: You exceeded your current quota, ...\\nSuggested retry after 3600s.]`
  (a quota with a reset delay), `[API Error: The model is overloaded. ...]` (503),
  `[API Error: {"error":{"code":500,...}}]`, `... API key not valid ...` (a bad key).

A spent quota is a usage limit: reset after the delay it names (an exact reset: the API's
RetryInfo, to the second), else, for a daily one, at the next Pacific midnight (inferred).
A 429 that names no quota, a 5xx and an overload are transient; a rejected key is auth.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding

__all__ = ["gemini_ending", "http_status_of_exit", "next_pacific_midnight", "stderr_words"]

AUTH_EXIT = 41  # FatalAuthenticationError: "Invalid auth method selected." and the like
_QUOTA_DAILY = re.compile(r"exhausted your daily quota", re.IGNORECASE)
_QUOTA = re.compile(
    r"exceeded your current quota|exhausted your daily quota|RESOURCE_EXHAUSTED"
    r"|exhausted your capacity|quota exceeded",
    re.IGNORECASE,
)
_DELAY = re.compile(
    r"(?:Suggested retry after|Please retry in)\s+(?P<amount>\d+(?:\.\d+)?)(?P<unit>ms|s)\b"
)
_OVERLOADED = re.compile(r"overloaded|UNAVAILABLE", re.IGNORECASE)
_AUTH = re.compile(
    r"API key not valid|API_KEY_INVALID|UNAUTHENTICATED|PERMISSION_DENIED"
    r"|Invalid auth method|must specify the GEMINI_API_KEY",
    re.IGNORECASE,
)
_PACIFIC = ZoneInfo("America/Los_Angeles")
# What gemini writes to stderr on every headless run: not words about how it ended.
_STDERR_NOISE = (
    "YOLO mode is enabled.",
    "Warning: 256-color support not detected.",
    "Ripgrep is not available.",
    "[STARTUP] ",
    "Approval mode overridden",
)
_MESSAGE_CHARS = 500


def http_status_of_exit(exit_code: int) -> int | None:
    """The HTTP status an exit code stands for (gemini exits with it mod 256), or None."""
    status = exit_code + 256
    return status if 400 <= status <= 511 else None


def gemini_ending(run: ClaudeRun, *, exit_code: int, text: str, now: float) -> HostEnding:
    """How a run ended: `text` is the CLI's words (its error message, else its output)."""
    if exit_code == 0 and not run.is_error:
        return HostEnding("success")
    message = text.strip()[:_MESSAGE_CHARS]
    status = http_status_of_exit(exit_code)
    if status in (401, 403) or exit_code == AUTH_EXIT or _AUTH.search(text):
        return HostEnding("auth", message)
    if _QUOTA.search(text):
        return _quota_ending(message, text, now)
    if status == 429 or (status is not None and status >= 500) or _OVERLOADED.search(text):
        return HostEnding("transient", message)
    return HostEnding("other", message)


def _quota_ending(message: str, text: str, now: float) -> HostEnding:
    """A spent quota: a usage limit, reset after the delay the CLI names, else (a daily
    quota) at Google's daily reset; a quota with neither is a rate limit (transient)."""
    delay = _DELAY.search(text)
    if delay is not None:
        seconds = float(delay["amount"]) / (1000 if delay["unit"] == "ms" else 1)
        # The delay is the API's RetryInfo, to the second: as exact as a reset epoch.
        return HostEnding("usage_limit", message, now + seconds, "quota", exact_reset=True)
    if _QUOTA_DAILY.search(text):
        return HostEnding("usage_limit", message, next_pacific_midnight(now), "daily")
    return HostEnding("transient", message)


def stderr_words(stderr: str) -> str:
    """gemini's stderr without the lines it prints on every run (YOLO mode, colours, ...)."""
    lines = stderr.splitlines()
    return "\n".join(line for line in lines if not line.startswith(_STDERR_NOISE))


def next_pacific_midnight(now: float) -> float:
    """The epoch second of the next midnight in US Pacific time (daily quotas reset then)."""
    local = datetime.fromtimestamp(now, _PACIFIC)
    midnight = datetime.combine(local.date() + timedelta(days=1), datetime.min.time(), _PACIFIC)
    return midnight.timestamp()
