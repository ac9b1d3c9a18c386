"""The two output streams of a running action, as the runner collects them.

`StdoutFile` is the file the action writes its stdout into (a per-action log, or an
anonymous temporary file): the action never waits for us, whatever it prints. The runner
follows the file as it grows, turning new bytes into lines for the line callback, and at
the end reads back only its tail. Nobody needs the text while it streams? Then nothing is
read until the end, and a 200 MB output costs one small read.

`StderrPipe` is the action's stderr, a pipe drained whenever it is readable (so a chatty
stderr never blocks the action), kept in memory up to a cap (the tail) and, when the
action has a log, written to `<log>.stderr.log`.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from little_loops.fsm.process.output_files import (
    READ_CHUNK_BYTES,
    PendingLog,
    SpareFiles,
    decodable_length,
    decode_output,
    read_tail,
    skip_partial_character,
    stderr_log_path,
    truncation_marker,
)

LINE_CHUNK_CHARS = 64 * 1024
"""Longest piece of a line handed to the line callback (a longer line arrives in pieces)."""

FOLLOW_BUDGET_BYTES = 16 * 1024 * 1024
"""Bytes handled per call to `StdoutFile.follow`, so a flood never starves the checks."""

LineCallback = Callable[[str], None]
TextCallback = Callable[[str], None]


@dataclass(frozen=True)
class OutputReaders:
    """Who reads stdout while it streams.

    `on_line` gets each line without its line break. `on_text` gets the same text in
    blocks of whole lines (each ending with its line break; about 1 MiB at most): one
    call where `on_line` gets thousands, for a reader that can look at a block at once.
    Both get a line longer than `LINE_CHUNK_CHARS` in pieces, and a last line without a
    line break as it is.
    """

    on_line: LineCallback | None = None
    on_text: TextCallback | None = None

    @property
    def present(self) -> bool:
        return self.on_line is not None or self.on_text is not None

    def piece(self, text: str) -> None:
        """Give both readers a piece that is not a whole line."""
        if self.on_text is not None:
            self.on_text(text)
        if self.on_line is not None:
            self.on_line(text)

    def lines(self, text: str) -> None:
        """Give both readers `text`, whole lines each ending with a line break."""
        if self.on_text is not None:
            self.on_text(text)
        if self.on_line is not None:
            _each_line(text, self.on_line)


_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC


class StdoutFile:
    """An action's stdout file, followed from offset 0 as the action writes it."""

    def __init__(self, log_path: Path | None, spares: SpareFiles | None = None) -> None:
        self._log = PendingLog(log_path, spares) if log_path is not None else None
        if log_path is not None:
            # The stderr log of an earlier attempt of this iteration and state (if it
            # cannot go, writing the new one fails later and is skipped).
            with contextlib.suppress(OSError):
                stderr_log_path(log_path).unlink()
        # No log wanted: an anonymous file (unnamed from the start on Linux), closed in close().
        self._scratch = _anonymous_file() if log_path is None else None
        self.fd = self._log.fd if self._log is not None else self._fd_of_scratch()
        self._offset = 0  # bytes decoded and handed to the readers so far

    def _fd_of_scratch(self) -> int:
        assert self._scratch is not None
        return self._scratch.fileno()

    @property
    def log_path(self) -> Path | None:
        """The log holding this output, once it has a name (see `PendingLog`)."""
        return self._log.visible_path if self._log is not None else None

    @property
    def wanted_log_path(self) -> Path | None:
        """Where the log goes (it may not exist yet, or ever for an empty output)."""
        return self._log.path if self._log is not None else None

    def publish_log(self) -> None:
        """Make the log visible under its name as soon as it holds something."""
        if self._log is not None:
            self._log.publish_if_written()

    def follow(self, readers: OutputReaders, end: int | None = None) -> bool:
        """Hand the lines written since the last call to `readers`; True if more wait.

        Only whole lines are taken: a line still being written is read again next time,
        so text is never copied to join pieces (a line longer than one read is the
        exception: it is handed over in pieces). Reads stop at offset `end` when given
        (what was there when the action ended: a background child still writing must not
        keep us reading forever).
        """
        budget = FOLLOW_BUDGET_BYTES
        while budget > 0:
            limit = READ_CHUNK_BYTES if end is None else min(READ_CHUNK_BYTES, end - self._offset)
            data = os.pread(self.fd, limit, self._offset) if limit > 0 else b""
            taken = self._take(data, readers, whole_read=len(data) == READ_CHUNK_BYTES)
            if taken == 0:
                return False
            self._offset += taken
            budget -= taken
        return True

    def _take(self, data: bytes, readers: OutputReaders, *, whole_read: bool) -> int:
        """Hand over the whole lines at the start of `data`; return how many bytes that was."""
        cut = data.rfind(b"\n") + 1
        if cut:
            readers.lines(decode_output(memoryview(data)[:cut]))
            return cut
        if not whole_read:
            return 0  # part of a line: wait for the rest of it
        cut = decodable_length(data)  # one read, and still no line break: pieces
        _in_pieces(decode_output(memoryview(data)[:cut]), readers)
        return cut

    def finish(self, readers: OutputReaders) -> None:
        """Hand over what is left, the last line even without its line break."""
        if not readers.present:
            return
        end = os.fstat(self.fd).st_size
        more = True
        while more:
            more = self.follow(readers, end)
        rest = os.pread(self.fd, end - self._offset, self._offset) if end > self._offset else b""
        self._offset = max(end, self._offset)
        _in_pieces(decode_output(rest), readers)

    def tail(self, cap: int, *, followed: bool) -> tuple[str, int]:
        """The text of the last `cap` bytes, and how many bytes came before them.

        When the output was followed, the end is what the line callback saw; otherwise
        it is the size of the file now.
        """
        end = self._offset if followed else os.fstat(self.fd).st_size
        data, dropped = read_tail(self.fd, end, cap)
        return decode_output(data), dropped

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
        if self._scratch is not None:
            self._scratch.close()


def _in_pieces(text: str, readers: OutputReaders) -> None:
    """Hand over text that is not whole lines, in pieces of at most `LINE_CHUNK_CHARS`."""
    for start in range(0, len(text), LINE_CHUNK_CHARS):
        readers.piece(text[start : start + LINE_CHUNK_CHARS])


def _each_line(text: str, on_line: LineCallback) -> None:
    """Call `on_line` for each line of `text` (which ends with a line break)."""
    for line in text[:-1].split("\n"):
        if len(line) <= LINE_CHUNK_CHARS:
            on_line(line)
            continue
        for start in range(0, len(line), LINE_CHUNK_CHARS):  # a huge line, in pieces
            on_line(line[start : start + LINE_CHUNK_CHARS])


class StderrPipe:
    """The read end of an action's stderr pipe: a bounded tail, and the log when asked."""

    def __init__(self, pipe: IO[bytes], cap: int, log_path: Path | None) -> None:
        self._pipe = pipe
        self.fd = pipe.fileno()
        self.open = True
        self._cap = cap
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self.dropped = 0
        self.log_path = stderr_log_path(log_path) if log_path is not None else None
        self._log_fd: int | None = None

    def drain(self) -> None:
        """Read what the pipe holds now (it is readable); note the end when it closes."""
        data = os.read(self.fd, READ_CHUNK_BYTES)
        if not data:
            self.open = False
            return
        self._keep(data)
        if self.log_path is not None:
            self._log(self.log_path, data)

    def _log(self, path: Path, data: bytes) -> None:
        try:
            if self._log_fd is None:  # created only for actions that print to stderr
                self._log_fd = os.open(path, _NEW_FILE_FLAGS, 0o666)
            _write_all(self._log_fd, data)
        except OSError:
            # A log that cannot be written (full disk...) must not fail the action: its
            # stderr is still kept in memory, and the marker will not point to the log.
            self._close_log()
            self.log_path = None

    def _keep(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        while self._size > self._cap:
            excess = self._size - self._cap
            first = self._chunks[0]
            cut = min(len(first), excess)
            if cut == len(first):
                self._chunks.popleft()
            else:
                self._chunks[0] = first[cut:]
            self._size -= cut
            self.dropped += cut

    def text(self) -> str:
        """The kept tail as text, behind a marker when earlier bytes were dropped."""
        data = b"".join(self._chunks)
        if not self.dropped:
            return decode_output(data)
        skipped = skip_partial_character(data)
        logged = str(self.log_path) if self._log_fd is not None else None
        marker = truncation_marker("stderr", self.dropped + skipped, logged)
        return marker + decode_output(data[skipped:])

    def close(self) -> None:
        self._pipe.close()
        self._close_log()

    def _close_log(self) -> None:
        if self._log_fd is not None:
            os.close(self._log_fd)
            self._log_fd = None


def _write_all(fd: int, data: bytes) -> None:
    written = 0
    while written < len(data):  # a short write only happens on a full disk or similar
        written += os.write(fd, data[written:])


def _anonymous_file() -> IO[bytes]:
    """A temporary file without a name; tempfile is loaded only by runs that want one."""
    import tempfile

    return tempfile.TemporaryFile()  # closed by StdoutFile.close
