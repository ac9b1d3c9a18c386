"""What a crash or a failed write leaves behind, and how it is tidied and reported:
`remove_crash_leftovers`, `end_events_with_a_whole_line`, and `PersistentExecutor` when
its files cannot be written (`RunFilesError`, the last good state file kept)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from little_loops.fsm.errors import RunFilesError
from little_loops.fsm.persistence import (
    LoopState,
    NotResumableError,
    PersistentExecutor,
    StatePersistence,
)
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store import state_files
from little_loops.fsm.store.locking import acquire_loop_lock
from little_loops.fsm.store.state_files import end_events_with_a_whole_line

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
EVENT = b'{"event": "x", "ts": "t"}\n'


@pytest.fixture
def loops_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / ".loops"


def _chain(*names: str) -> FSMLoop:
    states: dict[str, Any] = {}
    for position, name in enumerate(names):
        after = names[position + 1] if position + 1 < len(names) else "done"
        states[name] = {"action": "true", "next": after}
    states["done"] = {"terminal": True}
    return FSMLoop.from_dict({"name": "demo", "initial": names[0], "states": states})


# --- the events file after a kill ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "repaired"),
    [
        (b"", b""),
        (EVENT, EVENT),
        (EVENT + b'{"event": "y", "t', EVENT),
        (b'{"event": "cut', b""),
        (EVENT + b'{"event": "whole"}', EVENT + b'{"event": "whole"}\n'),
        (EVENT + b"[1, 2]", EVENT),
    ],
)
def test_end_events_with_a_whole_line(tmp_path: Path, content: bytes, repaired: bytes) -> None:
    path = tmp_path / "x.events.jsonl"
    path.write_bytes(content)
    end_events_with_a_whole_line(path)
    assert path.read_bytes() == repaired


def test_a_torn_line_longer_than_a_block_is_cut_back_to_the_last_whole_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state_files, "_TAIL_BLOCK_BYTES", 8)
    path = tmp_path / "x.events.jsonl"
    path.write_bytes(EVENT + b'{"event": "' + b"y" * 100)
    end_events_with_a_whole_line(path)
    assert path.read_bytes() == EVENT
    path.write_bytes(b'{"event": "' + b"y" * 100)
    end_events_with_a_whole_line(path)
    assert path.read_bytes() == b""


def test_a_missing_events_file_stays_missing(tmp_path: Path) -> None:
    end_events_with_a_whole_line(tmp_path / "none.events.jsonl")
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    whole=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=5),
    tail=st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
)
def test_repair_keeps_every_whole_line_and_never_leaves_a_cut_one(
    tmp_path: Path, whole: list[bytes], tail: bytes
) -> None:
    path = tmp_path / "fuzz.events.jsonl"
    lines = b"".join(line + b"\n" for line in whole)
    path.write_bytes(lines + tail)
    end_events_with_a_whole_line(path)
    repaired = path.read_bytes()
    assert repaired in (lines, lines + tail + b"\n")
    assert repaired == b"" or repaired.endswith(b"\n")
    if repaired != lines:
        assert state_files.parse_event_line(tail) is not None


def test_remove_crash_leftovers_tidies_this_loop_only(loops_dir: Path) -> None:
    persistence = StatePersistence("demo", loops_dir)
    persistence.initialize()
    running = persistence.running_dir
    for name in (".demo.state.json.1a2b.tmp", ".other.state.json.3c4d.tmp"):
        (running / name).write_text("{")
    persistence.events_file.write_bytes(EVENT + b'{"cut')
    persistence.remove_crash_leftovers()
    assert sorted(path.name for path in running.iterdir()) == [
        ".other.state.json.3c4d.tmp",
        "demo.events.jsonl",
    ]
    assert persistence.events_file.read_bytes() == EVENT


# --- writes that fail during a run ----------------------------------------------------------


class FailingPersistence(StatePersistence):
    """Real files, but the `fail_on`-th write (saves and appends counted) raises ENOSPC."""

    def __init__(self, loops_dir: Path, fail_on: int) -> None:
        super().__init__("demo", loops_dir)
        self.fail_on = fail_on
        self.writes = 0

    def _count(self) -> None:
        self.writes += 1
        if self.writes >= self.fail_on:
            raise ENOSPC

    def save_state(self, state: LoopState) -> None:
        self._count()
        super().save_state(state)

    def append_event(self, event: dict[str, Any]) -> None:
        self._count()
        super().append_event(event)


def test_a_failed_write_ends_the_run_and_keeps_the_last_good_state(loops_dir: Path) -> None:
    persistence = FailingPersistence(loops_dir, fail_on=7)
    executor = PersistentExecutor(_chain("a", "b", "c"), persistence)
    with pytest.raises(RunFilesError) as info:
        executor.run()
    assert info.value.user_lines() == [
        f"{loops_dir}/.running: cannot save the run of 'demo': No space left on device",
        "  the run stopped; its state file keeps the last step saved. Fix the cause, then: "
        "ll-loop resume demo",
    ]
    assert isinstance(info.value, OSError)
    assert persistence.writes == 7  # nothing was attempted after the failure
    saved = persistence.load_state_checked()
    assert saved is not None and saved.status == "running"
    persistence.fail_on = 10**6
    assert executor.persistence.read_events()  # every line readable
    resumed = PersistentExecutor(_chain("a", "b", "c"), StatePersistence("demo", loops_dir))
    with acquire_loop_lock(persistence.running_dir, "demo"):  # as `ll-loop resume` does
        assert resumed.resume_checked().terminated_by == "terminal"


def test_a_failed_final_save_is_reported(loops_dir: Path) -> None:
    persistence = FailingPersistence(loops_dir, fail_on=10**6)
    executor = PersistentExecutor(_chain("a"), persistence)
    real_save = persistence.save_state

    def save(state: LoopState) -> None:
        if state.status == "completed":
            raise ENOSPC
        real_save(state)

    persistence.save_state = save  # type: ignore[method-assign]
    with pytest.raises(RunFilesError, match="cannot save the run of 'demo'"):
        executor.run()


def test_files_that_cannot_be_set_up_are_reported(loops_dir: Path) -> None:
    loops_dir.mkdir()
    (loops_dir / ".running").write_text("")
    with pytest.raises(RunFilesError, match="File exists"):
        PersistentExecutor(_chain("a"), loops_dir=loops_dir)
    (loops_dir / ".running").unlink()

    class ReadOnly(StatePersistence):
        def clear_all(self) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    executor = PersistentExecutor(_chain("a"), ReadOnly("demo", loops_dir))
    with pytest.raises(RunFilesError, match="Read-only file system"):
        executor.run()


def test_a_resume_that_cannot_write_its_first_event_is_reported(loops_dir: Path) -> None:
    first = PersistentExecutor(
        FSMLoop.from_dict({**_chain("a", "b").to_dict(), "max_iterations": 1}),
        loops_dir=loops_dir,
    )
    assert first.run().terminated_by == "max_iterations"
    persistence = FailingPersistence(loops_dir, fail_on=1)
    with pytest.raises(RunFilesError):
        PersistentExecutor(_chain("a", "b"), persistence).resume_checked()


def test_an_interruption_is_raised_even_when_its_save_fails(loops_dir: Path) -> None:
    persistence = FailingPersistence(loops_dir, fail_on=10**6)

    executor = PersistentExecutor(_chain("a", "b"), persistence)

    def interrupt(event: dict[str, Any]) -> None:
        if event["event"] == "action_start":
            persistence.fail_on = 0  # every write fails from here on
            raise KeyboardInterrupt

    executor._executor.event_callback = _chained(executor._executor.event_callback, interrupt)
    with pytest.raises(KeyboardInterrupt):
        executor.run()


def _chained(first: Any, second: Any) -> Any:
    def both(event: dict[str, Any]) -> None:
        first(event)
        second(event)

    return both


# --- who runs the loop: the lock, not the pid ----------------------------------------------


def _running_state(loops_dir: Path, pid: int) -> None:
    persistence = StatePersistence("demo", loops_dir)
    persistence.initialize()
    state = LoopState("demo", "a", 1, {}, None, None, "2026-01-01T00:00:00+00:00", "", "running")
    state.pid = pid
    state.phase = "entered"
    persistence.save_state(state)


def test_a_free_lock_means_a_live_pid_is_not_the_runner(loops_dir: Path) -> None:
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        _running_state(loops_dir, unrelated.pid)
        executor = PersistentExecutor(_chain("a"), loops_dir=loops_dir)
        with pytest.raises(NotResumableError, match=f"is running \\(pid {unrelated.pid}\\)"):
            executor.resume_checked()  # no lock file yet: the pid is all we know
        acquire_loop_lock(executor.persistence.running_dir, "demo").release()
        assert executor.resume_checked().terminated_by == "terminal"
    finally:
        unrelated.kill()
        unrelated.wait()


def test_a_held_lock_refuses_the_resume_unless_we_hold_it(loops_dir: Path) -> None:
    _running_state(loops_dir, os.getpid())
    running = loops_dir / ".running"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from little_loops.fsm.store.locking import acquire_loop_lock; "
            "lock = acquire_loop_lock(Path(sys.argv[1]), 'demo'); print('held', flush=True); "
            "time.sleep(30)",
            str(running),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    try:
        with pytest.raises(NotResumableError, match="is running"):
            PersistentExecutor(_chain("a"), loops_dir=loops_dir).resume_checked()
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    with acquire_loop_lock(running, "demo"):
        result = PersistentExecutor(_chain("a"), loops_dir=loops_dir).resume_checked()
        assert result.terminated_by == "terminal"
    assert json.loads((running / "demo.state.json").read_text())["status"] == "completed"
