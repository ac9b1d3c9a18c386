"""Tests for `little_loops.cli.liveness`: is the recorded runner still there?"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from fixtures.cli_support import dead_pid

from little_loops.cli.liveness import Owner, describe_status, owner_of, process_alive
from little_loops.fsm.persistence import LoopState
from little_loops.fsm.store.locking import acquire_loop_lock


def _state(status: str = "running", pid: int | None = None, host: str | None = None) -> LoopState:
    return LoopState("x", "s", 1, {}, None, None, "t0", "t1", status, pid=pid, host=host)


def test_owner_of() -> None:
    assert owner_of(_state()) is Owner.UNKNOWN
    assert owner_of(_state(pid=os.getpid())) is Owner.ALIVE
    assert owner_of(_state(pid=os.getpid(), host=socket.gethostname())) is Owner.ALIVE
    assert owner_of(_state(pid=dead_pid())) is Owner.GONE
    assert owner_of(_state(pid=os.getpid(), host="elsewhere.invalid")) is Owner.ELSEWHERE


def test_describe_status() -> None:
    dead = dead_pid()
    assert describe_status(_state("completed", pid=dead), "x") == "completed"
    assert describe_status(_state(pid=os.getpid()), "x") == f"running (pid {os.getpid()})"
    assert (
        describe_status(_state(pid=dead), "x")
        == f"interrupted (process {dead} gone; ll-loop resume x)"
    )
    assert (
        describe_status(_state(pid=7, host="far.invalid"), "x")
        == "running (pid 7 on host far.invalid)"
    )
    assert describe_status(_state(), "x") == "running"


def test_process_alive() -> None:
    assert process_alive(_state(pid=os.getpid())) is True
    assert process_alive(_state(pid=dead_pid())) is False
    assert process_alive(_state()) is None
    assert process_alive(_state(pid=7, host="far.invalid")) is None
    assert process_alive(_state("completed", pid=os.getpid())) is None


def test_the_lock_decides_once_the_loop_has_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    running = tmp_path / ".loops" / ".running"
    live_pid = _state(pid=os.getpid())  # "x" run by a live process, as far as the pid says
    assert owner_of(live_pid) is Owner.ALIVE  # no lock file: the pid is all we know
    with acquire_loop_lock(running, "x"):
        assert owner_of(live_pid) is Owner.ALIVE
    assert owner_of(live_pid) is Owner.GONE  # a free lock: that pid is not running "x"
    assert describe_status(live_pid, "x") == (
        f"interrupted (process {os.getpid()} gone; ll-loop resume x)"
    )
