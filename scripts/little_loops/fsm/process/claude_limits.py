"""Telling that claude stopped at a limit, which kind, and when it resets (pure, no I/O).

What the real Claude Code CLI prints (2.1.x, measured against the fake API; `claude -p`
exits 1 and puts the line on stdout, stream-json puts it in the final `result`):

- a subscriber's usage limit, never retried by claude:
  `You've hit your 5-hour limit · resets 1:06am (UTC)` (older 2.1 releases say
  `session limit`), `You've hit your weekly limit · resets Nov 27, 1pm (UTC)`,
  `... Opus limit ...`, `... Sonnet limit ...`, `You've hit your limit · resets ...`,
  `You've hit your usage limit`; without ` · resets ...` when the reset is unknown, and
  sometimes with more ` · ...` parts (` · progress saved`, ` · contact your admin ...`);
- after claude's own retries: `API Error: Request rejected (429) · <message>`,
  `API Error: 529 Overloaded. ...`, `API Error: Repeated 529 Overloaded errors. ...`;
- the short throttle: `API Error: Server is temporarily limiting requests (not your usage
  limit) · <message>`.

The reset is printed in the process's `TZ` with the IANA zone in parentheses, to the
minute (seconds cut off): `2am (UTC)`, `11:21pm (UTC)`, `Nov 26, 7:52pm (UTC)`, and with
the year when it is not this year: `Dec 29, 2027, 12:53am (Europe/Paris)`. A time
without a date may be tomorrow's. Authentication and billing failures (`Invalid API
key`, `Not logged in`, `Credit balance is too low`, a monthly spend limit) are not
limits to wait out: they give None.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from little_loops.fsm.model.limit_hit import LimitHit as LimitHit
from little_loops.fsm.model.limit_hit import LimitKind as LimitKind

_SEPARATOR = " \u00b7 "
_USAGE_START = re.compile(r"^You[\u2019']ve hit your (?P<name>.+)$")
# The limit names claude prints, and the API's name for each (None: it does not say).
_USAGE_NAMES: dict[str, str | None] = {
    "session limit": "five_hour",
    "5-hour limit": "five_hour",
    "weekly limit": "seven_day",
    "Opus limit": "seven_day_opus",
    "Sonnet limit": "seven_day_sonnet",
    "Fable limit": "seven_day_overage_included",
    "limit": None,
    "usage limit": None,
}
_API_ERRORS: tuple[tuple[re.Pattern[str], LimitKind], ...] = (
    (re.compile(r"^API Error: Request rejected \(429\)(?: \u00b7 |$)"), "rate_limit"),
    (re.compile(r"^API Error: (?:Repeated )?529 Overloaded"), "overloaded"),
    (re.compile(r"^API Error: Server is temporarily limiting requests\b"), "throttle"),
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_RESET = re.compile(
    r"(?:(?P<month>" + "|".join(_MONTHS) + r") (?P<day>\d{1,2}), (?:(?P<year>\d{4}), )?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s?(?P<half>am|pm)"
    r" \((?P<zone>[^()\s]+)\)"
)
# How far in the past a printed reset may be and still be that one (claude printed it a
# moment ago, and it has passed since): older than this, it is the next such time.
_PASSED_TIME_GRACE = timedelta(hours=1)
_PASSED_DATE_GRACE = timedelta(days=30)


def parse_reset_time(text: str, now: float) -> float | None:
    """The epoch second of the reset claude printed in `text`, or None if none is there.

    A time without a date is the next such time (today or tomorrow); a date without a
    year is this year's, or next year's once it is well past. A reset that passed only
    a little while ago (up to an hour for a time, 30 days for a date) is that past time:
    the caller then waits nothing. The result is the start of the printed minute (claude
    cuts off the seconds, so the real reset is up to 59 s later).
    """
    found = _RESET.search(text)
    if found is None:
        return None
    try:
        zone = ZoneInfo(found["zone"])
    except (ZoneInfoNotFoundError, ValueError):
        return None
    hour, minute = _clock(found)
    if hour is None:
        return None
    today = datetime.fromtimestamp(now, zone).date()
    if found["month"] is None:
        days = [today + timedelta(days=shift) for shift in (-1, 0, 1)]
        return _first_not_passed(days, hour, minute, zone, now, _PASSED_TIME_GRACE)
    month, day = _MONTHS.index(found["month"]) + 1, int(found["day"])
    years = [int(found["year"])] if found["year"] else [today.year - 1, today.year, today.year + 1]
    dates = [_date(year, month, day) for year in years]
    return _first_not_passed(
        [d for d in dates if d is not None], hour, minute, zone, now, _PASSED_DATE_GRACE
    )


def _clock(found: re.Match[str]) -> tuple[int | None, int]:
    hour, minute = int(found["hour"]), int(found["minute"] or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None, 0
    return hour % 12 + (12 if found["half"] == "pm" else 0), minute


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:  # Feb 29 of a year without one, or a day the month lacks
        return None


def _first_not_passed(
    days: list[date], hour: int, minute: int, zone: ZoneInfo, now: float, grace: timedelta
) -> float | None:
    """The earliest of `days` at hour:minute that is not older than `grace` (else the last)."""
    moments = [
        datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone).timestamp()
        for day in days
    ]
    if not moments:
        return None
    oldest_allowed = now - grace.total_seconds()
    return next((moment for moment in moments if moment >= oldest_allowed), moments[-1])


def limit_from_message(text: str, now: float) -> LimitHit | None:
    """The limit claude reported, when `text` (stripped) is exactly one of its messages.

    Anything else gives None: a longer text that quotes such a line, an authentication
    or billing failure, a monthly spend limit (waiting does not help with those).
    """
    said = text.strip()
    if not said or "\n" in said:
        return None
    for pattern, kind in _API_ERRORS:
        if pattern.match(said):
            return LimitHit(kind, said)
    return _usage_limit(said, now)


def _usage_limit(said: str, now: float) -> LimitHit | None:
    head, *parts = said.split(_SEPARATOR)
    start = _USAGE_START.match(head)
    if start is None or start["name"] not in _USAGE_NAMES:
        return None
    limit_type = _USAGE_NAMES[start["name"]]
    resets = [part for part in parts if part.startswith("resets ")]
    resets_at = parse_reset_time(resets[0], now) if resets else None
    return LimitHit("usage_limit", said, resets_at, limit_type)


def classify_claude_result(
    *,
    result_text: str | None,
    output: str,
    is_error: bool,
    api_error_status: int | None,
    rejected_resets_at: float | None,
    rejected_type: str | None,
    now: float,
) -> LimitHit | None:
    """The limit a slash command's claude stopped at, or None when it did not.

    Only a run claude itself calls an error counts (a model that *says* "You've hit your
    session limit" in a successful answer is not a limit). A `rate_limit_event` rejected
    with a `rateLimitType` is a usage limit with the exact reset; claude also sends a
    rejected event *without* a type for the short throttle, so that one is left to the
    message. Then the final result text (`output` when there is no result text) as one of
    claude's messages; then the API status claude gave up on: 429 rate limit, 529 overload.
    """
    if not is_error:
        return None
    text = (result_text if result_text is not None else output).strip()
    if rejected_type is not None:
        message = text or f"usage limit reached ({rejected_type})"
        exact = rejected_resets_at is not None
        return LimitHit("usage_limit", message, rejected_resets_at, rejected_type, exact)
    hit = limit_from_message(text, now)
    if hit is not None:
        return hit
    if api_error_status == 429:
        return LimitHit("rate_limit", text or "API error 429 (rate limited)")
    if api_error_status == 529:
        return LimitHit("overloaded", text or "API error 529 (overloaded)")
    return None


def classify_shell_failure(exit_code: int, output: str, now: float) -> LimitHit | None:
    """The limit a shell action that runs claude itself stopped at, or None.

    Only a failed action (exit code not 0) whose last non-empty output line is exactly one
    of claude's messages: an action that succeeds, or one that merely prints those words
    somewhere (a log, a file it shows), never triggers a wait.
    """
    if exit_code == 0:
        return None
    # Only the last line matters: cut it off the end rather than split a failing action's
    # whole output (up to the 1 MiB the runner keeps) into lines.
    last = output.rstrip().rpartition("\n")[2].strip()
    return limit_from_message(last, now) if last else None
