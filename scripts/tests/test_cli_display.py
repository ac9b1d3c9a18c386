"""Tests for `little_loops.cli.display`: progress lines built from executor events."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.cli_support import ClosedPipe, normalize

from little_loops.cli.display import ProgressDisplay, shorten


def _feed(display: ProgressDisplay, *events: dict[str, Any]) -> None:
    for event in events:
        display(event)


def _cycle(iteration: int, state: str, action: str, verdict: str | None, to: str) -> list[Any]:
    events: list[dict[str, Any]] = [
        {"event": "state_enter", "state": state, "iteration": iteration},
        {"event": "action_start", "action": action},
        {"event": "action_complete", "exit_code": 0, "duration_ms": 3},
    ]
    if verdict is not None:
        events.append({"event": "evaluate", "type": "default", "verdict": verdict})
    events.append({"event": "route", "from": state, "to": to})
    return events


def test_reference_progress_format(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=3)
    _feed(
        display,
        {"event": "loop_start", "loop": "x"},
        *_cycle(1, "check", "false", "failure", "fix"),
        *_cycle(2, "fix", "echo fixing", None, "check"),
        *_cycle(3, "check", "true", "success", "done"),
        {"event": "loop_complete", "final_state": "done", "iterations": 3},
    )
    assert normalize(capsys.readouterr().out) == (
        "[1/3] check -> false\n"
        "       ✗ failure\n"
        "       -> fix (Ns)\n"
        "[2/3] fix -> echo fixing\n"
        "       -> check (Ns)\n"
        "[3/3] check -> true\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
    )


def test_confidence_error_detail_and_good_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=9)
    _feed(
        display,
        {"event": "evaluate", "verdict": "success", "confidence": 0.92},
        {"event": "evaluate", "verdict": "target"},
        {"event": "evaluate", "verdict": "progress"},
        {"event": "evaluate", "verdict": "stall"},
        {"event": "evaluate", "verdict": "error", "error": "Cannot parse as number: x"},
    )
    assert capsys.readouterr().out == (
        "       ✓ success (confidence: 0.92)\n"
        "       ✓ target\n"
        "       ✓ progress\n"
        "       ✗ stall\n"
        "       ✗ error - Cannot parse as number: x\n"
    )


def test_state_without_action_ends_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=2)
    _feed(
        display,
        {"event": "state_enter", "state": "decide", "iteration": 1},
        {"event": "evaluate", "type": "default", "verdict": "success"},
        {"event": "state_enter", "state": "decide", "iteration": 2},
        {"event": "loop_complete"},
    )
    assert capsys.readouterr().out == "[1/2] decide\n       ✓ success\n[2/2] decide\n"


def test_long_action_is_cut_and_failed_start_is_explained(
    capsys: pytest.CaptureFixture[str],
) -> None:
    display = ProgressDisplay(max_iterations=1)
    _feed(
        display,
        {"event": "state_enter", "state": "s", "iteration": 1},
        {"event": "action_start", "action": "x" * 70},
        {"event": "action_complete", "exit_code": 127, "error": "Cannot run action: nope"},
        {"event": "handoff_detected", "continuation": "go on with B"},
        {"event": "something_new"},
    )
    assert capsys.readouterr().out == (
        f"[1/1] s -> {'x' * 60}...\n"
        "       ! Cannot run action: nope\n"
        "       handoff: go on with B\n"
    )


def test_verbose_shows_output_lines_under_the_state(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=1, verbose=True)
    display({"event": "state_enter", "state": "s", "iteration": 1})
    display.on_output_line("first")
    display({"event": "action_start", "action": "echo"})
    display.on_output_line("second")
    # The header again when its line was closed (issue 23 item 12: no line starts with a
    # bare " -> ").
    assert capsys.readouterr().out == "[1/1] s\n       | first\n[1/1] s -> echo\n       | second\n"


def test_output_lines_hidden_without_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=1)
    display.on_output_line("hidden")
    assert capsys.readouterr().out == ""


def test_disabled_display_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=1, verbose=True, enabled=False)
    display.preamble = ["header"]
    _feed(display, *_cycle(1, "s", "true", "success", "done"))
    display.on_output_line("out")
    display.finish()
    assert capsys.readouterr().out == ""


def test_preamble_printed_before_first_event_or_at_finish(
    capsys: pytest.CaptureFixture[str],
) -> None:
    display = ProgressDisplay(max_iterations=1)
    display.preamble = ["Resuming", ""]
    display({"event": "loop_start"})
    display({"event": "loop_start"})
    assert capsys.readouterr().out == "Resuming\n\n"
    display = ProgressDisplay(max_iterations=1)
    display.preamble = ["Header"]
    display({"event": "state_enter", "state": "s", "iteration": 1})
    display.finish()
    assert capsys.readouterr().out == "Header\n[1/1] s\n"


def test_closed_stdout_turns_the_display_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdout", ClosedPipe())
    display = ProgressDisplay(max_iterations=1, verbose=True)
    display({"event": "state_enter", "state": "s", "iteration": 1})
    assert display.broken_pipe and not display.enabled
    display({"event": "route", "to": "x"})  # no second error
    fresh = ProgressDisplay(max_iterations=1, verbose=True)
    fresh.on_output_line("line")
    assert fresh.broken_pipe


def test_shorten() -> None:
    assert shorten("abc", 3) == "abc"
    assert shorten("abcd", 3) == "abc..."


def test_multi_line_actions_and_errors_stay_on_one_progress_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    display = ProgressDisplay(max_iterations=3)
    _feed(
        display,
        {"event": "state_enter", "state": "check", "iteration": 1},
        {"event": "action_start", "action": "echo one\necho two"},
        {"event": "action_complete", "exit_code": 127, "error": "Cannot run\n  it\n"},
        {"event": "evaluate", "verdict": "error", "error": "Cannot parse as number: 5\n"},
    )
    assert capsys.readouterr().out == (
        "[1/3] check -> echo one echo two\n"
        "       ! Cannot run it\n"
        "       ✗ error - Cannot parse as number: 5\n"
    )


@pytest.mark.parametrize("live", [False, True])
def test_an_action_run_again_after_a_backoff_has_its_iteration_and_state(
    capsys: pytest.CaptureFixture[str], live: bool
) -> None:
    """Issue 23 item 12: the retry's line read ` -> /ll:fix`, with a stray space and no
    iteration or state."""
    display = ProgressDisplay(max_iterations=5, live=live)
    for event in [
        {"event": "state_enter", "state": "fix", "iteration": 2},
        {"event": "action_start", "action": "/ll:fix"},
        {"event": "action_complete", "exit_code": 1, "limit": True},
        {
            "event": "rate_limit_backoff",
            "message": "API Error: 529 overloaded",
            "seconds": 30,
            "attempt": 1,
            "retries": 3,
        },
        {"event": "action_start", "action": "/ll:fix"},
        {"event": "action_complete", "exit_code": 0},
        {"event": "evaluate", "verdict": "success"},
    ]:
        display(event)
    display.finish()
    assert capsys.readouterr().out.splitlines() == [
        "[2/5] fix -> /ll:fix",
        "       API Error: 529 overloaded",
        "       backing off 30s (retry 1 of 3)",
        "[2/5] fix -> /ll:fix",
        "       ✓ success",
    ]
