"""The `[HH:MM:SS] text` logger and the plain printing helpers of `ll-loop`.

Everything the CLI prints goes through here so that three rules hold everywhere: success
lines go to stdout, warnings and errors to stderr (so `--json` output stays pure JSON);
colour only when the stream is a terminal and `NO_COLOR` is unset; `--quiet` hides
everything except errors. Streams are looked up at call time (`sys.stdout`), never
captured at import, so redirection works. The formats some options choose between
(`show --diagram`, `history`'s outputs) are written here once: the light `app.py` parses
them and the commands act on them.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import TextIO

from little_loops.cli.exit_codes import USAGE

GREEN = "\033[32m"
YELLOW = "\033[33m"
RED = "\033[31m"
RESET = "\033[0m"

DIAGRAM_FORMATS = ("mermaid", "dot")
"""`ll-loop show --diagram FORMAT`; the first is the default."""

HISTORY_OUTPUTS = ("lines", "json", "jsonl", "raw")
"""How `ll-loop history` prints: readable lines (the default), `--json`, `--jsonl`, `--raw`."""


def colour_enabled(stream: TextIO) -> bool:
    """True when `stream` is a terminal and the user did not ask for `NO_COLOR`."""
    if "NO_COLOR" in os.environ:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, colour: str, stream: TextIO) -> str:
    """`text` wrapped in `colour` when `stream` takes colour, else unchanged."""
    return f"{colour}{text}{RESET}" if colour_enabled(stream) else text


class ClosedStream(io.TextIOBase):
    """Stands in for a stdout the process was started without (`ll-loop list >&-`):
    writing to it fails as writing to a pipe whose reader went away does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "stdout is closed")

    def flush(self) -> None:
        return None  # nothing is ever buffered


@contextlib.contextmanager
def standard_streams() -> Iterator[None]:
    """Make a run started with closed standard descriptors safe.

    A closed descriptor 0, 1 or 2 gets /dev/null, so no file we open (a state file, a
    lock) can become someone's stdout. A closed stdout behaves as a closed pipe (`list`
    exits 141, a run goes on without display); a closed stderr swallows messages.
    """
    _reserve_standard_descriptors()
    saved = sys.stdout, sys.stderr
    if sys.stdout is None:
        sys.stdout = ClosedStream()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        yield
    finally:
        if sys.stderr is not saved[1]:
            sys.stderr.close()
        sys.stdout, sys.stderr = saved


def _reserve_standard_descriptors() -> None:
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            # open() returns the lowest free descriptor: the one that was closed.
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # pragma: no cover - a lower one was free, so it got that
                os.close(opened)


def silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so later flushes (at exit too) stay
    quiet instead of failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (e.g. captured in tests): nothing will be flushed to a pipe


def write_line(text: str = "", *, stream: TextIO | None = None) -> None:
    """Print one line and flush at once (progress must appear as it happens)."""
    target = stream if stream is not None else sys.stdout
    target.write(text + "\n")
    target.flush()


def write_error_line(text: str) -> None:
    """Print one plain line on stderr."""
    write_line(text, stream=sys.stderr)


def usage_error(command: str, message: str) -> int:
    """`ll-loop <command>: error: <message>` on stderr, as argparse words it; exit 2."""
    write_error_line(f"ll-loop {command}: error: {message}")
    return USAGE


class Logger:
    """Timestamped messages: `[HH:MM:SS] text`, the bracket coloured by kind."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def success(self, message: str) -> None:
        if not self.quiet:
            self._emit(message, GREEN, sys.stdout)

    def warning(self, message: str) -> None:
        if not self.quiet:
            self._emit(message, YELLOW, sys.stderr)

    def error(self, message: str) -> None:
        """Errors are never hidden, not even by `--quiet`."""
        self._emit(message, RED, sys.stderr)

    def error_lines(self, lines: list[str]) -> None:
        """Show a `LoopError.user_lines()` list: indented lines continue the one above."""
        for line in lines:
            if line[:1].isspace():
                write_error_line(line)
            else:
                self.error(line)

    def _emit(self, message: str, colour: str, stream: TextIO) -> None:
        stamp = paint(datetime.now().strftime("[%H:%M:%S]"), colour, stream)
        write_line(f"{stamp} {message}", stream=stream)


def format_duration(duration_ms: int) -> str:
    """`4.0s` under a minute, else `2m 34s` (the reference summary format)."""
    seconds = duration_ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest}s"


def plural(count: int, word: str) -> str:
    """`1 iteration`, `2 iterations`."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


NO_PROMPT = "(no prompt)"
"""How a handoff without a continuation prompt is shown, everywhere (progress, summary,
status, resume header)."""
