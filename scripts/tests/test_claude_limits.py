"""Telling claude's limits from what it printed, and when they reset (claude_limits).

The messages are the real CLI's: `fixtures/claude_limits/*.jsonl` are stream-json
transcripts of the real `claude -p` against the fake API, recorded (and checked again)
by `e2e/test_e2e_claude_limits.py`.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from little_loops.fsm.process.claude_limits import (
    LimitHit,
    classify_claude_result,
    classify_shell_failure,
    limit_from_message,
    parse_reset_time,
)

FIXTURES = Path(__file__).parent / "fixtures" / "claude_limits"
UTC = ZoneInfo("UTC")
PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")
KOLKATA = ZoneInfo("Asia/Kolkata")


def at(zone: ZoneInfo, *fields: int) -> float:
    """Epoch seconds of a wall-clock time in `zone`: utc(24, 23, 21)."""
    return datetime(*fields, tzinfo=zone).timestamp()


def utc(day: int, hour: int, minute: int = 0) -> float:
    """Epoch seconds of a time in November 2026, UTC."""
    return at(UTC, 2026, 11, day, hour, minute)


# 2026-11-24 20:00:30 UTC: a Tuesday evening (21:00 in Paris, 15:00 in New York).
NOW = at(UTC, 2026, 11, 24, 20, 0, 30)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("11:21pm (UTC)", utc(24, 23, 21)),
        ("resets 11:21pm (UTC)", utc(24, 23, 21)),
        ("11pm (UTC)", utc(24, 23, 0)),
        ("12pm (UTC)", utc(25, 12, 0)),  # noon: tomorrow's, today's is gone
        ("12:30am (UTC)", utc(25, 0, 30)),  # just after midnight
        ("Nov 26, 7:52pm (UTC)", utc(26, 19, 52)),
        ("Nov 27, 1pm (UTC)", utc(27, 13, 0)),
        ("Nov 26, 2027, 7:52pm (Europe/Paris)", at(PARIS, 2027, 11, 26, 19, 52)),
        ("Dec 29, 2027, 12:53am (Europe/Paris)", at(PARIS, 2027, 12, 29, 0, 53)),
        ("9:52pm (Europe/Paris)", at(PARIS, 2026, 11, 24, 21, 52)),
        ("7:03pm (America/New_York)", at(NEW_YORK, 2026, 11, 24, 19, 3)),
        ("5:52am (Asia/Kolkata)", at(KOLKATA, 2026, 11, 25, 5, 52)),
    ],
)
def test_reset_time_formats_and_zones(text: str, expected: float) -> None:
    assert parse_reset_time(text, NOW) == expected


def test_a_time_already_passed_today_is_tomorrows() -> None:
    assert parse_reset_time("6:30pm (UTC)", NOW) == utc(25, 18, 30)
    # In Paris it is already 21:00, so 7:30pm there is tomorrow's too.
    assert parse_reset_time("7:30pm (Europe/Paris)", NOW) == at(PARIS, 2026, 11, 25, 19, 30)


def test_the_next_day_across_midnight() -> None:
    late = utc(24, 23, 53)
    assert parse_reset_time("12:53am (UTC)", late) == utc(25, 0, 53)


def test_a_reset_that_just_passed_is_that_past_time() -> None:
    # Printed at 19:50 for 20:00, read at 20:00:30: the caller waits nothing.
    assert parse_reset_time("8pm (UTC)", NOW) == utc(24, 20, 0)
    after_midnight = utc(25, 0, 5)
    assert parse_reset_time("11:58pm (UTC)", after_midnight) == utc(24, 23, 58)
    assert parse_reset_time("Nov 24, 7pm (UTC)", NOW) == utc(24, 19, 0)
    assert parse_reset_time("Nov 20, 2026, 7pm (UTC)", NOW) == utc(20, 19, 0)


def test_next_year_and_across_new_year() -> None:
    new_years_eve = at(UTC, 2026, 12, 30, 12, 0)
    assert parse_reset_time("Jan 2, 3am (UTC)", new_years_eve) == at(UTC, 2027, 1, 2, 3, 0)
    # A reset printed on Dec 29 for Dec 31, read on Jan 3: last year's, just passed.
    january = at(UTC, 2027, 1, 3, 9, 0)
    assert parse_reset_time("Dec 31, 3pm (UTC)", january) == at(UTC, 2026, 12, 31, 15, 0)
    # A date this year long gone is next year's.
    assert parse_reset_time("Mar 3, 3am (UTC)", NOW) == at(UTC, 2027, 3, 3, 3, 0)


def test_the_zone_decides_the_day() -> None:
    # 20:00 UTC is already 01:30 on Nov 25 in Kolkata: "Nov 25" there is today.
    assert parse_reset_time("Nov 25, 4am (Asia/Kolkata)", NOW) == at(KOLKATA, 2026, 11, 25, 4, 0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "soon",
        "11:21 (UTC)",
        "13pm (UTC)",
        "11:21pm",
        "11:21pm (Mars/Olympus)",
        "Nov 31, 1pm (UTC)",
    ],
)
def test_no_reset_time(text: str) -> None:
    assert parse_reset_time(text, NOW) is None


@pytest.mark.parametrize(
    ("text", "limit_type", "resets_at"),
    [
        ("You've hit your session limit · resets 11:21pm (UTC)", "five_hour", utc(24, 23, 21)),
        ("You've hit your 5-hour limit · resets 1:06am (UTC)", "five_hour", utc(25, 1, 6)),
        (
            "You've hit your weekly limit · resets Nov 26, 7:52pm (UTC)",
            "seven_day",
            utc(26, 19, 52),
        ),
        ("You've hit your Opus limit · resets 9:52pm (UTC)", "seven_day_opus", utc(24, 21, 52)),
        (
            "You've hit your Sonnet limit · resets Nov 27, 1pm (UTC)",
            "seven_day_sonnet",
            utc(27, 13, 0),
        ),
        ("You've hit your limit · resets 10pm (Europe/Paris)", None, utc(24, 21, 0)),
        (
            "You've hit your usage limit · resets 9:30pm (UTC) · progress saved",
            None,
            utc(24, 21, 30),
        ),
        (
            "You've hit your 5-hour limit · resets 9:30pm (UTC) · progress saved",
            "five_hour",
            utc(24, 21, 30),
        ),
        ("You've hit your session limit", "five_hour", None),
        ("You've hit your limit", None, None),
        ("You've hit your usage limit · contact your admin to increase it", None, None),
        (
            "  You've hit your weekly limit · resets Nov 26, 7:52pm (UTC)\n",
            "seven_day",
            utc(26, 19, 52),
        ),
    ],
)
def test_usage_limit_messages(text: str, limit_type: str | None, resets_at: float | None) -> None:
    assert limit_from_message(text, NOW) == LimitHit(
        "usage_limit", text.strip(), resets_at, limit_type
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("API Error: Request rejected (429) · slow down", "rate_limit"),
        (
            "API Error: Request rejected (429) · this may be a temporary capacity issue.",
            "rate_limit",
        ),
        (
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try "
            "again in a moment. If it persists, check your inference gateway (127.0.0.1:1234).",
            "overloaded",
        ),
        (
            "API Error: Repeated 529 Overloaded errors. The API is at capacity — this is "
            "usually temporary. Try again in a moment.",
            "overloaded",
        ),
        (
            "API Error: Server is temporarily limiting requests (not your usage limit) · "
            "Too many requests",
            "throttle",
        ),
    ],
)
def test_api_error_messages(text: str, kind: str) -> None:
    assert limit_from_message(text, NOW) == LimitHit(kind, text)


@pytest.mark.parametrize(
    "text",
    [
        "Invalid API key · Fix external API key",
        "Not logged in · Please run /login",
        "Credit balance is too low",
        "API Error: 401 authentication failed",
        "API Error: 500 boom. Try again.",
        "You've hit your monthly spend limit · raise it at https://claude.ai/settings",
        "You've hit your org's monthly spend limit",
        "I think You've hit your session limit · resets 11:21pm (UTC)",
        "You've hit your session limit · resets 11:21pm (UTC)\nand then some",
        "Done. The log says: API Error: Request rejected (429) · slow down",
        "",
    ],
)
def test_not_a_limit(text: str) -> None:
    assert limit_from_message(text, NOW) is None


SESSION_LINE = "You've hit your session limit · resets 11:21pm (UTC)"


def test_a_successful_shell_action_never_matches() -> None:
    assert classify_shell_failure(0, SESSION_LINE + "\n", NOW) is None


def test_a_failing_shell_action_whose_last_line_is_the_message() -> None:
    output = f"starting claude\n{SESSION_LINE}\n\n"
    assert classify_shell_failure(1, output, NOW) == LimitHit(
        "usage_limit", SESSION_LINE, utc(24, 23, 21), "five_hour"
    )


def test_a_failing_shell_action_where_the_message_is_not_last() -> None:
    output = f"{SESSION_LINE}\nTraceback: something else broke\n"
    assert classify_shell_failure(1, output, NOW) is None
    assert classify_shell_failure(2, "", NOW) is None


def test_a_failing_shell_action_after_claudes_retries() -> None:
    line = "API Error: Request rejected (429) · slow down"
    assert classify_shell_failure(1, line, NOW) == LimitHit("rate_limit", line)


def classify(
    *,
    result_text: str | None = None,
    output: str = "",
    is_error: bool = True,
    api_error_status: int | None = None,
    rejected_resets_at: float | None = None,
    rejected_type: str | None = None,
) -> LimitHit | None:
    return classify_claude_result(
        result_text=result_text,
        output=output,
        is_error=is_error,
        api_error_status=api_error_status,
        rejected_resets_at=rejected_resets_at,
        rejected_type=rejected_type,
        now=NOW,
    )


def test_a_rejected_rate_limit_event_wins_with_its_exact_reset() -> None:
    exact = at(UTC, 2026, 11, 24, 23, 21, 41)
    hit = classify(
        result_text=SESSION_LINE, rejected_resets_at=exact, rejected_type="five_hour",
        api_error_status=429,
    )  # fmt: skip
    assert hit == LimitHit("usage_limit", SESSION_LINE, exact, "five_hour", exact_reset=True)


def test_a_rejected_event_without_a_type_is_not_a_usage_limit() -> None:
    # What claude sends for the short throttle: the message decides.
    line = "API Error: Server is temporarily limiting requests (not your usage limit) · x"
    hit = classify(result_text=line, rejected_resets_at=NOW + 60, api_error_status=429)
    assert hit == LimitHit("throttle", line)


def test_the_result_text_or_else_the_output_is_the_message() -> None:
    assert classify(result_text=SESSION_LINE) == limit_from_message(SESSION_LINE, NOW)
    assert classify(output=SESSION_LINE + "\n") == limit_from_message(SESSION_LINE, NOW)


def test_the_api_status_when_the_text_says_nothing_known() -> None:
    assert classify(result_text="", api_error_status=429) == LimitHit(
        "rate_limit", "API error 429 (rate limited)"
    )
    assert classify(result_text="Upstream said no", api_error_status=529) == LimitHit(
        "overloaded", "Upstream said no"
    )
    assert classify(result_text="Invalid API key", api_error_status=401) is None


def test_a_run_that_is_no_error_is_never_a_limit() -> None:
    assert classify(result_text=SESSION_LINE, is_error=False) is None
    assert classify(is_error=False, rejected_resets_at=NOW, rejected_type="five_hour") is None
    assert classify(result_text="ok", is_error=False, api_error_status=429) is None


# --- the real CLI's transcripts -------------------------------------------------------

HOUR, DAY = 3600.0, 86400.0
# case: (kind, limit type, how far ahead the fake API put the reset when recording)
FIXTURE_CASES: dict[str, tuple[str | None, str | None, float | None]] = {
    "session_limit": ("usage_limit", "five_hour", HOUR),
    "weekly_limit": ("usage_limit", "seven_day", 3 * DAY),
    "opus_limit": ("usage_limit", "seven_day_opus", 2 * DAY),
    "usage_limit_no_reset": ("usage_limit", "five_hour", None),
    "rate_limit_429": ("rate_limit", None, None),
    "overloaded_529": ("overloaded", None, None),
    "throttle": ("throttle", None, None),
    "throttle_subscriber_429": ("throttle", None, None),
    "auth_401": (None, None, None),
}


def transcript(case: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / f"{case}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def rejected_event(lines: list[dict[str, Any]]) -> dict[str, Any]:
    for line in lines:
        info = line.get("rate_limit_info") if line.get("type") == "rate_limit_event" else None
        if info and info.get("status") == "rejected":
            return dict(info)
    return {}


def test_every_recorded_case_is_covered() -> None:
    assert sorted(path.stem for path in FIXTURES.glob("*.jsonl")) == sorted(FIXTURE_CASES)


@pytest.mark.parametrize("case", sorted(FIXTURE_CASES))
def test_classification_of_the_recorded_transcripts(case: str) -> None:
    kind, limit_type, ahead = FIXTURE_CASES[case]
    lines = transcript(case)
    result = lines[-1]
    assert result["type"] == "result"
    event = rejected_event(lines)
    # The throttle's rejected event has a reset too, but no limit type: not a usage limit.
    resets_at = event.get("resetsAt") if kind == "usage_limit" else None
    recorded_at = resets_at - ahead if resets_at is not None and ahead else NOW
    hit = classify_claude_result(
        result_text=result["result"],
        output=result["result"],
        is_error=result["is_error"],
        api_error_status=result["api_error_status"],
        rejected_resets_at=resets_at,
        rejected_type=event.get("rateLimitType"),
        now=recorded_at,
    )
    if kind is None:
        assert hit is None
        return
    exact = resets_at is not None  # the stream's own reset, not one read from the text
    assert hit == LimitHit(kind, result["result"], resets_at, limit_type, exact_reset=exact)


@pytest.mark.parametrize("case", sorted(FIXTURE_CASES))
def test_the_plain_text_of_the_recorded_transcripts(case: str) -> None:
    """What `claude -p` prints (the same final text) read without the event: to the minute."""
    kind, limit_type, ahead = FIXTURE_CASES[case]
    lines = transcript(case)
    text = lines[-1]["result"]
    resets_at = rejected_event(lines).get("resetsAt") if ahead else None
    recorded_at = resets_at - ahead if resets_at is not None and ahead else NOW
    hit = classify_shell_failure(1, text + "\n", recorded_at)
    if kind is None:
        assert hit is None
        return
    minute = None if resets_at is None else resets_at - resets_at % 60
    assert hit == LimitHit(kind, text, minute, limit_type)


def test_the_parser_agrees_with_claude_within_the_minute() -> None:
    lines = transcript("weekly_limit")
    resets_at = rejected_event(lines)["resetsAt"]
    recorded_at = resets_at - 3 * DAY
    parsed = parse_reset_time(lines[-1]["result"], recorded_at)
    assert parsed is not None
    assert timedelta(0) <= timedelta(seconds=resets_at - parsed) < timedelta(minutes=1)
