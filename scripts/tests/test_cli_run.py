"""Tests for `ll-loop run` and `ll-loop resume` (little_loops.cli.cmd_run), in-process.

The loops run real shell actions in `tmp_path`; only the terminal is captured.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from fixtures.cli_support import (
    ERROR_LOOP,
    FAILING_LOOP,
    FIXTURES,
    HANDOFF_LOOP,
    SIMPLE_LOOP,
    SLOW_LOOP,
    cli_in_process,
    normalize,
    wait_for_action_start,
    write_loop,
)

from little_loops.cli import main_loop
from little_loops.cli.cmd_run import RunOptions, apply_overrides
from little_loops.fsm.schema import FSMLoop


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)


def _state(name: str) -> dict[str, object]:
    data = json.loads(Path(f".loops/.running/{name}.state.json").read_text())
    assert isinstance(data, dict)
    return data


def test_run_to_a_terminal_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "simple") == (
        0,
        "Running loop: simple\n"
        "Max iterations: 5\n"
        "\n"
        "[1/5] check -> echo checking; true\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n",
        "",
    )
    assert _state("simple")["status"] == "completed"


def test_iteration_limit_exits_4_and_says_how_to_go_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    assert cli_in_process(capsys, "failing", "-n", "2") == (
        4,
        "Running loop: failing\n"
        "Max iterations: 2\n"
        "\n"
        "[1/2] check -> false\n"
        "       ✗ failure\n"
        "       -> fix (Ns)\n"
        "[2/2] fix -> echo fixing\n"
        "       -> check (Ns)\n"
        "\n"
        "Loop stopped: check (2 iterations, Ns) - max_iterations reached\n"
        "Resume with: ll-loop resume failing -n 4\n",
        "",
    )
    assert _state("failing")["status"] == "interrupted"
    code, out, _ = cli_in_process(capsys, "resume", "failing", "-n", "3")
    assert code == 4
    assert out.splitlines()[:4] == [
        "Resuming loop 'failing' from state 'check' (iteration 2)",
        "Max iterations: 3",
        "",
        "[3/3] check -> false",
    ]


def test_error_exits_1_with_the_reason_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "erroring", ERROR_LOOP)
    code, out, err = cli_in_process(capsys, "erroring")
    assert code == 1
    assert out.endswith("[1/50] check -> exit 3\n       ✗ error - exit code 3\n\n")
    assert err == (
        "Loop failed: check (1 iteration, Ns) - "
        "No valid transition for verdict 'error' in state 'check'\n"
        "Errors during the run (1):\n"
        "  iteration 1, check: error: exit code 3\n"
    )
    assert _state("erroring")["status"] == "failed"


def test_quiet_hides_progress_but_not_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "erroring", ERROR_LOOP)
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "simple", "-q") == (0, "", "")
    assert cli_in_process(capsys, "erroring", "--quiet") == (
        1,
        "",
        "Loop failed: check (1 iteration, Ns) - "
        "No valid transition for verdict 'error' in state 'check'\n"
        "Errors during the run (1):\n"
        "  iteration 1, check: error: exit code 3\n",
    )
    assert cli_in_process(capsys, "nosuch", "-q")[2] == (
        "[T] Loop not found: nosuch\n"
        "  looked in: nosuch, .loops/nosuch.fsm.yaml, .loops/nosuch.yaml, .loops/nosuch.yml\n"
    )


def test_verbose_shows_action_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    code, out, _ = cli_in_process(capsys, "simple", "-v")
    assert code == 0
    assert "[1/5] check -> echo checking; true\n       | checking\n       ✓ success\n" in out


def test_handoff_pauses_with_exit_3_and_resume_continues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "handoff", HANDOFF_LOOP)
    code, out, _ = cli_in_process(capsys, "handoff")
    assert code == 3
    assert out.endswith(
        "       handoff: Continue with module B\n"
        "\n"
        "Loop paused for handoff: step (1 iteration, Ns)\n"
        "Continuation: Continue with module B\n"
        "Resume with: ll-loop resume handoff\n"
    )
    assert _state("handoff")["status"] == "awaiting_continuation"
    assert cli_in_process(capsys, "resume", "handoff") == (
        0,
        "Resuming loop 'handoff' from state 'step' (iteration 1)\n"
        "Continuation context: Continue with module B\n"
        "Max iterations: 5\n"
        "\n"
        "[2/5] step -> if [ -f marker ]; then echo resumed; else touch marker; echo...\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (2 iterations, Ns)\n",
        "",
    )


BOUNDED_LOOP = """\
name: bounded
initial: step
max_continuations: 1
states:
  step:
    action: >-
      if [ ${handoff.count} -lt 2 ]; then echo "CONTEXT_HANDOFF: part ${handoff.count}";
      else echo finished; fi
    next: done
  done:
    terminal: true
"""


def test_resume_past_max_continuations_needs_a_higher_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "bounded", BOUNDED_LOOP)
    assert cli_in_process(capsys, "bounded", "-q") == (
        3,
        "Resume with: ll-loop resume bounded\n",
        "",
    )
    assert cli_in_process(capsys, "resume", "bounded", "-q") == (
        3,
        "",
        "Loop paused for handoff: step (2 iterations, Ns) - max_continuations (1) reached, "
        "so it is not continued\n"
        "Continue anyway with: ll-loop resume bounded --max-continuations 2\n",
    )
    assert cli_in_process(capsys, "resume", "bounded") == (
        1,
        "",
        "[T] loop 'bounded' reached max_continuations (1) after 2 handoffs; to continue "
        "anyway: ll-loop resume bounded --max-continuations 2\n",
    )
    code, out, _ = cli_in_process(capsys, "resume", "bounded", "--max-continuations", "2")
    assert code == 0
    assert out.startswith(
        "Resuming loop 'bounded' from state 'step' (iteration 2)\nContinuation context: part 1\n"
    )
    assert _state("bounded")["status"] == "completed"


def test_max_continuations_is_a_resume_flag_only(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli_in_process(capsys, "run", "x", "--max-continuations", "2")
    assert code == 2
    assert (
        err.splitlines()[-1] == "ll-loop run: error: unrecognized arguments: --max-continuations 2"
    )


def test_resume_refuses_a_finished_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "resume", "simple") == (
        1,
        "",
        "[T] Nothing to resume for: simple\n",
    )
    main_loop(["simple", "-q"])
    assert cli_in_process(capsys, "resume", "simple") == (
        1,
        "",
        "[T] loop 'simple' already completed; start a new run with: ll-loop run simple\n",
    )


def test_resume_reports_a_damaged_state_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    running = tmp_path / ".loops" / ".running"
    running.mkdir()
    (running / "simple.state.json").write_text("{not json")
    assert cli_in_process(capsys, "resume", "simple") == (
        1,
        "",
        "[T] .loops/.running/simple.state.json: damaged state file: "
        "invalid JSON at line 1, column 2: Expecting property name enclosed in double quotes\n"
        "  to start over, delete it or run the loop again (ll-loop run <loop>)\n",
    )


def test_dry_run_prints_the_plan_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "--dry-run", "simple", "-n", "9") == (
        0,
        "Execution plan for: simple\n"
        "\n"
        "States:\n"
        "  [check]\n"
        "    action: echo checking; true\n"
        "    on_success -> done\n"
        "    on_failure -> fix\n"
        "  [fix]\n"
        "    action: echo fixing\n"
        "    next -> check\n"
        "  [done] [TERMINAL]\n"
        "\n"
        "Initial state: check\n"
        "Max iterations: 9\n",
        "",
    )
    assert not (tmp_path / ".loops" / ".running").exists()


def test_apply_overrides() -> None:
    fsm = FSMLoop.from_dict({"name": "x", "initial": "a", "states": {}})
    apply_overrides(fsm, RunOptions())
    assert (fsm.max_iterations, fsm.llm.model, fsm.llm.enabled) == (
        50,
        "claude-sonnet-4-20250514",
        True,
    )
    apply_overrides(fsm, RunOptions(max_iterations=2, no_llm=True, llm_model="claude-x"))
    assert (fsm.max_iterations, fsm.llm.model, fsm.llm.enabled) == (2, "claude-x", False)


SLASH_LOOP = """\
name: slash
initial: ask
states:
  ask:
    action: /ll:check_code types
    on_success: done
  done:
    terminal: true
"""


def test_no_llm_judges_a_slash_command_by_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_CLAUDE_BIN", str(FIXTURES / "fake_claude"))
    write_loop(tmp_path, "slash", SLASH_LOOP)
    code, out, err = cli_in_process(capsys, "slash", "--no-llm", "-v")
    assert (code, err) == (0, "")
    assert out.endswith(
        "[1/50] ask -> /ll:check_code types\n"
        "       | fake claude: /ll:check_code types\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n"
    )


def test_loop_stop_signal_ends_cleanly_with_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(
        tmp_path,
        "stopper",
        "name: stopper\ninitial: a\nstates:\n"
        "  a:\n    action: 'echo \"LOOP_STOP: nothing left\"'\n    next: a\n"
        "  done:\n    terminal: true\n",
    )
    code, out, _ = cli_in_process(capsys, "stopper")
    assert code == 0
    assert out.endswith("\nLoop stopped by LOOP_STOP: a (1 iteration, Ns) - nothing left\n")


def test_loop_timeout_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(
        tmp_path,
        "late",
        "name: late\ninitial: a\ntimeout: 1\nstates:\n"
        "  a:\n    action: sleep 5\n    next: done\n  done:\n    terminal: true\n",
    )
    code, _, err = cli_in_process(capsys, "late")
    assert (code, err) == (1, "Loop failed: a (1 iteration, Ns) - loop timeout (1s) reached\n")


def _signal_when_running(name: str, signum: int) -> threading.Thread:
    """Send `signum` to ourselves once the run of `name` has started its action."""
    root = Path.cwd()

    def wait_then_signal() -> None:
        wait_for_action_start(root, name)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=wait_then_signal)
    thread.start()
    return thread


def test_sigterm_interrupts_the_run_with_exit_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "slow", SLOW_LOOP)
    thread = _signal_when_running("slow", signal.SIGTERM)
    started = time.monotonic()
    result = cli_in_process(capsys, "slow")
    thread.join()
    assert time.monotonic() - started < 10
    assert result == (
        130,
        "Running loop: slow\n"
        "Max iterations: 3\n"
        "\n"
        "[1/3] work -> sleep 30\n"
        "       ! Action cancelled\n"
        "\n",
        "Loop interrupted: work (1 iteration, Ns)\nResume with: ll-loop resume slow\n",
    )
    assert _state("slow")["status"] == "interrupted"


def test_background_run_detaches_and_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    code, out, err = cli_in_process(
        capsys, "run", "simple", "-b", "-n", "3", "--no-llm", "--llm-model", "m", "-v"
    )
    assert (code, err) == (0, "")
    assert out == (
        "[T] Started simple in the background (pid N)\n"
        "  log:    .loops/.running/simple.log\n"
        "  status: ll-loop status simple\n"
        "  stop:   ll-loop stop simple\n"
    )
    log = tmp_path / ".loops" / ".running" / "simple.log"
    deadline = time.monotonic() + 20
    while "Loop completed" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert normalize(log.read_text()).endswith("Loop completed: done (1 iteration, Ns)\n")
    assert "Max iterations: 3\n" in log.read_text()
    assert "       | checking\n" in log.read_text()


def test_background_quiet_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "simple", "-b", "-q") == (0, "", "")
    state_file = tmp_path / ".loops" / ".running" / "simple.state.json"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if state_file.exists() and '"completed"' in state_file.read_text():
            break
        time.sleep(0.05)
    assert _state("simple")["status"] == "completed"


def test_invalid_loop_is_reported_one_error_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(
        tmp_path,
        "bad",
        "name: bad\ninitial: a\nstates:\n  a:\n    action: x\n    on_success: nowhere\n"
        "  orphan:\n    action: y\n",
    )
    assert cli_in_process(capsys, "bad") == (
        1,
        "",
        "[T] .loops/bad.yaml: states: No terminal state defined. "
        "At least one state must have 'terminal: true'\n"
        "[T] .loops/bad.yaml: states.a: References unknown state 'nowhere' "
        "(states are: a, orphan)\n"
        "[T] .loops/bad.yaml: states.orphan: State has no transition defined. "
        "Add routing, 'next', or mark as 'terminal: true'\n",
    )
