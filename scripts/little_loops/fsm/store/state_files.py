"""The run-state and event files of one loop: `StatePersistence`, and reading their tails.

This module owns the on-disk layout under `<loops_dir>/.running/`: the `LoopState` record
(`<name>.state.json`, written atomically, carrying a version number) and the events log
(`<name>.events.jsonl`, one whole JSON line per write). It knows nothing about executors;
`persistence` builds on it. The record and its checks are in `loop_state`, the atomic and
whole-line writes in `file_writes`, the event line format in `event_lines`; their names are
re-exported here, and everything is re-exported by `little_loops.fsm.persistence`, which is
the public import path.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import StateFileError
from little_loops.fsm.store.event_lines import event_line as event_line
from little_loops.fsm.store.event_lines import parse_event_line as parse_event_line
from little_loops.fsm.store.file_writes import APPEND_FLAGS, write_all
from little_loops.fsm.store.file_writes import append_whole_line as append_whole_line
from little_loops.fsm.store.file_writes import write_file_atomically as write_file_atomically
from little_loops.fsm.store.loop_state import PHASE_ENTERED as PHASE_ENTERED
from little_loops.fsm.store.loop_state import PHASE_ROUTED as PHASE_ROUTED
from little_loops.fsm.store.loop_state import REQUIRED_KEYS as REQUIRED_KEYS
from little_loops.fsm.store.loop_state import STATE_VERSION as STATE_VERSION
from little_loops.fsm.store.loop_state import LoopState as LoopState
from little_loops.fsm.store.loop_state import loosened as loosened
from little_loops.fsm.store.loop_state import state_problem as state_problem

RUNNING_DIR = ".running"

_STATE_SUFFIX = ".state.json"
_EVENTS_SUFFIX = ".events.jsonl"
_LOGS_SUFFIX = ".logs"
# Read from here at call time (tests shrink it to cross block borders).
_TAIL_BLOCK_BYTES = 64 * 1024


def now_iso() -> str:
    """Now in UTC, ISO 8601 with microseconds and `+00:00` (the reference format)."""
    return datetime.now(UTC).isoformat()


def is_process_alive(pid: int | None) -> bool:
    """True if a process with this id exists (it may belong to another user)."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # it exists, we just may not signal it
    except (ProcessLookupError, OverflowError):
        return False
    return True


# --- reading the end of an events file ----------------------------------------------------


def end_events_with_a_whole_line(path: Path) -> None:
    """Drop an unterminated last line (a write cut short by a kill or a full disk), so the
    next event starts a line of its own; a last line that is a whole event keeps it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        start = _start_of_last_line(fd, size)
        if parse_event_line(os.pread(fd, size - start, start)) is not None:
            os.pwrite(fd, b"\n", size)
        else:
            os.ftruncate(fd, start)
    finally:
        os.close(fd)


def _start_of_last_line(fd: int, size: int) -> int:
    """Offset just after the last line break before `size` (0 when there is none)."""
    position = size
    while position > 0:
        block_start = max(position - _TAIL_BLOCK_BYTES, 0)
        found = os.pread(fd, position - block_start, block_start).rfind(b"\n")
        if found >= 0:
            return block_start + found + 1
        position = block_start
    return 0


def read_last_events(path: Path, count: int) -> list[dict[str, Any]]:
    """The last `count` readable events, reading the file backwards block by block."""
    if count <= 0:
        return []
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return []
    newest_first: list[dict[str, Any]] = []
    with handle:
        position = handle.seek(0, os.SEEK_END)
        head = b""  # start of the earliest line read so far; may still be incomplete
        while position > 0 and len(newest_first) < count:
            size = min(_TAIL_BLOCK_BYTES, position)
            position -= size
            handle.seek(position)
            lines = (handle.read(size) + head).split(b"\n")
            head = lines[0]
            _collect_newest_first(lines[1:], newest_first, count)
        if position == 0:
            _collect_newest_first([head], newest_first, count)
    newest_first.reverse()
    return newest_first


def _collect_newest_first(lines: list[bytes], into: list[dict[str, Any]], count: int) -> None:
    for line in reversed(lines):
        if len(into) >= count:
            return
        event = parse_event_line(line)
        if event is not None:
            into.append(event)


# --- one loop's files --------------------------------------------------------------------


class StatePersistence:
    """The state and event files of one loop under `<loops_dir>/.running/`."""

    def __init__(self, loop_name: str, loops_dir: Path | None = None) -> None:
        self.loop_name = loop_name
        self.loops_dir = loops_dir or Path(".loops")
        self.running_dir = self.loops_dir / RUNNING_DIR
        self.state_file = self.running_dir / f"{loop_name}{_STATE_SUFFIX}"
        self.events_file = self.running_dir / f"{loop_name}{_EVENTS_SUFFIX}"
        # Addition: the folder of the run's per-action output logs.
        self.logs_dir = self.running_dir / f"{loop_name}{_LOGS_SUFFIX}"
        self._keep_events = False  # see `keep_events_open`
        self._events_fd: int | None = None

    def initialize(self) -> None:
        """Create the running directory (and parents) if needed."""
        self.running_dir.mkdir(parents=True, exist_ok=True)

    def save_state(self, state: LoopState, *, durable: bool = True) -> None:
        """Stamp `state.updated_at` and write it atomically (2-space indent, no newline);
        `durable=False` skips the flush to disk (see `write_file_atomically`)."""
        state.updated_at = now_iso()
        text = json.dumps(state.to_dict(), indent=2)
        write_file_atomically(self.state_file, text, durable=durable)

    def load_state(self) -> LoopState | None:
        """The saved state, or None when it is missing or damaged (reference behaviour)."""
        try:
            return self.load_state_checked()
        except StateFileError:
            return None

    def load_state_checked(self) -> LoopState | None:
        """The saved state; None only when there is no file; `StateFileError` if damaged."""
        try:
            raw = self.state_file.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no file (or no directory) there
            return None
        except OSError as exc:
            raise StateFileError(str(self.state_file), f"cannot be read: {exc.strerror}") from exc
        data = self._parse_json(raw)
        problem = state_problem(data)
        if problem is not None:
            raise StateFileError(str(self.state_file), problem)
        return LoopState.from_dict(data)

    def _parse_json(self, raw: bytes) -> Any:
        path = str(self.state_file)
        if not raw.strip():
            raise StateFileError(path, "the file is empty")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateFileError(path, f"not UTF-8 text (bad byte at offset {exc.start})") from exc
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno}, column {exc.colno}"
            raise StateFileError(path, f"invalid JSON at {where}: {_json_problem(exc)}") from exc
        except (ValueError, RecursionError) as exc:  # e.g. huge integers, deep nesting
            raise StateFileError(path, f"invalid JSON: {exc}") from exc

    def clear_state(self) -> None:
        """Delete the state file, and temp files a crashed writer may have left behind."""
        self.state_file.unlink(missing_ok=True)
        self._remove_stray_temp_files()

    def _remove_stray_temp_files(self) -> None:
        pattern = f".{_glob_escaped(self.state_file.name)}.*.tmp"
        if self.running_dir.is_dir():
            for stray in self.running_dir.glob(pattern):
                stray.unlink(missing_ok=True)

    def remove_crash_leftovers(self) -> None:
        """Tidy what a killed writer left: temp files, and a last event line cut short.

        Only for the process that owns the loop now (it holds the loop lock): a live
        writer's temp file would otherwise disappear under it.
        """
        self._remove_stray_temp_files()
        end_events_with_a_whole_line(self.events_file)

    def append_event(self, event: dict[str, Any]) -> None:
        """Append one event as one JSON line (values json cannot write become str)."""
        line = event_line(event)
        if not self._keep_events:
            append_whole_line(self.events_file, line)
            return
        if self._events_fd is None:
            self._events_fd = os.open(self.events_file, APPEND_FLAGS, 0o666)
        write_all(self._events_fd, line)

    @contextlib.contextmanager
    def keep_events_open(self) -> Iterator[None]:
        """Append events through one descriptor while inside, instead of opening the file
        for each event (the open and the close are most of an append's cost).

        Each event is still one `write()` on an `O_APPEND` descriptor, so lines stay
        whole and never interleave with another writer's (`ll-loop stop`). The file is
        opened by the first event, so a failure to open it is that event's failure.
        """
        self._keep_events = True
        try:
            yield
        finally:
            self._keep_events = False
            self._close_events()

    def _close_events(self) -> None:
        fd, self._events_fd = self._events_fd, None
        if fd is not None:
            os.close(fd)

    def read_events(self) -> list[dict[str, Any]]:
        """Every readable event in file order; blank and damaged lines are skipped."""
        try:
            raw = self.events_file.read_bytes()
        except FileNotFoundError:
            return []
        events = (parse_event_line(line) for line in raw.split(b"\n"))
        return [event for event in events if event is not None]

    def read_events_tail(self, n: int) -> list[dict[str, Any]]:
        """The last `n` readable events in file order, at a cost that grows with `n` only."""
        return read_last_events(self.events_file, n)

    def clear_events(self) -> None:
        """Delete the events file if present."""
        self._close_events()  # the next event makes a new file
        self.events_file.unlink(missing_ok=True)

    def clear_all(self) -> None:
        """Delete the state file, then the events file."""
        self.clear_state()
        self.clear_events()


def _glob_escaped(name: str) -> str:
    """`name` matched literally in a glob pattern (as `glob.escape`, which would load the
    `glob` module at every start for this one call)."""
    return "".join(f"[{char}]" if char in "*?[" else char for char in name)


def _json_problem(exc: json.JSONDecodeError) -> str:
    # json's messages such as "Unterminated string starting at" expect a position after
    # them; the position is already given, so the dangling "at" goes.
    return exc.msg.removesuffix(" at")
