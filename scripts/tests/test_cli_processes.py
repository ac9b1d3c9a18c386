"""Tests for `little_loops.cli.processes`: finding, signalling and waiting for processes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.cli_support import dead_pid

from little_loops.cli import processes
from little_loops.cli.processes import (
    action_groups,
    is_running,
    leads_a_session,
    send,
    send_group,
    wait_until_gone,
)

_PARENT = """
import subprocess, sys, time
own = subprocess.Popen(["sleep", "30"], start_new_session=True)
shared = subprocess.Popen(["sleep", "30"])
print(own.pid, shared.pid, flush=True)
time.sleep(30)
"""


def test_action_groups_are_the_children_leading_their_own_group() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    own, shared = (int(word) for word in parent.stdout.readline().split())
    try:
        assert action_groups(parent.pid) == [own]
        assert leads_a_session(own) and not leads_a_session(shared)
    finally:
        for pid in (own, shared):
            send(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()
        parent.stdout.close()


def test_without_proc_no_groups_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "PROC", tmp_path / "no-proc")
    assert action_groups(1) == []


def test_odd_proc_entries_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, stat in (
        ("10", "10 (a (b) c) S 7 10 10 0"),  # comm with spaces and parentheses
        ("11", "11 (x) S 7 3 3"),  # not a group leader
        ("12", "12 (x) S seven 12"),  # garbage
        ("13", "13 (x)"),  # cut short
        ("self", "1 (x) S 7 1"),  # not a pid
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "stat").write_text(stat)
    (tmp_path / "14").mkdir()  # vanished: no stat file
    monkeypatch.setattr(processes, "PROC", tmp_path)
    assert action_groups(7) == [10]


def test_a_zombie_has_ended() -> None:
    child = subprocess.Popen(["sleep", "30"])
    child.kill()
    deadline = time.monotonic() + 5
    while is_running(child.pid):  # killed, not reaped: a zombie
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert Path(f"/proc/{child.pid}").exists()
    assert wait_until_gone(child.pid, 0)
    child.wait()


def test_waiting_for_a_live_process_times_out() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert not wait_until_gone(child.pid, 0.1)
        assert is_running(child.pid)
    finally:
        child.kill()
        child.wait()


def test_signals_to_vanished_processes_are_fine() -> None:
    gone = dead_pid()
    send(gone, signal.SIGTERM)
    send_group(gone, signal.SIGTERM)
    assert not leads_a_session(gone)
    assert not is_running(gone)
