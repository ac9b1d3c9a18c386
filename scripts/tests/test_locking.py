"""Tests for `little_loops.fsm.store.locking`: real `flock`s, real processes, real files."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from little_loops.fsm.errors import LoopError, RunFilesError
from little_loops.fsm.store import locking
from little_loops.fsm.store.locking import (
    AlreadyRunningError,
    LockHolder,
    LoopBusyError,
    ScopeBusyError,
    ScopeConflict,
    acquire_loop_lock,
    find_conflict,
    normalise_scope,
    read_holder,
    shared_path,
)


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(locking, "POLL_SECONDS", 0.02)
    return tmp_path / ".loops" / ".running"


def _record(running: Path, name: str) -> dict[str, object]:
    data = json.loads((running / f"{name}.lock").read_text())
    assert isinstance(data, dict)
    return data


_HOLDER = """
import sys, time
from pathlib import Path
from little_loops.fsm.store.locking import acquire_loop_lock
lock = acquire_loop_lock(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
print("held", flush=True)
{after}
"""


def _hold_in_child(running: Path, name: str, *scope: str, after: str = "time.sleep(60)"):
    """A separate process holding the lock of `name` (ready when this returns)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER.format(after=after), str(running), name, *scope],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "held\n"
    return child


# The holder lets go once told (a line on its stdin): when the waiter has said it waits,
# not after a fixed time a loaded machine may outrun (issue 29).
LET_GO_WHEN_TOLD = "sys.stdin.readline()"


def _let_go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


def _end(child: subprocess.Popen[str]) -> None:
    child.kill()
    child.wait()
    assert child.stdout is not None
    child.stdout.close()


# --- the loop lock -----------------------------------------------------------------------


def test_lock_records_the_holder_and_is_released(running: Path) -> None:
    lock = acquire_loop_lock(running, "demo")
    record = _record(running, "demo")
    assert (record["pid"], record["host"], record["loop"], record["scope"]) == (
        os.getpid(),
        socket.gethostname(),
        "demo",
        [],
    )
    assert read_holder(running, "demo") == LockHolder("demo", os.getpid(), socket.gethostname(), ())
    assert lock.held
    lock.release()
    lock.release()  # idempotent
    assert not lock.held
    assert read_holder(running, "demo") is None
    with acquire_loop_lock(running, "demo") as again:
        assert again.held
    assert not again.held


def test_second_start_is_refused_naming_the_holder(running: Path) -> None:
    with acquire_loop_lock(running, "demo"), pytest.raises(AlreadyRunningError) as info:
        acquire_loop_lock(running, "demo")
    assert str(info.value) == f"Loop demo is already running (pid {os.getpid()})"
    assert isinstance(info.value, LoopBusyError) and isinstance(info.value, LoopError)
    assert (info.value.loop_name, info.value.pid) == ("demo", os.getpid())


def test_other_loop_names_do_not_block_each_other(running: Path) -> None:
    with acquire_loop_lock(running, "one"), acquire_loop_lock(running, "two"):
        assert read_holder(running, "one") is not None
        assert read_holder(running, "two") is not None
    assert read_holder(running, "nosuch") is None


def test_a_killed_holder_never_leaves_a_stale_lock(running: Path) -> None:
    child = _hold_in_child(running, "demo")
    with pytest.raises(AlreadyRunningError, match=f"pid {child.pid}"):
        acquire_loop_lock(running, "demo")
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.stdout is not None
    child.stdout.close()
    with acquire_loop_lock(running, "demo") as lock:
        assert lock.held


def test_actions_started_by_the_holder_do_not_inherit_the_lock(running: Path) -> None:
    # The holder starts a long-lived child with close_fds=False, then dies: the lock must
    # be free although the child (like an action in its own session) still runs.
    after = (
        "import subprocess\n"
        "kid = subprocess.Popen(['sleep', '30'], close_fds=False, start_new_session=True)\n"
        "print(kid.pid, flush=True)\n"
        "time.sleep(60)"
    )
    child = _hold_in_child(running, "demo", after=after)
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    try:
        _end(child)
        os.kill(grandchild, 0)  # still alive
        with acquire_loop_lock(running, "demo") as lock:
            assert lock.held
    finally:
        os.kill(grandchild, signal.SIGKILL)


def test_waiting_for_the_lock_takes_it_when_the_holder_ends(running: Path) -> None:
    child = _hold_in_child(running, "demo", after=LET_GO_WHEN_TOLD)
    said: list[str] = []

    def waiting(line: str) -> None:
        said.append(line)
        _let_go(child)

    started = time.monotonic()
    with acquire_loop_lock(running, "demo", wait_for_lock=10, on_wait=waiting) as lock:
        assert lock.held
    assert time.monotonic() - started < 5
    assert said == [f"Loop demo is still held (pid {child.pid}); waiting up to 10s"]
    child.wait()
    assert child.stdout is not None
    child.stdout.close()


def test_waiting_for_the_lock_gives_up_after_the_limit(running: Path) -> None:
    with acquire_loop_lock(running, "demo"):
        started = time.monotonic()
        with pytest.raises(AlreadyRunningError):
            acquire_loop_lock(running, "demo", wait_for_lock=0.2)
        assert 0.2 <= time.monotonic() - started < 2


def test_unreadable_record_gives_an_unknown_pid(running: Path) -> None:
    with acquire_loop_lock(running, "demo"):
        (running / "demo.lock").write_text("[1, 2]")
        with pytest.raises(AlreadyRunningError) as info:
            acquire_loop_lock(running, "demo")
        assert str(info.value) == "Loop demo is already running (pid unknown)"
        (running / "demo.lock").write_text('{"pid": true, "host": 3, "scope": "x"}')
        assert read_holder(running, "demo") == LockHolder("demo", None, None, ())
        (running / "demo.lock").write_text("not json")
        assert read_holder(running, "demo") == LockHolder("demo", None, None, ())


# --- scopes ------------------------------------------------------------------------------


def test_normalise_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    root = os.path.realpath(tmp_path)
    assert normalise_scope(["src/", "./src/../src", "link/x", "~/notes", "/etc/"]) == [
        f"{root}/src",
        f"{root}/src",
        f"{root}/real/x",
        f"{root}/home/notes",
        "/etc",
    ]
    assert normalise_scope(["a"], base=Path("/base")) == ["/base/a"]


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        ("/p/src", "/p/src", "/p/src"),
        ("/p/src", "/p/src/lib", "/p/src/lib"),
        ("/p/src/lib", "/p/src", "/p/src/lib"),
        ("/", "/p", "/p"),
        ("/p/src", "/p/srcx", None),
        ("/p/a", "/p/b", None),
    ],
)
def test_shared_path(first: str, second: str, shared: str | None) -> None:
    assert shared_path(first, second) == shared


def test_find_conflict_returns_the_first_overlap() -> None:
    holders = [
        LockHolder("a", 1, "h", ("/p/docs",)),
        LockHolder("b", 2, "h", ("/p/x", "/p/src")),
    ]
    assert find_conflict(["/p/src/lib"], holders) == ScopeConflict(holders[1], "/p/src/lib")
    assert find_conflict(["/p/other"], holders) is None
    assert find_conflict([], holders) is None


def test_conflict_shows_paths_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    holder = LockHolder("a", 1, "h", ())
    inside = os.path.realpath(tmp_path / "src")
    assert ScopeConflict(holder, inside).shown_path == "src"
    assert ScopeConflict(holder, os.path.realpath(tmp_path)).shown_path == "."
    assert ScopeConflict(holder, "/elsewhere/x").shown_path == "/elsewhere/x"


def test_overlapping_scope_is_refused_without_touching_the_other(running: Path) -> None:
    with acquire_loop_lock(running, "first", ["src"]) as first:
        before = (running / "first.lock").read_bytes()
        with pytest.raises(ScopeBusyError) as info:
            acquire_loop_lock(running, "second", ["./src/lib/"])
        assert str(info.value) == (
            f"Loop second shares scope 'src/lib' with running loop first (pid {os.getpid()})"
        )
        assert info.value.user_lines() == [
            str(info.value),
            "  to wait until it ends instead: add --queue",
        ]
        assert (running / "first.lock").read_bytes() == before
        assert read_holder(running, "second") is None  # the refused lock was let go
        with acquire_loop_lock(running, "third", ["docs"]) as third:
            assert third.held
        with acquire_loop_lock(running, "fourth") as no_scope:
            assert no_scope.held
        assert first.held
    with acquire_loop_lock(running, "second", ["src/lib"]) as second:
        assert _record(running, "second")["scope"] == [os.path.realpath("src/lib")]
        assert second.held


def test_a_dead_holder_never_blocks_a_scope(running: Path) -> None:
    child = _hold_in_child(running, "first", "src")
    with pytest.raises(ScopeBusyError):
        acquire_loop_lock(running, "second", ["src"])
    _end(child)
    assert json.loads((running / "first.lock").read_text())["scope"]  # stale record stays
    with acquire_loop_lock(running, "second", ["src"]) as lock:
        assert lock.held


def test_queue_waits_for_the_scope_and_says_so_once(running: Path) -> None:
    child = _hold_in_child(running, "first", "src", after=LET_GO_WHEN_TOLD)
    said: list[str] = []

    def waiting(line: str) -> None:
        said.append(line)
        _let_go(child)

    with acquire_loop_lock(running, "second", ["src"], queue=True, on_wait=waiting) as lock:
        assert lock.held
        assert _record(running, "second")["scope"] == [os.path.realpath("src")]
    assert said == [
        f"Loop second waits for running loop first (pid {child.pid}), which shares scope "
        "'src' (Ctrl-C to give up)"
    ]
    child.wait()
    assert child.stdout is not None
    child.stdout.close()


def test_a_queued_run_holds_its_name_but_not_its_scope(running: Path) -> None:
    """Two queued loops never wait for each other: only a started run claims a scope."""
    with acquire_loop_lock(running, "first", ["src"]) as first:
        waiting: list[str] = []
        got: list[bool] = []

        def queued() -> None:
            lock = acquire_loop_lock(running, "second", ["src"], queue=True, on_wait=waiting.append)
            got.append(lock.held)
            lock.release()

        thread = threading.Thread(target=queued)
        thread.start()
        deadline = time.monotonic() + 5
        while not waiting:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _record(running, "second")["scope"] == []
        with pytest.raises(AlreadyRunningError):
            acquire_loop_lock(running, "second")
        first.release()
        thread.join(5)
    assert got == [True]


def test_interrupting_the_queue_releases_the_loop_lock(
    running: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    with acquire_loop_lock(running, "first", ["src"]):
        monkeypatch.setattr(locking.time, "sleep", interrupted)
        with pytest.raises(KeyboardInterrupt):
            acquire_loop_lock(running, "second", ["src"], queue=True)
        monkeypatch.undo()
        assert read_holder(running, "second") is None


# --- failures ----------------------------------------------------------------------------


def test_a_file_in_place_of_the_directory_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / ".running").write_text("")
    with pytest.raises(RunFilesError) as info:
        acquire_loop_lock(tmp_path / ".loops" / ".running", "demo")
    assert info.value.user_lines() == [
        f"{tmp_path}/.loops/.running: cannot write run files: a file is in the way "
        "(it must be a directory)",
        "  ll-loop keeps each run's state, events and lock there; it must be a writable directory",
    ]
    (tmp_path / "flat").write_text("")
    with pytest.raises(RunFilesError, match="cannot write run files: Not a directory"):
        acquire_loop_lock(tmp_path / "flat" / ".running", "demo")


def test_a_lock_file_that_cannot_be_opened_is_a_clear_error(running: Path) -> None:
    running.mkdir(parents=True)
    (running / "demo.lock").mkdir()
    with pytest.raises(RunFilesError, match=r"demo\.lock: cannot write run files: Is a directory"):
        acquire_loop_lock(running, "demo")


def test_a_record_that_cannot_be_written_releases_the_lock(
    running: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(RunFilesError, match="cannot write run files: No space left on device"):
        acquire_loop_lock(running, "demo")
    monkeypatch.undo()
    with acquire_loop_lock(running, "demo") as lock:
        assert lock.held


def test_a_stuck_registry_is_reported_not_waited_for_forever(
    running: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locking, "REGISTRY_TIMEOUT_SECONDS", 0.1)
    running.mkdir(parents=True)
    registry = os.open(running / ".registry.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(registry, fcntl.LOCK_EX)
        with pytest.raises(LoopBusyError) as info:
            acquire_loop_lock(running, "demo")
    finally:
        os.close(registry)
    assert str(info.value) == (
        f"{running}/.registry.lock stays locked by another ll-loop process (more than 0.1s)"
    )


def test_unexpected_flock_errors_are_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fd: int, operation: int) -> None:
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", broken)
    with pytest.raises(OSError, match="Bad file descriptor"):
        locking._try_flock(0, fcntl.LOCK_EX)


def test_probe_of_a_vanished_file_is_no_holder(tmp_path: Path) -> None:
    assert locking._probe(tmp_path / "gone.lock") is None
