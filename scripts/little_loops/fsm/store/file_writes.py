"""Low-level file writes of the run files: whole-file atomic replace, whole-line append.

`write_file_atomically` writes a temp file beside the target and renames it over (the
state file is never half written); `append_whole_line` appends with one write on an
`O_APPEND` descriptor, so lines of concurrent writers never interleave.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path


def _create_temp_beside(path: Path) -> tuple[int, str]:
    """Create `.<file name>.<8 hex digits>.tmp` next to `path` (the umask applies as for
    open()). The digits only have to differ from a leftover's: `O_EXCL` refuses a clash,
    so they count on from a number drawn once per process (`random` is not loaded for
    it: a plain run starts faster), not from a system call per snapshot."""
    prefix = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.")
    while True:
        temp = f"{prefix}{next(_temp_names) & 0xFFFFFFFF:08x}.tmp"
        try:
            return os.open(temp, _TEMP_FLAGS, 0o666), temp
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def _draw_temp_names() -> None:
    """Start the temp-name counter at a number from the OS (again in a forked child, so
    parent and child do not try the same names)."""
    global _temp_names
    _temp_names = itertools.count(int.from_bytes(os.urandom(4), "big"))


_temp_names: itertools.count[int]
_draw_temp_names()
os.register_at_fork(after_in_child=_draw_temp_names)


def write_file_atomically(path: Path, text: str, *, durable: bool = True) -> None:
    """Replace `path` with `text` so a reader sees the old or the new file, never a mix.

    The text goes to a new file beside it, is flushed to disk (`fsync`), then renamed
    over `path`: after a crash, even a power cut, the file is the old one or the new one.
    Without `durable` the flush is skipped: a crash of the process still leaves the old
    or the new file, a power cut may leave the old one (for what a power cut ends anyway).
    """
    data = text.encode("utf-8")
    fd, temp = _create_temp_beside(path)
    try:
        try:
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    while written < len(data):  # only on a full disk or similar; write the rest
        written += os.write(fd, data[written:])


def append_whole_line(path: Path, line: bytes) -> None:
    """Append `line` with one write on an O_APPEND descriptor so lines never interleave."""
    fd = os.open(path, APPEND_FLAGS, 0o666)
    try:
        write_all(fd, line)
    finally:
        os.close(fd)


APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
