"""Action output on disk: the per-action log files, and reading them back cheaply.

An action's stdout is written by the action itself straight into a file (its log under
`.loops/.running/<loop>.logs/`, or an anonymous temporary file when no log was asked
for), so the full output is on disk without passing through our memory. This module owns
how that text is decoded (UTF-8, undecodable bytes as `\\xNN`, `\\r\\n` and `\\r` read as
`\\n`, exactly as a text-mode pipe would give it), the marker that says a text was cut,
and the bounded reads evaluators and the runner use: the tail of a log, a log read whole
up to a size limit, and a log read in overlapping windows.
"""

from __future__ import annotations

import codecs
import functools
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path

from little_loops.fsm.model.log_names import action_log_name as action_log_name
from little_loops.fsm.model.log_names import retry_log_path as retry_log_path

READ_CHUNK_BYTES = 1024 * 1024
"""Bytes read from a log at once."""

STDERR_LOG_SUFFIX = ".stderr.log"

_UTF8_CONTINUATION = 0b1100_0000, 0b1000_0000  # (mask, value) of a continuation byte


def text_decoder() -> io.IncrementalNewlineDecoder:
    """A streaming decoder that turns output bytes into text the way the runner does."""
    utf8 = codecs.getincrementaldecoder("utf-8")(errors="backslashreplace")
    return io.IncrementalNewlineDecoder(utf8, translate=True)


def decode_output(data: bytes | memoryview) -> str:
    """Output bytes as text (a complete piece: nothing is held back). One copy, no more."""
    text = str(data, "utf-8", "backslashreplace")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def decodable_length(data: bytes) -> int:
    """How much of `data` decodes the same whatever follows it.

    Leaves out a character cut at the end (its last bytes are still to come) and a final
    `\\r` (a `\\n` may follow, and `\\r\\n` is one line break).
    """
    end = len(data)
    start = max(end - 3, 0)
    for position in range(end - 1, start - 1, -1):
        byte = data[position]
        if byte < 0x80:
            break  # ASCII: nothing is cut
        if byte >= 0xC0:  # the lead byte of the last character: is it complete?
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            if end - position < needed:
                end = position
            break
    if end and data[end - 1] == 0x0D:
        end -= 1
    return end


def stderr_log_path(log_path: Path) -> Path:
    """Where the stderr of the action whose stdout log is `log_path` goes."""
    return log_path.with_name(log_path.name.removesuffix(".log") + STDERR_LOG_SUFFIX)


def truncation_marker(stream: str, dropped: int, log_path: str | None) -> str:
    """The line put before a kept tail: what was cut and where the whole text is."""
    where = f"; full {stream} in {log_path}" if log_path else ""
    return f"[{stream} truncated: {dropped} earlier bytes dropped{where}]\n"


# What `truncation_marker` writes, read back by `cap_text_bytes`.
_RUNNER_MARKER = re.compile(
    r"\[(?:output|stderr) truncated: (\d+) earlier bytes dropped[^\]\n]*\]\n"
)


def cap_text_bytes(text: str, cap: int, log_path: str | None = None) -> str:
    """`text`, or its last `cap` bytes (UTF-8, never half a character) behind a marker
    saying truthfully how many bytes of the whole output are not here: the ones cut now
    plus those the runner had dropped already (its marker is replaced, not kept)."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return text
    earlier = 0
    runner_marker = _RUNNER_MARKER.match(text)
    if runner_marker is not None:
        earlier = int(runner_marker.group(1))
        data = text[runner_marker.end() :].encode("utf-8", "surrogatepass")
    cut = max(len(data) - cap, 0)
    cut += skip_partial_character(data[cut:]) if cut else 0
    where = f"; full output in {log_path}" if log_path else ""
    kept = data[cut:].decode("utf-8", "surrogatepass")
    return f"[... {earlier + cut} bytes truncated{where} ...]\n{kept}"


def skip_partial_character(data: bytes) -> int:
    """How many leading bytes of a cut buffer belong to a character cut in half (0-3)."""
    mask, value = _UTF8_CONTINUATION
    skipped = 0
    while skipped < min(3, len(data)) and data[skipped] & mask == value:
        skipped += 1
    return skipped


def read_tail(fd: int, end: int, cap: int) -> tuple[bytes, int]:
    """The last `cap` bytes before offset `end` of an open file, and how many came before.

    The cut never splits a UTF-8 character: the bytes of a split one count as dropped.
    """
    start = max(end - cap, 0)
    data = os.pread(fd, end - start, start)
    if start == 0:
        return data, 0
    skipped = skip_partial_character(data)
    return data[skipped:], start + skipped


class LogTooLargeError(Exception):
    """A log is bigger than the reader agreed to hold in memory."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(f"{path} holds {size} bytes (limit {limit})")
        self.path, self.size, self.limit = path, size, limit


def read_log_text(path: str, limit: int) -> str:
    """A whole log as text; `LogTooLargeError` if it holds more than `limit` bytes."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise LogTooLargeError(path, size, limit)
        return decode_output(handle.read(limit + 1))


def log_windows(path: str, window: int, overlap: int) -> Iterator[tuple[str, int, int]]:
    """A log as overlapping text windows: `(text, search_from, owned_end)` each.

    Each position of the output is owned by exactly one window: the first owns its first
    `window - overlap` characters, each later one the next `window - overlap`, the last
    one the rest. A window holds `overlap` characters past what it owns, and every window
    but the first starts with one character before what it owns (`search_from` is 1), so
    lookbehinds see it while `^` and `\\A` cannot match there.
    """
    decoder = text_decoder()
    pending = ""
    search_from = 0
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(READ_CHUNK_BYTES), b""):
            pending += decoder.decode(chunk)
            while len(pending) >= search_from + window:
                owned_end = search_from + window - overlap
                yield pending[: search_from + window], search_from, owned_end
                pending = pending[owned_end - 1 :]
                search_from = 1
        pending += decoder.decode(b"", final=True)
    yield pending, search_from, len(pending) + 1


def search_log(path: str, regex: re.Pattern[str], overlap: int) -> bool:
    """Whether `regex` matches in the log at `path`, holding about 1 MiB of it at a time.

    The rule, for a pattern meant for the whole output: every match shorter than
    `overlap` characters (line breaks included) is found wherever it lies, and `^`, `\\A`,
    `$` and `\\Z` without `(?m)` keep meaning the start and end of the whole output. A
    window only answers for the matches that start in the part it owns (see
    `log_windows`), which lies at least `overlap` characters before its end, so the edges
    of a window are never taken for the edges of the output.
    """
    for text, search_from, owned_end in log_windows(path, READ_CHUNK_BYTES, overlap):
        match = regex.search(text, search_from)
        if match is not None and match.start() < owned_end:
            return True
    return False


class PendingLog:
    """A log file that takes its name only once it holds something.

    Creating a named file costs a directory update (0.2 to 1 ms on a busy disk): as much
    as a short action itself, and most actions of a fast loop print nothing. So the file
    starts unnamed (`O_TMPFILE`) and is linked under its name when it first holds data,
    as soon as the runner notices some or at the end; an action that prints nothing
    leaves no file. Where unnamed files are not available (not Linux, no /proc, a file
    system without them) it is created under its name at once.
    """

    def __init__(self, path: Path, spares: SpareFiles | None = None) -> None:
        self.path = path
        fd = spares.take(path.parent) if spares is not None else None
        if fd is None:  # (a spare made in the folder shows that the folder is there)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = _open_unnamed(path.parent)
        self.named = fd is None
        self.unavailable = False  # linking failed: the output is not logged after all
        self.fd = fd if fd is not None else os.open(path, _NEW_LOG_FLAGS, 0o666)

    @property
    def visible_path(self) -> Path | None:
        """The path, once the file has it."""
        return self.path if self.named else None

    def publish_if_written(self) -> None:
        """Give the file its name if it holds data and has none yet."""
        if self.named or self.unavailable or os.fstat(self.fd).st_size == 0:
            return
        try:
            self._link()
        except OSError:
            self.unavailable = True
            return
        self.named = True

    def _link(self) -> None:
        # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N is the documented way to name an
        # O_TMPFILE file; os.link only calls linkat when given a directory descriptor.
        source = f"/proc/self/fd/{self.fd}"
        folder = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            try:
                os.link(source, self.path.name, dst_dir_fd=folder, follow_symlinks=True)
            except FileExistsError:  # a state run again under the same iteration number
                os.unlink(self.path.name, dir_fd=folder)
                os.link(source, self.path.name, dst_dir_fd=folder, follow_symlinks=True)
        finally:
            os.close(folder)

    def close(self) -> None:
        os.close(self.fd)


class SpareFiles:
    """One unnamed file made ahead of time, for the next action's log.

    Making a file costs an inode on disk (0.1 to 0.2 ms on a busy disk); made while the
    previous action runs, that cost no longer delays the next action's start.
    """

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._fd: int | None = None

    def prepare(self, folder: Path) -> None:
        """Make a spare unnamed file in `folder`, unless one is ready."""
        if self._fd is None:
            self._fd, self._folder = _open_unnamed(folder), folder

    def take(self, folder: Path) -> int | None:
        """The spare file if it was made in `folder` (None otherwise: make your own)."""
        fd, self._fd = self._fd, None
        if fd is not None and self._folder != folder:
            os.close(fd)
            return None
        return fd

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


_NEW_LOG_FLAGS = os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def _open_unnamed(folder: Path) -> int | None:
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not _can_name_unnamed_files():
        return None
    try:
        return os.open(folder, flag | os.O_RDWR | os.O_CLOEXEC, 0o666)
    except OSError:  # a file system without unnamed files
        return None


@functools.cache
def _can_name_unnamed_files() -> bool:
    """Whether `/proc/self/fd` is there to link an unnamed file by (checked once)."""
    return os.path.isdir("/proc/self/fd")
