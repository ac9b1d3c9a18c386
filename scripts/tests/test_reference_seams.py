"""The reference's test seams (issue 22 item 6; decisions.md "Revised again"; fsm-api.md §0).

Written the way tests of little-loops at aada157e1 were: `unittest.mock.patch` of the dotted
names that code replaced there (`little_loops.fsm.executor.subprocess.run`,
`little_loops.fsm.executor.time.time`, `subprocess.Popen`,
`little_loops.fsm.compilers.compile_paradigm`), direct API calls, exact values.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from unittest.mock import call, patch

import pytest
from fixtures.cli_support import cli_in_process

from little_loops.fsm import executor as executor_module
from little_loops.fsm.executor import ActionResult, DefaultActionRunner, FSMExecutor
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.schema import EvaluateConfig, FSMLoop, StateConfig
from little_loops.fsm.signal_detector import SignalDetector

Completed = subprocess.CompletedProcess[str]
DONE = StateConfig(terminal=True)
SPAWN_PROMPT = "Continue loop execution. Run: ll-loop resume my-loop\n\nContinue from step 3"


@pytest.fixture(autouse=True)
def _plain_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In tmp_path, with the reference's `claude` (no override of its path)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)


def completed(
    stdout: str, returncode: int = 0, stderr: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(args=[], returncode=returncode, stdout=stdout, stderr=stderr)


def fix_loop() -> FSMLoop:
    return FSMLoop(
        name="fix-tests",
        initial="check",
        states={
            "check": StateConfig(
                action="pytest", capture="tests", on_success="done", on_failure="fix"
            ),
            "fix": StateConfig(action="/ll:manage_issue bug fix", next="check"),
            "done": StateConfig(terminal=True),
        },
    )


# --- little_loops.fsm.executor.subprocess.run -------------------------------------------


def test_executor_module_has_the_subprocess_and_time_modules() -> None:
    assert executor_module.subprocess is subprocess
    assert executor_module.time.time is __import__("time").time


def test_patched_subprocess_run_fakes_the_shell_actions_of_a_run() -> None:
    """§8.2: `subprocess.run([...], capture_output=True, text=True, timeout=...)` per action."""
    loop = fix_loop()
    loop.states["fix"].evaluate = EvaluateConfig(type="exit_code")
    with patch("little_loops.fsm.executor.subprocess.run") as mock_run:
        mock_run.side_effect = [
            completed("1 failed\n", returncode=1),
            completed("fixed\n"),
            completed("3 passed\n"),
        ]
        result = FSMExecutor(loop).run()
    assert (result.final_state, result.iterations, result.terminated_by) == ("done", 3, "terminal")
    assert mock_run.call_args_list == [
        call(["bash", "-c", "pytest"], capture_output=True, text=True, timeout=120),
        call(
            ["claude", "--dangerously-skip-permissions", "-p", "/ll:manage_issue bug fix"],
            capture_output=True,
            text=True,
            timeout=120,
        ),
        call(["bash", "-c", "pytest"], capture_output=True, text=True, timeout=120),
    ]
    assert result.captured["tests"]["output"] == "3 passed\n"
    assert result.captured["tests"]["exit_code"] == 0


def test_default_action_runner_calls_patched_subprocess_run() -> None:
    with patch("little_loops.fsm.executor.subprocess.run") as mock_run:
        mock_run.return_value = completed("hello\n", stderr="warn\n")
        result = DefaultActionRunner().run("echo hello", timeout=30, is_slash_command=False)
    mock_run.assert_called_once_with(
        ["bash", "-c", "echo hello"], capture_output=True, text=True, timeout=30
    )
    assert (result.output, result.stderr, result.exit_code) == ("hello\n", "warn\n", 0)
    assert isinstance(result, ActionResult)


def test_patched_subprocess_run_timing_out_is_exit_124() -> None:
    """§8.2: on `TimeoutExpired`: `""`, "Action timed out", 124, the timeout as duration."""
    with patch("little_loops.fsm.executor.subprocess.run") as mock_run:
        mock_run.side_effect = subprocess.TimeoutExpired(cmd=["bash", "-c", "sleep 99"], timeout=5)
        result = DefaultActionRunner().run("sleep 99", timeout=5, is_slash_command=False)
    assert (result.output, result.stderr, result.exit_code, result.duration_ms) == (
        "",
        "Action timed out",
        124,
        5000,
    )


def test_patched_subprocess_run_output_reaches_the_handoff_detector() -> None:
    loop = FSMLoop(
        name="h",
        initial="work",
        states={
            "work": StateConfig(action="do-it", next="done"),
            "done": StateConfig(terminal=True),
        },
    )
    with patch("little_loops.fsm.executor.subprocess.run") as mock_run:
        mock_run.return_value = completed("CONTEXT_HANDOFF: do B next\n")
        result = FSMExecutor(loop, signal_detector=SignalDetector()).run()
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "do B next")


# --- little_loops.fsm.executor.time.time ------------------------------------------------


class ClockAdvancingRunner:
    """A reference-era MockActionRunner: each action takes half a second of the fake clock."""

    def __init__(self, now: list[float]) -> None:
        self.now = now
        self.calls: list[str] = []

    def run(self, action: str, timeout: int, is_slash_command: bool) -> ActionResult:
        self.calls.append(action)
        self.now[0] += 0.5
        return ActionResult(output="", stderr="", exit_code=0, duration_ms=500)


def test_patched_time_time_is_the_loop_clock_for_timeout() -> None:
    """§8.4: `timeout` compares `time.time()` milliseconds with the run's start."""
    now = [1_700_000_000.0]
    runner = ClockAdvancingRunner(now)
    loop = FSMLoop(
        name="slow",
        initial="work",
        states={"work": StateConfig(action="step", next="work")},
        timeout=1,
        max_iterations=10,
    )
    executor = FSMExecutor(loop, action_runner=runner)
    with patch("little_loops.fsm.executor.time.time") as mock_time:
        mock_time.side_effect = lambda: now[0]
        result = executor.run()
    # 0.5s and 1.0s are within the second; after the third action 1.5s is not.
    assert (result.terminated_by, result.iterations, result.duration_ms) == ("timeout", 3, 1500)
    assert runner.calls == ["step", "step", "step"]
    assert executor.start_time_ms == 1_700_000_000_000


# --- subprocess.Popen (spawn) -----------------------------------------------------------


def test_spawn_calls_patched_popen_as_the_reference() -> None:
    """§11: `subprocess.Popen(["claude", "-p", prompt], text=True)`, the process returned."""
    handler = HandoffHandler(HandoffBehavior.SPAWN)
    with patch("subprocess.Popen") as mock_popen:
        result = handler.handle("my-loop", "Continue from step 3")
    mock_popen.assert_called_once_with(["claude", "-p", SPAWN_PROMPT], text=True)
    assert result.behavior is HandoffBehavior.SPAWN
    assert result.continuation_prompt == "Continue from step 3"
    assert result.spawned_process is mock_popen.return_value


def test_spawn_handoff_of_a_persistent_run_with_patched_popen(tmp_path: Path) -> None:
    loop = FSMLoop(
        name="my-loop",
        initial="work",
        states={
            "work": StateConfig(action="work", next="done"),
            "done": StateConfig(terminal=True),
        },
        on_handoff="spawn",
    )
    with (
        patch("little_loops.fsm.executor.subprocess.run") as mock_run,
        patch("subprocess.Popen") as mock_popen,
    ):
        mock_run.return_value = completed("CONTEXT_HANDOFF: Continue from step 3\n")
        result = PersistentExecutor(loop).run()
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "Continue from step 3")
    mock_popen.assert_called_once_with(["claude", "-p", SPAWN_PROMPT], text=True)
    saved = json.loads((tmp_path / ".loops/.running/my-loop.state.json").read_text())
    assert (saved["status"], saved["continuation_prompt"]) == (
        "awaiting_continuation",
        "Continue from step 3",
    )
    assert saved["pid"] == os.getpid()  # the stand-in has no pid to record


# --- little_loops.fsm.compilers.compile_paradigm (ll-loop compile) ----------------------

STUB = """\
name: stub
initial: a
states:
  a:
    action: 'true'
    next: done
  done:
    terminal: true
max_iterations: 50
"""


def stub_loop() -> FSMLoop:
    return FSMLoop(
        name="stub",
        initial="a",
        states={"a": StateConfig(action="true", next="done"), "done": StateConfig(terminal=True)},
    )


def test_compile_calls_patched_compile_paradigm(capsys: pytest.CaptureFixture[str]) -> None:
    Path("goal.yaml").write_text('paradigm: goal\ngoal: "Tests pass"\ntools: ["true"]\n')
    with patch("little_loops.fsm.compilers.compile_paradigm") as mock_compile:
        mock_compile.return_value = stub_loop()
        outcome = cli_in_process(capsys, "compile", "goal.yaml")
    mock_compile.assert_called_once_with(
        {"paradigm": "goal", "goal": "Tests pass", "tools": ["true"]}
    )
    assert outcome == (0, "[T] Compiled to: goal.fsm.yaml\n", "")
    assert Path("goal.fsm.yaml").read_text() == STUB


def test_compile_reports_a_value_error_of_patched_compile_paradigm(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("goal.yaml").write_text("paradigm: goal\n")
    with patch("little_loops.fsm.compilers.compile_paradigm") as mock_compile:
        mock_compile.side_effect = ValueError("Unknown paradigm: stubbed")
        outcome = cli_in_process(capsys, "compile", "goal.yaml")
    assert outcome == (
        1,
        "",
        "[T] Compilation error: goal.yaml: Unknown paradigm: stubbed\n",
    )
    assert not Path("goal.fsm.yaml").exists()


def test_compile_checks_what_patched_compile_paradigm_returns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("goal.yaml").write_text('paradigm: goal\ngoal: "x"\n')
    no_terminal = FSMLoop(name="x", initial="a", states={"a": StateConfig(action="x", next="a")})
    with patch("little_loops.fsm.compilers.compile_paradigm", return_value=no_terminal):
        outcome = cli_in_process(capsys, "compile", "goal.yaml")
    assert outcome == (
        1,
        "",
        "[T] Compilation error: goal.yaml: states: No terminal state defined. "
        "At least one state must have 'terminal: true'\n",
    )
