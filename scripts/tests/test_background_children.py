"""What an action starts with `&` runs until the run ends, then it is stopped.

Issue 11 item 4. Port-free: the background process is a shell loop writing its pid to a
file and lines to its stdout and stderr; a later state checks it is alive (`kill -0`).
Real `ll-loop` processes in `tmp_path`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, run_cli, write_loop

from little_loops.cli.processes import is_running, wait_until_gone

# `start` leaves a loop in the background that prints to stdout and stderr until stopped;
# `check` passes only if it is still alive (not a zombie) and its stdout log still grows
# after the action ended, with its stderr in the action's stderr log.
BACKGROUND_LOOP = """\
name: bg
initial: start
max_iterations: 10
states:
  start:
    action: >-
      (echo $BASHPID > bg.pid;
      while true; do echo out-line; echo err-line >&2; sleep 0.05; done) &
      while [ ! -s bg.pid ]; do sleep 0.01; done
    next: check
  check:
    action: >-
      [ "$(cut -d' ' -f3 /proc/$(cat bg.pid)/stat)" != Z ] || exit 1;
      log=.loops/.running/bg.logs/1-start.log;
      seen=$(cat $log 2>/dev/null | wc -l);
      for i in $(seq 200); do
      [ "$(cat $log 2>/dev/null | wc -l)" -gt "$seen" ] &&
      grep -q err-line .loops/.running/bg.logs/1-start.stderr.log 2>/dev/null && exit 0;
      sleep 0.05; done; exit 1
    on_success: {after_check}
    on_failure: failed
  pause:
    action: 'echo "CONTEXT_HANDOFF: later"'
    next: done
  wait:
    action: sleep 60
    next: done
  failed:
    terminal: true
  done:
    terminal: true
"""


def _loop(after_check: str) -> str:
    return BACKGROUND_LOOP.replace("{after_check}", after_check)


def _background_pid(root: Path) -> int:
    return int((root / "bg.pid").read_text())


def _stop_if_left(pid: int) -> None:
    if is_running(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("after_check", "exit_code"), [("done", 0), ("pause", 3)])
def test_background_process_lives_until_the_run_ends_then_is_stopped(
    tmp_path: Path, after_check: str, exit_code: int
) -> None:
    write_loop(tmp_path, "bg", _loop(after_check))
    result = run_cli(tmp_path, "run", "bg", "-q")
    pid = _background_pid(tmp_path)
    try:
        assert result.returncode == exit_code, result.stderr
        events = (tmp_path / ".loops/.running/bg.events.jsonl").read_text()
        assert '"to": "failed"' not in events  # `check` saw it alive and logging
        assert not is_running(pid)  # stopped when the run ended (normally, or paused)
    finally:
        _stop_if_left(pid)


def test_background_process_is_stopped_when_the_run_is_interrupted(tmp_path: Path) -> None:
    write_loop(tmp_path, "bg", _loop("wait"))
    process = subprocess.Popen(
        [str(LL_LOOP), "run", "bg", "-q"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    events = tmp_path / ".loops/.running/bg.events.jsonl"
    deadline = time.monotonic() + 30
    while '"state": "wait"' not in (events.read_text() if events.exists() else ""):
        assert time.monotonic() < deadline, "the run never reached 'wait'"
        time.sleep(0.02)
    pid = _background_pid(tmp_path)
    try:
        assert is_running(pid)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 130
        assert not is_running(pid)
    finally:
        process.kill()
        _stop_if_left(pid)


SETSID_LOOP = """\
name: detached
initial: start
states:
  start:
    action: setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > detached.pid
    next: done
  done:
    terminal: true
"""


def test_a_process_started_with_setsid_outlives_the_run(tmp_path: Path) -> None:
    """The documented way to keep something running after the run ends."""
    write_loop(tmp_path, "detached", SETSID_LOOP)
    result = run_cli(tmp_path, "run", "detached", "-q")
    pid = int((tmp_path / "detached.pid").read_text())
    try:
        assert result.returncode == 0, result.stderr
        assert is_running(pid)
    finally:
        _stop_if_left(pid)
        wait_until_gone(pid, 5)


def test_a_background_process_with_its_output_redirected_is_kept_then_stopped(
    tmp_path: Path,
) -> None:
    """Its shell ends with the pipe closed at once; the group is still kept and stopped."""
    from little_loops.fsm.process.runner import DefaultActionRunner

    pid_file = tmp_path / "pid"
    runner = DefaultActionRunner()
    result = runner.run(f"sleep 300 > /dev/null 2>&1 & echo $! > {pid_file}", 20, False)
    pid = int(pid_file.read_text())
    try:
        assert result.exit_code == 0
        assert is_running(pid)
        runner.stop_background()
        assert not is_running(pid)
    finally:
        _stop_if_left(pid)
