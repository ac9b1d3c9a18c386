"""Tests for `ll-loop stop` (little_loops.cli.cmd_stop): real processes, real signals."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fixtures.cli_support import (
    LL_LOOP,
    SLOW_LOOP,
    cli_env,
    cli_in_process,
    dead_pid,
    save_state,
    wait_for_action_start,
    write_loop,
)

from little_loops.cli import cmd_stop


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _stop(capsys: pytest.CaptureFixture[str], arg: str) -> tuple[int, str, str]:
    return cli_in_process(capsys, "stop", arg)


def _saved(name: str) -> dict[str, object]:
    data = json.loads(Path(f".loops/.running/{name}.state.json").read_text())
    assert isinstance(data, dict)
    return data


def _reap_in_background(process: subprocess.Popen[str]) -> threading.Thread:
    """Wait for `process` on a thread, so its pid disappears as soon as it exits."""
    thread = threading.Thread(target=process.communicate)
    thread.start()
    return thread


def _python(code: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    return process


def test_without_state_or_when_not_running(capsys: pytest.CaptureFixture[str]) -> None:
    assert _stop(capsys, "nosuch") == (1, "", "[T] No state found for: nosuch\n")
    save_state("done", "completed")
    assert _stop(capsys, "done") == (1, "", "[T] Loop not running: done (status: completed)\n")


def test_dead_runner_is_only_marked_interrupted(capsys: pytest.CaptureFixture[str]) -> None:
    gone = dead_pid()
    save_state("crashed", "running", pid=gone)
    assert _stop(capsys, "crashed") == (
        0,
        f"[T] Marked crashed as interrupted (process {gone} was gone)\n"
        "Resume with: ll-loop resume crashed\n",
        "",
    )
    assert (_saved("crashed")["status"], _saved("crashed")["terminated_by"]) == (
        "interrupted",
        "signal",
    )
    save_state("old", "running")
    assert _stop(capsys, "old")[1].splitlines()[0] == (
        "[T] Marked old as interrupted (no process was recorded)"
    )


def test_runner_on_another_host_is_left_alone(capsys: pytest.CaptureFixture[str]) -> None:
    save_state("far", "running", pid=12345, host="elsewhere.invalid")
    assert _stop(capsys, "far") == (
        1,
        "",
        "[T] Loop far runs on host elsewhere.invalid (pid N)\n",
    )
    assert _saved("far")["status"] == "running"


def test_stops_a_real_running_loop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_loop(tmp_path, "slow", SLOW_LOOP)
    runner = subprocess.Popen(
        [str(LL_LOOP), "slow"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reaper = _reap_in_background(runner)
    wait_for_action_start(tmp_path, "slow")
    started = time.monotonic()
    assert _stop(capsys, "slow") == (
        0,
        "[T] Stopped slow at state 'work' (iteration 1, pid N)\nResume with: ll-loop resume slow\n",
        "",
    )
    assert time.monotonic() - started < 8
    reaper.join()
    assert runner.returncode == 130
    assert _saved("slow")["status"] == "interrupted"


def test_runner_ignoring_sigterm_is_killed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cmd_stop, "STOP_GRACE_SECONDS", 0.3)
    stubborn = _python(
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(60)"
    )
    reaper = _reap_in_background(stubborn)
    save_state("stubborn", "running", pid=stubborn.pid)
    assert _stop(capsys, "stubborn") == (
        0,
        "[T] pid N still running after 0s; killing it\n"
        "[T] Stopped stubborn at state 'work' (iteration 2, pid N)\n"
        "Resume with: ll-loop resume stubborn\n",
        "",
    )
    reaper.join()
    assert _saved("stubborn")["status"] == "interrupted"


def test_state_removed_while_stopping(capsys: pytest.CaptureFixture[str]) -> None:
    save_state("vanishing", "running")
    state_file = Path(".loops/.running/vanishing.state.json").resolve()
    polite = _python(
        "import os, signal, sys, time\n"
        "def bye(*_):\n"
        f"    os.unlink({str(state_file)!r}); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye); print('ready', flush=True); time.sleep(60)"
    )
    reaper = _reap_in_background(polite)
    save_state("vanishing", "running", pid=polite.pid)
    assert _stop(capsys, "vanishing") == (0, "[T] Stopped vanishing (pid N)\n", "")
    reaper.join()
