"""`action_retry` on Temporal (issue 28; spec: ll-loop-cli.md events, `status`): why an
action runs again, and the lines that say so (status, the worker's log, the progress of a
followed run). The dev-server tests are in `temporal/test_action_retry.py`; these need no
server."""

from __future__ import annotations

import pytest

from little_loops.cli.display import ProgressDisplay
from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.temporal.action_retry import (
    ActionRetry,
    LastAttempt,
    retry_reason,
    retry_status_lines,
    state_of_activity,
)
from little_loops.fsm.temporal.run_record import RunRecord

HERE = "vm"


@pytest.mark.parametrize(
    ("last", "reason"),
    [
        (LastAttempt("vm", 41, worker_alive=False, timeout="heartbeat"), "its worker died"),
        (
            LastAttempt("vm", 41, worker_alive=True, timeout="heartbeat"),
            "the server restarted or lost touch with its worker",
        ),
        (
            LastAttempt("other", 41, worker_alive=False, timeout="heartbeat"),
            "its worker on other stopped answering",
        ),
        (
            LastAttempt("vm", 41, worker_alive=True, failure="OSError: disk full"),
            "its last attempt failed: OSError: disk full",
        ),
        (
            LastAttempt("vm", 41, worker_alive=True, timeout="start_to_close"),
            "its last attempt ran past its time limit",
        ),
        (
            LastAttempt(timeout="heartbeat"),
            "its last attempt gave no result (its worker or the server went away)",
        ),
    ],
)
def test_retry_reason_says_why_the_action_runs_again(last: LastAttempt, reason: str) -> None:
    assert retry_reason(last, HERE) == reason


def test_the_state_comes_from_the_actions_activity_id() -> None:
    assert state_of_activity("12:build:action") == "build"
    assert state_of_activity("3:a:b:action") == "a:b"
    assert state_of_activity("odd") == "odd"


def test_the_status_and_worker_log_line() -> None:
    retry = ActionRetry("a", 2, "its worker died")
    assert retry.said() == "state 'a' was run again (attempt 2): its worker died"
    event = retry.event("2026-11-25T10:00:00+00:00")
    assert event == {
        "event": "action_retry",
        "ts": "2026-11-25T10:00:00+00:00",
        "state": "a",
        "attempt": 2,
        "reason": "its worker died",
    }
    assert retry_status_lines([event, {**event, "attempt": 3}]) == [
        "state 'a' was run again (attempt 2): its worker died",
        "state 'a' was run again (attempt 3): its worker died",
    ]
    assert retry_status_lines(None) == []


def test_the_progress_line_of_a_followed_run(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=3)
    display({"event": "state_enter", "state": "a", "iteration": 1})
    display({"event": "action_start", "action": "make"})
    display(ActionRetry("a", 2, "its worker died").event("2026-11-25T10:00:00+00:00"))
    assert capsys.readouterr().out == (
        "[1/3] a -> make\n       state 'a' run again (attempt 2): its worker died\n"
    )


def _record() -> RunRecord:
    fsm = FSMLoop.from_dict({"name": "x", "initial": "a", "states": {"a": {"terminal": True}}})
    return RunRecord(fsm, "vm")


def test_the_status_query_holds_the_last_retries_and_a_resume_recalls_them() -> None:
    record, fsm = _record(), _record().fsm
    events = [ActionRetry("a", n, "its worker died").event(f"t{n}") for n in range(2, 14)]
    for event in events:
        record.note(event)
    state = record.state_dict(RunCursor("a"), RunGuards(fsm), 0)
    assert state["action_retries"] == events[-10:]
    assert "action_retries" not in _record().state_dict(RunCursor("a"), RunGuards(fsm), 0)
    again = _record()
    again.recall_retries([{"event": "route"}, *events[:2]])
    assert again.action_retries == events[:2]
