"""On a terminal, a long action shows it is alive: its progress line gets the time spent so
far (`[3/10] fix -> make test  (12s)`), redrawn in place with `\\r` about once a second.

Once `--verbose` output lines have pushed the progress line up, the time is drawn on a line
of its own below them (`       (12s)`), erased before the next line is printed; and it is
only drawn after a second without output, so it never flickers between output lines.
Nothing of this happens off a terminal: the output there stays exactly what it was.

`ActivityLine.describe` is the hook for more than the time (the last assistant line, turns
and cost of a Claude action, once its runner reports them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

TICK_SECONDS = 0.25
"""How often the ticker looks; the line changes only when the shown text changes."""
QUIET_SECONDS = 1.0
"""How long after an output line the time may be drawn again."""
_ERASE_LINE = "\r\x1b[K"


def elapsed_text(seconds: float) -> str:
    """`(12s)`, `(3m05s)`, `(1h02m)`: whole units, so the line changes once a second."""
    whole = int(seconds)
    if whole < 60:
        return f"({whole}s)"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"({minutes}m{rest:02d}s)"
    hours, minutes = divmod(minutes, 60)
    return f"({hours}h{minutes:02d}m)"


class ActivityLine:
    """What to draw for the running action, and what to erase before anything else."""

    def __init__(self, indent: str) -> None:
        self.indent = indent
        self.describe: Callable[[float], str] = elapsed_text
        self._started: float | None = None
        self._text = ""
        self._last_output = float("-inf")
        self._shown = ""
        self._below = False  # the time is on a line of its own, to be erased

    def start(self, text: str, at: float) -> None:
        """The action of the open progress line `text` started at `at`."""
        self._started, self._text, self._shown = at, text, ""

    def stop(self) -> None:
        self._started = None

    def output_arrived(self, at: float) -> None:
        self._last_output = at

    def erase(self) -> str:
        """What to write before any other output: the own line of the time, gone."""
        if not self._below:
            return ""
        self._below, self._shown = False, ""
        return _ERASE_LINE

    def redraw(self, now: float, *, line_open: bool) -> str:
        """What to write now to show the time (empty: nothing changed or not yet due)."""
        if self._started is None or now - self._last_output < QUIET_SECONDS:
            return ""
        elapsed = now - self._started
        if elapsed < 1:
            return ""
        shown = self.describe(elapsed)
        if shown == self._shown:
            return ""
        self._shown = shown
        if line_open:  # still the progress line: rewrite it with the time after it
            return f"\r{self._text}  {shown}"
        self._below = True
        return f"{_ERASE_LINE}{self.indent}{shown}"


class Ticking(Protocol):
    live: bool

    def tick(self) -> None: ...


@contextmanager
def ticking(display: Ticking) -> Iterator[None]:
    """Call `display.tick()` a few times a second from a thread while the block runs."""
    if not display.live:
        yield
        return
    done = threading.Event()

    def tick_until_done() -> None:
        while not done.wait(TICK_SECONDS):
            display.tick()

    thread = threading.Thread(target=tick_until_done, name="ll-loop-ticker", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
