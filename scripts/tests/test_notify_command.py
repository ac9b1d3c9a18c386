"""Tests for `fsm.process.notify_command`: the detached, bounded, logged notify command.

Real processes in `tmp_path`; every wait is on a condition (a line in a file, a process
gone), with a generous limit.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fixtures.notify_support import (
    WAIT_SECONDS,
    lines_of,
    log_outcomes,
    process_gone,
    wait_until,
)

from little_loops.fsm.process.notify_command import (
    append_log_line,
    start_notify_command,
    supervise,
)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "OUT": str(tmp_path / "out"), **extra}


def _reaped(supervisor: subprocess.Popen[bytes] | None) -> None:
    assert supervisor is not None
    supervisor.wait(timeout=WAIT_SECONDS)  # its log line is written: it is about to exit


def test_the_command_runs_with_its_environment_and_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    supervisor = start_notify_command(
        'echo "$GREETING" > "$OUT"', _env(tmp_path, GREETING="hello"), label="done", log_path=log
    )
    assert log_outcomes(log, 1) == ["done exit 0"]
    assert (tmp_path / "out").read_text() == "hello\n"
    _reaped(supervisor)


def test_the_command_gets_the_environment_as_given(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    env = {key: value for key, value in _env(tmp_path).items() if key != "PYTHONPATH"}
    command = 'echo "${PYTHONPATH-unset} $(pwd)" > "$OUT"'
    supervisor = start_notify_command(command, env, label="done", log_path=log)
    assert log_outcomes(log, 1) == ["done exit 0"]
    assert (tmp_path / "out").read_text() == f"unset {os.getcwd()}\n"
    _reaped(supervisor)


def test_a_failing_command_is_logged_with_its_last_stderr_line(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    command = "echo first >&2; echo 'webhook said no' >&2; exit 3"
    supervisor = start_notify_command(command, _env(tmp_path), label="failed", log_path=log)
    assert log_outcomes(log, 1) == ["failed exit 3: webhook said no"]
    _reaped(supervisor)


def test_a_missing_program_is_logged_as_the_shell_reports_it(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    command = "no-such-notifier-xyz hi"
    supervisor = start_notify_command(command, _env(tmp_path), label="done", log_path=log)
    [outcome] = log_outcomes(log, 1)
    assert outcome.startswith("done exit 127: ")
    assert "no-such-notifier-xyz" in outcome and "not found" in outcome
    _reaped(supervisor)


@pytest.mark.slow
def test_a_command_past_its_timeout_is_killed_with_its_whole_group(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    pid_file = tmp_path / "pid"
    # The shell waits on a child of its group: both must go.
    command = f'sleep 300 & echo $! > "{pid_file}"; wait'
    supervisor = start_notify_command(
        command, _env(tmp_path), label="stalled", log_path=log, timeout=2
    )
    assert log_outcomes(log, 1) == ["stalled timed out after 2s, killed"]
    sleeper = int(pid_file.read_text())
    wait_until(lambda: process_gone(sleeper), "the notify command's child killed")
    _reaped(supervisor)


def test_supervise_reports_a_signal_death(tmp_path: Path) -> None:
    assert supervise("kill -TERM $$", timeout=60) == "killed by signal 15"


def test_a_log_that_cannot_be_written_is_given_up_quietly(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "x.notify.log"
    assert start_notify_command("true", _env(tmp_path), label="done", log_path=missing) is None
    append_log_line(missing, "done", "exit 0")  # no exception either
    assert not missing.parent.exists()


def test_a_command_that_cannot_be_given_to_a_process_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    assert start_notify_command("echo a\0b", _env(tmp_path), label="done", log_path=log) is None
    assert log_outcomes(log, 1) == ["done could not start: embedded null byte"]


def test_log_lines_are_one_line_each(tmp_path: Path) -> None:
    log = tmp_path / "x.notify.log"
    append_log_line(log, "failed", "exit 1: two\nlines")
    append_log_line(log, "completed", "exit 0")
    assert [line.split(" ", 1)[1] for line in lines_of(log)] == [
        "failed exit 1: two lines",
        "completed exit 0",
    ]


def test_a_call_still_running_when_its_run_is_archived_logs_into_the_archived_log(
    tmp_path: Path,
) -> None:
    """Issue 23 item 22: a new `run` moves the old run's notify log to the history while
    the old run's last call may still be running; its line must follow the file it was
    started with, not land in the next run's log at the old path."""
    log = tmp_path / "x.notify.log"
    go = tmp_path / "go"
    command = f'while [ ! -e "{go}" ]; do sleep 0.02; done'
    supervisor = start_notify_command(command, _env(tmp_path), label="completed", log_path=log)
    archived = tmp_path / "history" / "x.notify.log"
    archived.parent.mkdir()
    os.replace(log, archived)  # what `archive_previous_run` does
    go.touch()
    _reaped(supervisor)
    assert log_outcomes(archived, 1) == ["completed exit 0"]
    assert not log.exists()
