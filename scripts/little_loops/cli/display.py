"""Live progress of a run, built from the executor's events (format of CLI contract §3.1).

```
[1/3] check -> false
       ✗ failure
       -> fix (0.2s)
```

Entering a state opens a line (`[iteration/max] state`), the action ends it; verdict and
route get their own indented lines. Our additions: the route line carries the time spent
in the state, an action that could not run shows why (`! reason`), a handoff (and its
continuation with `on_handoff: continue`), a git checkpoint and a state skipped for
`max_visits` are shown, and with `--verbose` the action's output lines appear as they are
produced.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from little_loops.cli.output import GREEN, RED, paint, silence_stdout, write_line

INDENT = " " * 7
ACTION_WIDTH = 60
GOOD_VERDICTS = frozenset({"success", "target", "progress"})


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters plus `...` when longer."""
    return text if len(text) <= width else text[:width] + "..."


def one_line(text: object) -> str:
    """`text` with its line breaks folded, so a progress entry stays on one line."""
    return " ".join(str(text).split())


class ProgressDisplay:
    """Event callback (and output-line callback) that prints progress as it happens."""

    def __init__(self, *, max_iterations: int, verbose: bool = False, enabled: bool = True):
        self.max_iterations = max_iterations
        self.verbose = verbose
        self.enabled = enabled
        self.preamble: list[str] = []
        self.broken_pipe = False
        self._line_open = False
        self._state_started = 0.0

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        handler = _HANDLERS.get(str(event.get("event")))
        with self._stdout_guard():
            self._print_preamble()
            if handler is not None:
                handler(self, event)

    def on_output_line(self, line: str) -> None:
        """One line of an action's output, shown only with `--verbose`."""
        if self.enabled and self.verbose:
            with self._stdout_guard():
                self._finish_line()
                write_line(f"{INDENT}| {line}")

    @contextmanager
    def _stdout_guard(self) -> Iterator[None]:
        """A reader that went away (`| head`) must not end the loop: stop displaying."""
        try:
            yield
        except BrokenPipeError:
            self.enabled = False
            self.broken_pipe = True
            silence_stdout()

    def finish(self) -> None:
        """End an open line (call before printing anything else)."""
        if self.enabled:
            self._print_preamble()
            self._finish_line()

    def _print_preamble(self) -> None:
        # Printed lazily so that a refused resume prints nothing but its reason.
        lines, self.preamble = self.preamble, []
        for line in lines:
            write_line(line)

    def _open_line(self, text: str) -> None:
        self._finish_line()
        sys.stdout.write(text)
        sys.stdout.flush()
        self._line_open = True

    def _finish_line(self) -> None:
        if self._line_open:
            write_line()
            self._line_open = False

    def _state_enter(self, event: dict[str, Any]) -> None:
        self._state_started = time.monotonic()
        iteration = event.get("iteration", "?")
        self._open_line(f"[{iteration}/{self.max_iterations}] {event.get('state', '?')}")

    def _action_start(self, event: dict[str, Any]) -> None:
        # Ends the line opened by `state_enter`.
        self._line_open = False
        write_line(f" -> {shorten(one_line(event.get('action', '')), ACTION_WIDTH)}")

    def _action_complete(self, event: dict[str, Any]) -> None:
        if event.get("error"):
            self._finish_line()
            write_line(f"{INDENT}! {one_line(event['error'])}")

    def _evaluate(self, event: dict[str, Any]) -> None:
        self._finish_line()
        verdict = str(event.get("verdict", "?"))
        good = verdict in GOOD_VERDICTS
        mark = paint("✓", GREEN, sys.stdout) if good else paint("✗", RED, sys.stdout)
        line = f"{INDENT}{mark} {verdict}"
        if "confidence" in event:
            line += f" (confidence: {event['confidence']})"
        if verdict == "error" and event.get("error"):
            line += f" - {one_line(event['error'])}"
        write_line(line)

    def _route(self, event: dict[str, Any]) -> None:
        self._finish_line()
        if event.get("reason") == "max_visits":
            # Nothing ran: the state was skipped because it used up its visits.
            where = f"{event.get('from', '?')} used up max_visits"
            write_line(f"{INDENT}{where} -> {event.get('to', '?')}")
            return
        spent = time.monotonic() - self._state_started
        stalled = "stalled, on_stall " if event.get("reason") == "stalled" else ""
        write_line(f"{INDENT}{stalled}-> {event.get('to', '?')} ({spent:.1f}s)")

    def _handoff(self, event: dict[str, Any]) -> None:
        self._finish_line()
        write_line(
            f"{INDENT}handoff: {shorten(str(event.get('continuation') or ''), ACTION_WIDTH)}"
        )

    def _handoff_continued(self, event: dict[str, Any]) -> None:
        self._finish_line()
        count = event.get("count", "?")
        write_line(f"{INDENT}continuing in a fresh process (continuation {count})")

    def _checkpoint(self, event: dict[str, Any]) -> None:
        self._finish_line()
        if event.get("warning"):
            write_line(f"{INDENT}! {one_line(event['warning'])}")
        else:
            write_line(f"{INDENT}checkpoint: committed {event.get('commit', '')}")

    def _loop_complete(self, event: dict[str, Any]) -> None:
        self._finish_line()


_HANDLERS = {
    "state_enter": ProgressDisplay._state_enter,
    "action_start": ProgressDisplay._action_start,
    "action_complete": ProgressDisplay._action_complete,
    "evaluate": ProgressDisplay._evaluate,
    "route": ProgressDisplay._route,
    "handoff_detected": ProgressDisplay._handoff,
    "handoff_continued": ProgressDisplay._handoff_continued,
    "checkpoint": ProgressDisplay._checkpoint,
    "loop_complete": ProgressDisplay._loop_complete,
}
