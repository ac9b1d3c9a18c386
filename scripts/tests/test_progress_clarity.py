"""What the progress display and the error list say (issue 11 items 10 and 16): the cause
of an `error` verdict once on its progress line, repeated errors counted, a backoff wait
and every iteration of a maintain loop shown. Real runs of `ll-loop` in `tmp_path`."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.cli.display import ProgressDisplay
from little_loops.cli.error_list import error_lines


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


MISTYPED = """\
name: mistyped
initial: test
max_iterations: 3
stall_threshold: 0
states:
  test:
    action: pytset -q
    on_success: done
    on_failure: test
    on_error: test
  done:
    terminal: true
"""


def test_an_action_that_cannot_run_says_why_on_its_line_and_each_cause_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "mistyped", MISTYPED)
    code, out, err = cli_in_process(capsys, "run", "mistyped")
    cause = "exit code 127: bash: line 1: pytset: command not found"
    assert code == 4
    assert out == (
        "Running loop: mistyped\n"
        "Max iterations: 3\n"
        "\n"
        "[1/3] test -> pytset -q\n"
        f"       ✗ error - {cause}\n"
        "       -> test (Ns)\n"
        "[2/3] test -> pytset -q\n"
        f"       ✗ error - {cause}\n"
        "       -> test (Ns)\n"
        "[3/3] test -> pytset -q\n"
        f"       ✗ error - {cause}\n"
        "       -> test (Ns)\n"
        "\n"
        "Loop stopped: test (3 iterations, Ns) - max_iterations reached\n"
        "Resume with: ll-loop resume mistyped -n 6\n"
        "Errors during the run (3):\n"
        "  iterations 1 to 3, test: error: exit code 127 (3 times)\n"
        "    | bash: line 1: pytset: command not found\n"
    )
    assert err == ""


def test_a_runner_error_is_on_the_verdict_line_only(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=2)
    for event in (
        {"event": "state_enter", "state": "s", "iteration": 1},
        {"event": "action_start", "action": "sleep 5"},
        {"event": "action_complete", "exit_code": 124, "error": "Action timed out after 1s"},
        {"event": "evaluate", "verdict": "error", "error": "Action timed out after 1s"},
    ):
        display(event)
    assert capsys.readouterr().out == (
        "[1/2] s -> sleep 5\n       ✗ error - Action timed out after 1s\n"
    )


def test_a_cancelled_action_keeps_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    display = ProgressDisplay(max_iterations=2)
    for event in (
        {"event": "state_enter", "state": "s", "iteration": 1},
        {"event": "action_start", "action": "sleep 30"},
        {"event": "action_complete", "exit_code": 130, "error": "Action cancelled"},
        {"event": "loop_complete", "terminated_by": "signal"},
    ):
        display(event)
    assert capsys.readouterr().out == "[1/2] s -> sleep 30\n       ! Action cancelled\n"


def test_the_same_error_is_listed_once_with_its_count() -> None:
    timeout = {"state": "a", "source": "verdict", "message": "Action timed out after 1s"}
    errors = [
        {**timeout, "iteration": 1, "stderr_tail": "Action timed out after 1s"},
        {"state": "b", "iteration": 2, "source": "action", "message": "exit code 2"},
        {**timeout, "iteration": 3, "stderr_tail": "Action timed out after 1s"},
    ]
    assert error_lines(errors, "x", last=5, stderr_lines=3) == [
        "Errors during the run (3):",
        "  iteration 2, b: action failed: exit code 2",
        "  iterations 1 to 3, a: error: Action timed out after 1s (2 times)",
    ]
    assert error_lines(errors, "x", last=1, stderr_lines=3) == [
        "Errors during the run (3):",
        "  (1 earlier: ll-loop status x --json)",
        "  iterations 1 to 3, a: error: Action timed out after 1s (2 times)",
    ]


BACKOFF = """\
name: patient
initial: poll
max_iterations: 2
backoff: 1
states:
  poll:
    action: "false"
    on_success: done
    on_failure: poll
  done:
    terminal: true
"""


def test_a_backoff_wait_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "patient", BACKOFF)
    code, out, _ = cli_in_process(capsys, "run", "patient")
    assert code == 4
    assert out == (
        "Running loop: patient\n"
        "Max iterations: 2\n"
        "\n"
        "[1/2] poll -> false\n"
        "       ✗ failure\n"
        "       -> poll (Ns)\n"
        "       waiting 1s\n"
        "[2/2] poll -> false\n"
        "       ✗ failure\n"
        "       -> poll (Ns)\n"
        "\n"
        "Loop stopped: poll (2 iterations, Ns) - max_iterations reached\n"
        "Resume with: ll-loop resume patient -n 4\n"
    )


MAINTAIN = """\
name: keeper
initial: check
maintain: true
max_iterations: 4
states:
  check:
    action: "true"
    on_success: done
  done:
    terminal: true
"""


def test_a_maintain_loop_shows_every_iteration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "keeper", MAINTAIN)
    code, out, _ = cli_in_process(capsys, "run", "keeper")
    assert code == 4
    assert out.split("\n\n")[1] == (
        "[1/4] check -> true\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "[2/4] done: maintain -> check\n"
        "[3/4] check -> true\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "[4/4] done: maintain -> check"
    )
