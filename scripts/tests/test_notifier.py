"""Tests for `fsm.store.notifier`: which moments of a run call the notify command, with what,
and a `PersistentExecutor` (the library, as `run --background` uses it) calling it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from fixtures.notify_support import (
    RECORD_EVENT,
    WAIT_SECONDS,
    log_outcomes,
    wait_for_lines,
)

from little_loops.fsm.persistence import LoopState, PersistentExecutor, StatePersistence
from little_loops.fsm.store.notifier import (
    NOTIFY_EVENTS,
    Notification,
    RunNotifier,
    end_notification,
    limit_notification,
    notify_log_path,
    run_notifier,
)
from little_loops.fsm.validation import load_and_validate


def _ended(terminated_by: str | None, status: str, **fields: object) -> LoopState:
    state = LoopState("demo", "check", 3, {}, None, None, "2026-01-01T00:00:00+00:00", "", status)
    state.terminated_by = terminated_by
    for key, value in fields.items():
        setattr(state, key, value)
    return state


_RESUME = "at state 'check'; continue with: ll-loop resume demo"
_STALL = "state 'check' ended the same way 3 times"
_SPENT = "spent $1.02 of max_cost_usd $1.00"
_DONE = "done at state 'check' after"
_DONE_3M = f"{_DONE} 3 iterations, 3m"
_STOPPED = "stopped by LOOP_STOP at state 'check'"
_MAX = "3 iterations done, stopped before state 'check'"


@pytest.mark.parametrize(
    ("terminated_by", "status", "fields", "expected"),
    [
        ("terminal", "completed", {"elapsed_ms": 192000}, ("completed", _DONE_3M)),
        ("terminal", "completed", {"iteration": 1}, ("completed", f"{_DONE} 1 iteration")),
        ("signal_stop", "stopped", {}, ("completed", f"{_STOPPED} after 3 iterations")),
        ("error", "failed", {"error": "Action failed:\n  boom"}, ("failed", "Action failed: boom")),
        ("timeout", "failed", {"error": "Loop timed out"}, ("failed", "Loop timed out")),
        ("handoff", "awaiting_continuation", {"continuation_prompt": "A\nB"}, ("handoff", "A B")),
        ("handoff", "handoff_terminated", {}, ("handoff", _RESUME)),
        ("stalled", "stalled", {"error": _STALL}, ("stalled", _STALL)),
        ("signal", "interrupted", {}, ("interrupted", _RESUME)),
        ("max_iterations", "interrupted", {}, ("max_iterations", _MAX)),
        ("budget_exhausted", "budget_exhausted", {"error": _SPENT}, ("budget_exhausted", _SPENT)),
        ("usage_limited", "usage_limited", {}, ("usage_limited", "at state 'check'")),
        ("something_new", "failed", {}, ("failed", "at state 'check'")),
    ],
)  # fmt: skip
def test_each_ending_is_told_with_its_saved_status(
    terminated_by: str, status: str, fields: dict[str, object], expected: tuple[str, str]
) -> None:
    event, message = expected
    notification = end_notification(_ended(terminated_by, status, **fields))
    assert notification == Notification(event, status, message)
    assert notification.event in NOTIFY_EVENTS


def test_a_nul_in_an_error_cannot_reach_the_environment() -> None:
    message = end_notification(_ended("error", "failed", error="bad\0byte")).message
    assert message == "badbyte"


def test_odd_event_values_never_raise() -> None:
    odd: list[dict[str, object]] = [
        {"event": "limit_wait", "resets_at": "soon", "wait_seconds": "3h"},
        {"event": "limit_wait", "resets_at": "9999-12-31T23:59:59Z", "wait_seconds": 1e400},
        {"event": "limit_wait", "until": 5, "wait_seconds": True},
        {"event": "limit_wait_end", "waited_seconds": "long", "state": None},
    ]
    for event in odd:
        notification = limit_notification(event)
        assert notification is not None and notification.message


def test_a_long_message_is_cut_to_one_readable_line() -> None:
    message = end_notification(_ended("error", "failed", error="x " * 2000)).message
    assert len(message) == 1000 and message.endswith("...") and "\n" not in message


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_limit_wait_is_told_as_claude_shows_the_reset(utc: None) -> None:
    event = {
        "event": "limit_wait",
        "state": "fix",
        "kind": "usage_limit",
        "limit_type": "five_hour",
        "resets_at": "2026-11-23T23:21:00+00:00",
        "wait_seconds": 3 * 3600 + 12 * 60,
        "message": "You've hit your session limit · resets 11:21pm (UTC)",
    }
    assert limit_notification(event, today=date(2026, 11, 23)) == Notification(
        "limit_wait_started",
        "waiting_for_limit",
        "waiting for the usage limit to reset at 11:21pm (UTC), 3h12m",
    )
    tomorrow = limit_notification(event, today=date(2026, 11, 22))
    assert tomorrow is not None
    assert (
        tomorrow.message == "waiting for the usage limit to reset at Nov 23, 11:21pm (UTC), 3h12m"
    )
    next_year = limit_notification(event, today=date(2025, 12, 31))
    assert next_year is not None and "at Nov 23, 2026, 11:21pm (UTC)" in next_year.message


def test_a_reset_is_shown_in_the_local_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    time.tzset()
    try:
        event = {"event": "limit_wait", "resets_at": "2026-11-23T08:05:00Z", "wait_seconds": 45}
        notification = limit_notification(event, today=date(2026, 11, 23))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert notification is not None
    assert notification.message == "waiting for the usage limit to reset at 9:05am (CET), 45s"


def test_a_limit_wait_without_a_reset_time_says_until_when(utc: None) -> None:
    event = {
        "event": "limit_wait",
        "message": "You've hit your limit",
        "until": "2026-11-24T05:00:00+00:00",
        "wait_seconds": 7200,
    }
    notification = limit_notification(event, today=date(2026, 11, 24))
    assert notification is not None
    assert notification.message == (
        "waiting for the usage limit until 5:00am (UTC), 2h00m (its reset time is unknown)"
    )
    del event["until"]
    notification = limit_notification(event)
    assert notification is not None and notification.message == "You've hit your limit"


def test_the_end_of_a_limit_wait_is_told() -> None:
    event = {"event": "limit_wait_end", "state": "fix", "waited_seconds": 3 * 3600 + 13 * 60}
    assert limit_notification(event) == Notification(
        "limit_wait_ended", "running", "waited 3h13m; running state 'fix' again"
    )
    assert limit_notification({"event": "route", "from": "a", "to": "b"}) is None


def test_no_command_no_notifier(tmp_path: Path) -> None:
    persistence = StatePersistence("demo", tmp_path / ".loops")
    assert run_notifier(None, persistence) is None
    assert run_notifier("", persistence) is None
    notifier = run_notifier("true", persistence)
    assert notifier is not None and notifier.log_path == notify_log_path(persistence)


# --- with real processes --------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NOTIFY_OUT", str(tmp_path / "told"))
    (tmp_path / ".loops").mkdir()
    return tmp_path


def _notifier(project: Path, command: str, timeout: float = 60) -> RunNotifier:
    persistence = StatePersistence("demo", project / ".loops")
    persistence.initialize()
    notifier = run_notifier(command, persistence)
    assert notifier is not None
    notifier.timeout = timeout
    return notifier


def test_a_limit_wait_calls_the_command_with_every_variable(project: Path) -> None:
    variables = '"$LL_LOOP" "$LL_EVENT" "$LL_STATUS" "$LL_MESSAGE" "$LL_STATE_FILE"'
    command = f'printf "%s|" {variables} > "$NOTIFY_OUT"'
    notifier = _notifier(project, command)
    notifier.on_event({"event": "limit_wait_end", "state": "fix", "waited_seconds": 5})
    notifier.on_event({"event": "action_start", "state": "fix"})  # not told
    assert log_outcomes(notify_log_path(StatePersistence("demo", project / ".loops")), 1) == [
        "limit_wait_ended exit 0"
    ]
    state_file = project / ".loops" / ".running" / "demo.state.json"
    assert (project / "told").read_text() == (
        f"demo|limit_wait_ended|running|waited 5s; running state 'fix' again|{state_file}|"
    )
    notifier.wait(WAIT_SECONDS)


LOOP = """\
name: demo
initial: check
notify: {notify}
states:
  check:
    action: "echo checking"
    next: done
  done:
    terminal: true
"""


def _executor(project: Path, notify: str) -> PersistentExecutor:
    path = project / ".loops" / "demo.yaml"
    path.write_text(LOOP.format(notify=notify))
    return PersistentExecutor(load_and_validate(path), loops_dir=project / ".loops")


def test_a_library_run_tells_its_end_once_the_state_is_saved(project: Path) -> None:
    # The command reads the state file it is pointed at: it already says `completed`.
    command = 'grep -o \'"status": "[a-z_]*"\' "$LL_STATE_FILE" >> "$NOTIFY_OUT"'
    executor = _executor(project, json.dumps(command))
    assert executor.run().terminated_by == "terminal"
    assert wait_for_lines(project / "told", 1) == ['"status": "completed"']
    assert executor.notifier is not None
    executor.notifier.wait(WAIT_SECONDS)


def test_a_hanging_command_is_killed_after_its_timeout_and_the_run_is_unchanged(
    project: Path,
) -> None:
    executor = _executor(project, json.dumps(f"{RECORD_EVENT}; sleep 300"))
    assert executor.notifier is not None
    executor.notifier.timeout = 1
    result = executor.run()
    assert (result.terminated_by, result.error) == ("terminal", None)
    log = project / ".loops" / ".running" / "demo.notify.log"
    assert log_outcomes(log, 1) == ["completed timed out after 1s, killed"]
    executor.notifier.wait(WAIT_SECONDS)


def test_a_new_run_moves_the_notify_log_to_the_history_with_its_run(project: Path) -> None:
    executor = _executor(project, json.dumps(RECORD_EVENT))
    executor.run()
    log = project / ".loops" / ".running" / "demo.notify.log"
    log_outcomes(log, 1)
    assert executor.notifier is not None
    executor.notifier.wait(WAIT_SECONDS)
    again = _executor(project, json.dumps(RECORD_EVENT))
    again.archive_previous()
    assert not log.exists()
    [archived] = (project / ".loops" / ".history" / "demo").iterdir()
    assert (archived / "demo.notify.log").read_text().endswith(" completed exit 0\n")
    assert os.path.exists(archived / "demo.state.json")
