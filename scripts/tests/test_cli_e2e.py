"""End-to-end tests: the installed `ll-loop` in a temporary project, real processes.

Each test runs `ll-loop` as a user would (HOME in tmp_path, a fake `claude` on PATH where
a slash command is used) and checks the exit code, what was printed and the files left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from fixtures.cli_support import (
    ERROR_LOOP,
    HANDOFF_LOOP,
    LL_LOOP,
    SIMPLE_LOOP,
    SLOW_LOOP,
    cli_env,
    install_fake_claude,
    normalize,
    run_cli,
    wait_for_action_start,
    write_loop,
)


def _status(root: Path, name: str) -> str:
    data = json.loads((root / ".loops" / ".running" / f"{name}.state.json").read_text())
    return str(data["status"])


def _start(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(LL_LOOP), *args],
        cwd=root,
        env=cli_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # like a terminal job: Ctrl-C goes to its process group
    )


class _Reaper:
    """Collects a process's output on a thread, so it is reaped the moment it exits."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.output: tuple[str, str] = ("", "")
        self._thread = threading.Thread(target=self._collect)
        self._thread.start()

    def _collect(self) -> None:
        self.output = self.process.communicate()

    def join(self, timeout: float = 15) -> tuple[int, str, str]:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "ll-loop did not end"
        out, err = self.output
        return self.process.returncode, normalize(out), normalize(err)


def test_full_run(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    done = run_cli(tmp_path, "simple")
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
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
    assert _status(tmp_path, "simple") == "completed"
    history = run_cli(tmp_path, "history", "simple", "--json")
    events = [event["event"] for event in json.loads(history.stdout)]
    assert events == [
        "loop_start",
        "state_enter",
        "action_start",
        "action_complete",
        "evaluate",
        "route",
        "loop_complete",
    ]


def test_failing_loop_exit_code(tmp_path: Path) -> None:
    write_loop(tmp_path, "erroring", ERROR_LOOP)
    done = run_cli(tmp_path, "erroring")
    assert (done.returncode, normalize(done.stderr)) == (
        1,
        "Loop failed: check (1 iteration, Ns) - "
        "No valid transition for verdict 'error' in state 'check'\n"
        # What made the verdict `error` (guards' error list).
        "Errors during the run (1):\n"
        "  iteration 1, check: error: exit code 3\n",
    )
    status = run_cli(tmp_path, "status", "erroring")
    assert status.stdout.splitlines()[1] == "Status: failed"
    assert normalize(status.stdout).splitlines()[-4:] == [
        "Error: No valid transition for verdict 'error' in state 'check'",
        "Elapsed: Ns",  # issue 23 item 15
        "Errors during the run (1):",
        "  iteration 1, check: error: exit code 3",
    ]


def test_handoff_pause_and_resume(tmp_path: Path) -> None:
    write_loop(tmp_path, "handoff", HANDOFF_LOOP)
    paused = run_cli(tmp_path, "handoff")
    assert paused.returncode == 3
    assert normalize(paused.stdout).endswith(
        "\nLoop paused for handoff: step (1 iteration, Ns)\n"
        "Continuation: Continue with module B\n"
        "Resume with: ll-loop resume handoff\n"
    )
    assert run_cli(tmp_path, "status", "handoff").stdout.splitlines()[-1] == (
        "Continuation context: Continue with module B"
    )
    resumed = run_cli(tmp_path, "resume", "handoff")
    assert resumed.returncode == 0
    assert normalize(resumed.stdout).splitlines()[-1] == "Loop completed: done (2 iterations, Ns)"
    again = run_cli(tmp_path, "resume", "handoff")
    assert (again.returncode, normalize(again.stderr)) == (
        1,
        "[T] loop 'handoff' already completed; start a new run with: ll-loop run handoff\n",
    )


def test_stop_ends_a_running_loop_which_stays_resumable(tmp_path: Path) -> None:
    write_loop(tmp_path, "slow", SLOW_LOOP)
    runner = _Reaper(_start(tmp_path, "slow"))
    wait_for_action_start(tmp_path, "slow")
    started = time.monotonic()
    stop = run_cli(tmp_path, "stop", "slow")
    assert time.monotonic() - started < 5
    assert (stop.returncode, normalize(stop.stdout), stop.stderr) == (
        0,
        "[T] Stopped slow at state 'work' (iteration 1, pid N)\nResume with: ll-loop resume slow\n",
        "",
    )
    code, out, err = runner.join()
    assert (code, err) == (
        130,
        "Loop interrupted: work (1 iteration, Ns)\nResume with: ll-loop resume slow\n",
    )
    assert out.endswith("[1/3] work -> sleep 30\n       ! Action cancelled\n\n")
    assert _status(tmp_path, "slow") == "interrupted"
    write_loop(tmp_path, "slow", SLOW_LOOP.replace("sleep 30", "sleep 0"))
    resumed = run_cli(tmp_path, "resume", "slow")
    assert (resumed.returncode, normalize(resumed.stdout), resumed.stderr) == (
        0,
        "Resuming loop 'slow' from state 'work' (iteration 1)\n"
        "Max iterations: 3\n"
        "\n"
        "[1/3] work -> sleep 0\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n",
        "",
    )


def test_ctrl_c_interrupts_with_exit_130(tmp_path: Path) -> None:
    write_loop(tmp_path, "slow", SLOW_LOOP)
    process = _start(tmp_path, "slow")
    runner = _Reaper(process)
    wait_for_action_start(tmp_path, "slow")
    os.killpg(process.pid, signal.SIGINT)
    assert runner.join() == (
        130,
        "Running loop: slow\n"
        "Max iterations: 3\n"
        "\n"
        "[1/3] work -> sleep 30\n"
        "       ! Action cancelled\n"
        "\n",
        "Loop interrupted: work (1 iteration, Ns)\nResume with: ll-loop resume slow\n",
    )
    assert _status(tmp_path, "slow") == "interrupted"
    assert run_cli(tmp_path, "list", "--running").stdout == (
        "Unfinished runs:\n  slow: work (iteration 1) - interrupted\n"
    )


def test_background_mode(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    done = run_cli(tmp_path, "simple", "--background")
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "[T] Started simple in the background (pid N)\n"
        "  log:    .loops/.running/simple.log\n"
        "  status: ll-loop status simple\n"
        "  stop:   ll-loop stop simple\n",
        "",
    )
    log = tmp_path / ".loops" / ".running" / "simple.log"
    deadline = time.monotonic() + 20
    while "Loop completed" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    assert normalize(log.read_text()) == (
        "Running loop: simple\n"
        "Max iterations: 5\n"
        "\n"
        "[1/5] check -> echo checking; true\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n"
    )
    assert _status(tmp_path, "simple") == "completed"


@pytest.mark.slow
def test_list_piped_into_head_exits_quietly(tmp_path: Path) -> None:
    loops = tmp_path / ".loops"
    loops.mkdir()
    for number in range(3000):  # more than a pipe buffer of names
        (loops / f"a-loop-with-a-rather-long-name-{number:04}.yaml").write_text("")
    done = subprocess.run(
        ["bash", "-c", f'"{LL_LOOP}" list | head -1; echo "exit ${{PIPESTATUS[0]}}"'],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.stdout, done.stderr) == ("Available loops:\nexit 141\n", "")


SLASH_LOOP = """\
name: slash
initial: ask
states:
  ask:
    action: /ll:check_code types
    evaluate:
      type: output_contains
      pattern: "fake claude: /ll:check_code"
    on_success: done
    on_failure: ask
  done:
    terminal: true
"""


def test_slash_command_runs_claude_from_path(tmp_path: Path) -> None:
    write_loop(tmp_path, "slash", SLASH_LOOP)
    env = cli_env(tmp_path, extra_path=install_fake_claude(tmp_path))
    done = run_cli(tmp_path, "slash", "-v", env=env)
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "Running loop: slash\n"
        "Max iterations: 50\n"
        "\n"
        "[1/50] ask -> /ll:check_code types\n"
        "       | fake claude: /ll:check_code types\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n",
        "",
    )


def test_slash_command_without_claude_fails_with_the_reason(tmp_path: Path) -> None:
    write_loop(tmp_path, "slash", SLASH_LOOP)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(tmp_path / "no-such-claude")
    done = run_cli(tmp_path, "slash", "--no-llm", env=env)
    reason = (
        f"claude CLI not found at {tmp_path / 'no-such-claude'}: install Claude Code there "
        "or point LL_CLAUDE_BIN at the `claude` binary"
    )
    assert (done.returncode, normalize(done.stderr)) == (
        1,
        f"Loop failed: ask (1 iteration, Ns) - {reason}\n",
    )
    assert normalize(done.stdout).endswith(
        f"[1/50] ask -> /ll:check_code types\n       ✗ error - {reason}\n\n"
    )
