"""What the CLI shows of loop guards: progress lines, the end-of-run summary, `status`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_in_process, save_state

from little_loops.cli.cmd_inspect import UNFINISHED_STATUSES, status_lines
from little_loops.cli.display import ProgressDisplay
from little_loops.cli.error_list import error_lines
from little_loops.cli.summary import Summary, summarize
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.persistence import LoopState
from little_loops.fsm.schema import FSMLoop


def error(iteration: int, source: str = "action", **extra: Any) -> dict[str, Any]:
    entry = {"state": "check", "iteration": iteration, "source": source, "message": "exit code 1"}
    return {**entry, **extra}


# --- progress ------------------------------------------------------------------------------


def test_continuation_checkpoint_and_skipped_state_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    display = ProgressDisplay(max_iterations=9)
    for event in [
        {"event": "state_enter", "state": "work", "iteration": 1},
        {"event": "action_start", "action": "./agent.sh"},
        {"event": "action_complete", "exit_code": 0, "duration_ms": 3},
        {"event": "evaluate", "type": "return_metadata", "verdict": "partial"},
        {"event": "checkpoint", "status": "committed", "commit": "abc1234"},
        {"event": "handoff_detected", "continuation": "finish phase 2"},
        {"event": "handoff_continued", "count": 1, "continuation": "finish phase 2"},
        {"event": "state_enter", "state": "work", "iteration": 2},
        {"event": "action_start", "action": "./agent.sh"},
        {"event": "checkpoint", "status": "failed", "warning": "checkpoint failed: git add:\nno"},
        {"event": "route", "from": "work", "to": "work"},
        {"event": "route", "from": "work", "to": "gave_up", "reason": "max_visits"},
    ]:
        display(event)
    out = capsys.readouterr().out
    assert out.splitlines()[2:7] == [
        "       checkpoint: committed abc1234",
        "       handoff: finish phase 2",
        "       continuing in a fresh process (continuation 1)",
        "[2/9] work -> ./agent.sh",
        "       ! checkpoint failed: git add: no",
    ]
    assert out.splitlines()[-1] == "       work used up max_visits -> gave_up"


# --- the error list ----------------------------------------------------------------------------


def test_error_lines_show_the_last_errors_with_their_stderr() -> None:
    errors = [
        error(1, stderr_tail="a\nb\nc\nd"),
        error(2, "verdict", message="Action timed out\nafter 5s"),
        error(3, "fatal_error", message="disk full"),
        error(4, "other", message="m"),
    ]
    assert error_lines(errors, "demo", last=3, stderr_lines=2) == [
        "Errors during the run (4):",
        "  (1 earlier: ll-loop status demo --json)",
        "  iteration 2, check: error: Action timed out after 5s",
        "  iteration 3, check: FATAL_ERROR: disk full",
        "  iteration 4, check: other: m",
    ]
    assert error_lines(errors[:1], "demo", last=5, stderr_lines=2) == [
        "Errors during the run (1):",
        "  iteration 1, check: action failed: exit code 1",
        "    | c",
        "    | d",
    ]
    assert error_lines(errors[:1], "demo", last=5, stderr_lines=0) == [
        "Errors during the run (1):",
        "  iteration 1, check: action failed: exit code 1",
    ]
    assert error_lines([], "demo", last=5, stderr_lines=3) == []


# --- the summary -------------------------------------------------------------------------------


def fsm() -> FSMLoop:
    return FSMLoop.from_dict({"name": "demo", "initial": "a", "states": {"a": {"terminal": True}}})


def test_a_stalled_run_says_why_and_how_to_go_on() -> None:
    result = ExecutionResult("check", 5, "stalled", 1500, {}, error="state 'check' ...")
    assert summarize(result, fsm(), "demo") == Summary(
        [
            "Loop stalled: check (5 iterations, 1.5s) - state 'check' ...",
            "Resume with: ll-loop resume demo (once what repeats is fixed; otherwise it "
            "stalls again at once)",
            "Or without the stall guard: ll-loop resume demo --stall-threshold 0 "
            "(or raise stall_threshold in the loop file)",
        ],
        is_problem=True,
    )


def test_the_summary_ends_with_the_last_five_errors() -> None:
    # Different first lines: the same error repeated would be listed once, with a count.
    errors = [error(n, stderr_tail=f"{n}\n2\n3\n4") for n in range(1, 8)]
    result = ExecutionResult("done", 9, "terminal", 1000, {}, errors=errors)
    summary = summarize(result, fsm(), "demo")
    assert summary.is_problem is False
    assert summary.lines[:4] == [
        "Loop completed: done (9 iterations, 1.0s)",
        "Errors during the run (7):",
        "  (2 earlier: ll-loop status demo --json)",
        "  iteration 3, check: action failed: exit code 1",
    ]
    assert summary.lines[4:7] == ["    | 2", "    | 3", "    | 4"]
    assert len(summary.lines) == 3 + 5 * 4


# --- status ------------------------------------------------------------------------------------


def test_status_lists_the_last_ten_errors_with_whole_tails() -> None:
    tail = "\n".join(str(i) for i in range(1, 20))
    errors = [error(n, stderr_tail=f"run {n}\n{tail}") for n in range(1, 13)]
    state = LoopState(
        loop_name="demo",
        current_state="check",
        iteration=12,
        captured={},
        prev_result=None,
        last_result=None,
        started_at="s",
        updated_at="u",
        status="stalled",
        errors=errors,
    )
    lines = status_lines(state, "demo")
    assert lines[1] == "Status: stalled"
    start = lines.index("Errors during the run (12):")
    assert lines[start + 1] == "  (2 earlier: ll-loop status demo --json)"
    assert lines[start + 2] == "  iteration 3, check: action failed: exit code 1"
    assert len(lines) == start + 2 + 10 * 21


def test_list_running_shows_stalled_loops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stalled run is unfinished (it can be resumed): `list --running` shows it, and not
    a completed one beside it."""
    monkeypatch.chdir(tmp_path)
    save_state("stuck", "stalled")
    save_state("fine", "completed")
    assert cli_in_process(capsys, "list", "--running") == (
        0,
        "Unfinished runs:\n  stuck: work (iteration 2) - stalled\n",
        "",
    )
    assert "stalled" in UNFINISHED_STATUSES


def test_an_error_the_first_line_already_says_is_not_repeated() -> None:
    fatal = error(2, "fatal_error", message="database is gone")
    result = ExecutionResult(
        "step", 2, "error", 1000, {}, error="database is gone", errors=[error(1), fatal]
    )
    assert summarize(result, fsm(), "demo").lines == [
        "Loop failed: step (2 iterations, 1.0s) - database is gone",
        "Errors during the run (1):",
        "  iteration 1, check: action failed: exit code 1",
    ]
