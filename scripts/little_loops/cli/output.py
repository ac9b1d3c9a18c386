"""The `[HH:MM:SS] text` logger and the plain printing helpers of `ll-loop`.

Everything the CLI prints goes through here so that three rules hold everywhere: success
and warning lines go to stdout, errors to stderr; colour only when the stream is a
terminal and `NO_COLOR` is unset; `--quiet` hides everything except errors. Streams are
looked up at call time (`sys.stdout`), never captured at import, so redirection works.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import TextIO

GREEN = "\033[32m"
YELLOW = "\033[33m"
RED = "\033[31m"
RESET = "\033[0m"


def colour_enabled(stream: TextIO) -> bool:
    """True when `stream` is a terminal and the user did not ask for `NO_COLOR`."""
    if "NO_COLOR" in os.environ:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, colour: str, stream: TextIO) -> str:
    """`text` wrapped in `colour` when `stream` takes colour, else unchanged."""
    return f"{colour}{text}{RESET}" if colour_enabled(stream) else text


def write_line(text: str = "", *, stream: TextIO | None = None) -> None:
    """Print one line and flush at once (progress must appear as it happens)."""
    target = stream if stream is not None else sys.stdout
    target.write(text + "\n")
    target.flush()


def write_error_line(text: str) -> None:
    """Print one plain line on stderr."""
    write_line(text, stream=sys.stderr)


class Logger:
    """Timestamped messages: `[HH:MM:SS] text`, the bracket coloured by kind."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet

    def success(self, message: str) -> None:
        if not self.quiet:
            self._emit(message, GREEN, sys.stdout)

    def warning(self, message: str) -> None:
        if not self.quiet:
            self._emit(message, YELLOW, sys.stdout)

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
