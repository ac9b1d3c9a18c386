"""Tests for `ll-loop stop` (little_loops.cli.cmd_stop): real processes, real signals."""

from __future__ import annotations

import errno
import json
import os
import signal
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
from little_loops.fsm.persistence import StatePersistence
from little_loops.fsm.store.locking import AlreadyRunningError, acquire_loop_lock


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
        "[T] Stopped stubborn at state 'work' (iteration 2, pid N)\n"
        "Resume with: ll-loop resume stubborn\n",
        "[T] pid N still running after 0s; killing it\n",
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


# --- stop and the lock, the spawned session, failures -------------------------------------


def _sleeper() -> subprocess.Popen[str]:
    return _python("import time; print('ready', flush=True); time.sleep(60)")


def test_an_awaiting_state_with_an_unrelated_live_pid_is_left_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    unrelated = _sleeper()
    reaper = _reap_in_background(unrelated)
    try:
        save_state("paused", "awaiting_continuation", pid=unrelated.pid)
        assert _stop(capsys, "paused") == (
            1,
            "",
            "[T] Loop not running: paused (status: awaiting_continuation)\n",
        )
        assert unrelated.poll() is None
    finally:
        unrelated.kill()
        reaper.join()


def test_no_permission_to_signal_is_reported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(pid: int, signum: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cmd_stop, "send", refuse)
    save_state("theirs", "running", pid=os.getpid())
    assert _stop(capsys, "theirs") == (
        1,
        "",
        "[T] Cannot stop theirs: no permission to signal pid N\n",
    )


def test_a_loop_started_again_meanwhile_is_not_marked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def taken(running_dir: Path, loop_name: str, **options: object) -> None:
        raise AlreadyRunningError(loop_name, 4242)

    monkeypatch.setattr(cmd_stop, "acquire_loop_lock", taken)
    save_state("raced", "running", pid=dead_pid())
    assert _stop(capsys, "raced") == (
        1,
        "",
        "[T] Loop raced was started again meanwhile; try again\n",
    )
    assert _saved("raced")["status"] == "running"


def test_a_state_that_cannot_be_marked_is_reported(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    save_state("crashed", "running", pid=dead_pid())
    before = Path(".loops/.running/crashed.state.json").read_bytes()

    def full(source: object, target: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    assert _stop(capsys, "crashed") == (
        1,
        "",
        "[T] .loops/.running: cannot mark crashed interrupted: No space left on device\n",
    )
    assert Path(".loops/.running/crashed.state.json").read_bytes() == before


def test_a_crashed_run_with_a_lock_file_is_marked_even_if_its_pid_was_reused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    save_state("reused", "running", pid=os.getpid())  # "reused": a live, unrelated pid
    acquire_loop_lock(Path(".loops/.running"), "reused").release()  # a run held it once
    assert _stop(capsys, "reused") == (
        0,
        f"[T] Marked reused as interrupted (process {os.getpid()} was gone)\n"
        "Resume with: ll-loop resume reused\n",
        "",
    )
    event = json.loads(Path(".loops/.running/reused.events.jsonl").read_text().splitlines()[-1])
    assert (event["event"], event["stopped_by"]) == ("loop_complete", "ll-loop stop (process gone)")


def test_a_queued_run_holding_the_lock_is_stopped_by_pid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    save_state("queued", "completed", pid=dead_pid())
    holder = _python(
        "import time; from pathlib import Path; "
        "from little_loops.fsm.store.locking import acquire_loop_lock; "
        "lock = acquire_loop_lock(Path('.loops/.running'), 'queued'); "
        "print('ready', flush=True); time.sleep(60)"
    )
    reaper = _reap_in_background(holder)
    assert _stop(capsys, "queued") == (0, "[T] Stopped queued (pid N)\n", "")
    reaper.join()
    assert holder.returncode == -signal.SIGTERM


def test_session_of_a_vanished_runner_is_none() -> None:
    persistence = StatePersistence("x", Path(".loops"))
    assert cmd_stop._session_of(dead_pid(), persistence) is None
    assert cmd_stop._session_of(None, persistence) is None
