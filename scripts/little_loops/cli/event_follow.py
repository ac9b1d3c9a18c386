"""Reading files another process is still writing, by polling: a run's events file and
the log of its current action.

Both readers return only whole lines: a last line still being written stays behind until
its newline arrives. The events file is followed across its replacement (a new `run`
moves the old one to `.loops/.history/` and starts a new file): a different file under
the same name, or one shorter than what was read, is read again from its start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from little_loops.fsm.process.output_files import decode_output
from little_loops.fsm.store.state_files import parse_event_line

READ_LIMIT_BYTES = 4 * 1024 * 1024
"""The most read at once; the rest comes on the next poll."""


@dataclass
class NewLines:
    """What one poll found: whole lines, and whether the file was replaced since the last."""

    lines: list[bytes] = field(default_factory=list)
    replaced: bool = False


class LineFollower:
    """The whole lines appended to `path` since the last call, across replacements."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._identity: tuple[int, int] | None = None
        self._offset = 0
        self._partial = b""

    def read_new(self) -> NewLines:
        try:
            with self.path.open("rb") as handle:
                stat = os.fstat(handle.fileno())
                found = NewLines(replaced=self._check_identity(stat))
                handle.seek(self._offset)
                data = handle.read(READ_LIMIT_BYTES)
        except OSError:  # not there (yet, or moved away between two runs)
            return NewLines()
        self._offset += len(data)
        *whole, self._partial = (self._partial + data).split(b"\n")
        found.lines = whole
        return found

    def _check_identity(self, stat: os.stat_result) -> bool:
        """Start again from the top when the name now points to another (or a cut) file."""
        identity = (stat.st_dev, stat.st_ino)
        replaced = self._identity is not None and (
            identity != self._identity or stat.st_size < self._offset
        )
        if replaced:
            self._offset, self._partial = 0, b""
        self._identity = identity
        return replaced

    def rest(self) -> bytes:
        """A last line without its newline (the writer is done: it will not get one)."""
        rest, self._partial = self._partial, b""
        return rest


@dataclass
class NewEvents:
    """Events appended since the last poll; `replaced`: they belong to a new file."""

    events: list[dict[str, Any]]
    replaced: bool


class EventFollower:
    """The events appended to a run's `<loop>.events.jsonl` since the last call."""

    def __init__(self, path: Path) -> None:
        self._lines = LineFollower(path)

    def read_new(self) -> NewEvents:
        found = self._lines.read_new()
        events = [event for event in map(parse_event_line, found.lines) if event is not None]
        return NewEvents(events, found.replaced)


class LogTail:
    """The new text lines of an action's log (the file appears once it holds output)."""

    def __init__(self, path: Path) -> None:
        self._lines = LineFollower(path)

    def read_new(self) -> list[str]:
        return [_text(line) for line in self._lines.read_new().lines]

    def read_rest(self) -> list[str]:
        """Everything left, the last line even without its newline (the action ended)."""
        lines = self.read_new()
        rest = self._lines.rest()
        return [*lines, _text(rest)] if rest else lines


def _text(line: bytes) -> str:
    """A log line as the runner shows it (a `\\r\\n` ending is one line break)."""
    return decode_output(line).rstrip("\n")
