"""Live progress of a run, built from the executor's events (format of CLI contract §3.1).

```
[1/3] check -> false
       ✗ failure
       -> fix (0.2s)
```

Entering a state opens a line (`[iteration/max] state`), the action ends it; verdict and
route get their own indented lines. Our additions: the route line carries the time spent
in the state; an `error` verdict says why, once (`✗ error - <reason>`: the runner's
message, or the exit code and the last line of stderr, e.g. `exit code 127: bash: line 1:
pytset: command not found`); a reason the verdict line does not carry gets its own line
(`! reason`, e.g. `Action cancelled`); a handoff (and its continuation with `on_handoff:
continue`), a git checkpoint, a backoff wait (`waiting 1s`), a maintain loop's restart
(`[2/5] done: maintain -> check`) and a state skipped for `max_visits` are shown, and with
`--verbose` the action's output lines appear as they are produced. On a terminal
(`live`), the running action's line shows the time spent so far (see `live_line`).

Times come from `clock` when the events are seen as they happen (`run`); `ll-loop watch`,
which reads the events afterwards, takes them from the events' own timestamps (`event_time`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from little_loops.cli.live_line import ActivityLine
from little_loops.cli.output import GREEN, NO_PROMPT, RED, paint, silence_stdout, write_line
from little_loops.cli.spending_text import cost_of_event, reset_phrase
from little_loops.fsm.engine.spending import format_cost
from little_loops.fsm.model.durations import format_duration as format_wait

INDENT = " " * 7
SUB_LOOP_INDENT = " " * 4  # per sub-loop depth (spec/ll-head-dialect.md §4.7)
ACTION_WIDTH = 60
GOOD_VERDICTS = frozenset({"success", "yes", "target", "progress"})


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` characters plus `...` when longer."""
    return text if len(text) <= width else text[:width] + "..."


def one_line(text: object) -> str:
    """`text` with its line breaks folded, so a progress entry stays on one line."""
    return " ".join(str(text).split())


class ProgressDisplay:
    """Event callback (and output-line callback) that prints progress as it happens."""

    def __init__(
        self,
        *,
        max_iterations: int,
        verbose: bool = False,
        enabled: bool = True,
        live: bool = False,
        clock: Callable[[], float] = time.monotonic,
        event_time: Callable[[dict[str, Any]], float] | None = None,
        efforts: Mapping[str, str] | None = None,
    ):
        self.max_iterations = max_iterations
        # HEAD prompt states' `effort`, shown in their header (`state_efforts`); the run's
        # own states only: a sub-loop's states are not known here.
        self.efforts = dict(efforts or {})
        self.verbose = verbose
        self.enabled = enabled
        self.live = live and enabled
        self.clock = clock
        self.event_time = event_time
        self.activity = ActivityLine(INDENT)
        # Events, output lines and the ticker come from different threads.
        self._lock = threading.RLock()
        self._open_text = ""
        self.preamble: list[str] = []
        self.broken_pipe = False
        self._line_open = False
        self._header = ""  # `[<iteration>/<max>] <state>` of the state under way
        self._state_started = 0.0
        self._iteration = 0
        # Why the last action failed, until the verdict line can say it (or something
        # else comes first and it gets its own `!` line).
        self._action_error: str | None = None
        self._action_exit: tuple[int, str] | None = None
        # What the actions of the current state cost (slash commands report it).
        self._state_cost: float | None = None
        # Sub-loop events carry `depth`: their lines are indented by it, and each depth
        # keeps its own state start (the parent's `loop:` state spans its child's).
        self._depth = 0
        self._started_at_depth: dict[int, float] = {}

    @property
    def _pad(self) -> str:
        return SUB_LOOP_INDENT * self._depth

    @property
    def _indent(self) -> str:
        return self._pad + INDENT

    def __call__(self, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        name = str(event.get("event"))
        handler = _HANDLERS.get(name)
        depth = event.get("depth")
        with self._lock, self._stdout_guard():
            self._depth = depth if isinstance(depth, int) and depth > 0 else 0
            self._erase_activity()
            self._print_preamble()
            if name == "route":
                self._print_ignored_failure(event)
            if name != "evaluate":
                self._print_action_error()
            if handler is not None:
                handler(self, event)

    def on_output_line(self, line: str) -> None:
        """One line of an action's output, shown only with `--verbose`."""
        if self.enabled and self.verbose:
            with self._lock, self._stdout_guard():
                self._erase_activity()
                if self.live:  # the time line only waits for quiet on a terminal
                    self.activity.output_arrived(self.clock())
                self._finish_line()
                write_line(f"{self._indent}| {line}")

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
            with self._lock:
                self.activity.stop()
                self._erase_activity()
                self._print_preamble()
                self._finish_line()

    def tick(self) -> None:
        """Redraw the running action's time (a terminal only; called by `live_line.ticking`)."""
        if not (self.enabled and self.live):
            return
        with self._lock, self._stdout_guard():
            text = self.activity.redraw(self.clock(), line_open=self._line_open)
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()

    def _erase_activity(self) -> None:
        text = self.activity.erase() if self.live else ""
        if text:
            sys.stdout.write(text)

    def _time_of(self, event: dict[str, Any]) -> float:
        return self.event_time(event) if self.event_time is not None else self.clock()

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
        self._open_text = text

    def _finish_line(self) -> None:
        if self._line_open:
            write_line()
            self._line_open = False

    def _state_enter(self, event: dict[str, Any]) -> None:
        self._state_started = self._started_at_depth[self._depth] = self._time_of(event)
        self._state_cost = None
        iteration = event.get("iteration", "?")
        if self._depth:  # a sub-loop's steps count against its own cap, not the run's
            self._header = f"{self._pad}[{iteration}] {event.get('state', '?')}"
        else:
            self._iteration = iteration if isinstance(iteration, int) else 0
            state = str(event.get("state", "?"))
            effort = self.efforts.get(state)
            note = f" (effort: {effort})" if effort else ""
            self._header = f"[{iteration}/{self.max_iterations}] {state}{note}"
        self._open_line(self._header)

    def _action_start(self, event: dict[str, Any]) -> None:
        # Ends the line opened by `state_enter` (on a terminal: once the action ends, so
        # that its time can be shown on it meanwhile).
        text = f" -> {shorten(one_line(event.get('action', '')), ACTION_WIDTH)}"
        if event.get("host"):  # issue 24: a prompt action on another agent CLI than claude
            text += f" (on {event['host']})"
        if not self._line_open:  # the action again (after a backoff or a usage-limit wait)
            self._open_line(self._header)
        if not self.live:
            self._line_open = False
            write_line(text)
            return
        sys.stdout.write(text)
        sys.stdout.flush()
        self._open_text += text
        self.activity.start(self._open_text, self._time_of(event))

    def _action_complete(self, event: dict[str, Any]) -> None:
        self.activity.stop()
        cost = cost_of_event(event)
        if cost is not None:
            self._state_cost = (self._state_cost or 0.0) + cost
        if event.get("limit"):
            return  # the limit's own line says what happened; the state runs again
        if event.get("error"):
            self._action_error = one_line(event["error"])
        exit_code = event.get("exit_code")
        if isinstance(exit_code, int) and exit_code != 0:
            self._action_exit = (exit_code, last_line(event.get("stderr_tail")))

    def _print_ignored_failure(self, event: dict[str, Any]) -> None:
        """A `next:` state's failed action on its own line: its route ignores the failure,
        so no verdict line says it (`! exit code 127: pytset: command not found (next:
        ignores it)`)."""
        if event.get("reason") or event.get("verdict"):
            return
        reason = self._action_error
        if reason is None and self._action_exit is not None:
            code, stderr = self._action_exit
            reason = f"exit code {code}: {stderr}" if stderr else f"exit code {code}"
        self._action_error = self._action_exit = None
        if reason:
            self._finish_line()
            write_line(f"{self._indent}! {reason} (next: ignores it)")

    def _print_action_error(self) -> None:
        """The action's error on its own line: no verdict line came to carry it."""
        error, self._action_error, self._action_exit = self._action_error, None, None
        if error:
            self._finish_line()
            write_line(f"{self._indent}! {error}")

    def _error_reason(self, event: dict[str, Any]) -> str | None:
        """Why the verdict is `error`: the evaluator's or runner's message, else the exit
        code and what the action said last on stderr (`command not found`)."""
        error = one_line(event["error"]) if event.get("error") else None
        if self._action_error and self._action_error != error:
            write_line(f"{self._indent}! {self._action_error}")  # a different, earlier cause
        if error is None and self._action_exit is not None:
            code, stderr = self._action_exit
            error = f"exit code {code}: {stderr}" if stderr else f"exit code {code}"
        self._action_error = self._action_exit = None
        return error

    def _evaluate(self, event: dict[str, Any]) -> None:
        self._finish_line()
        verdict = str(event.get("verdict", "?"))
        good = verdict in GOOD_VERDICTS
        mark = paint("✓", GREEN, sys.stdout) if good else paint("✗", RED, sys.stdout)
        line = f"{self._indent}{mark} {verdict}"
        if "confidence" in event:
            line += f" (confidence: {event['confidence']})"
        reason = self._error_reason(event) if verdict == "error" else None
        self._action_error = self._action_exit = None
        if reason:
            line += f" - {reason}"
        write_line(line)

    def _route(self, event: dict[str, Any]) -> None:
        self._finish_line()
        if event.get("reason") == "maintain":
            # A restart uses an iteration of its own: it gets its own numbered line.
            self._iteration += 1
            where = f"[{self._iteration}/{self.max_iterations}] {event.get('from', '?')}"
            write_line(f"{self._pad}{where}: maintain -> {event.get('to', '?')}")
            return
        if event.get("reason") == "max_visits":
            # Nothing ran: the state was skipped because it used up its visits.
            where = f"{event.get('from', '?')} used up max_visits"
            write_line(f"{self._indent}{where} -> {event.get('to', '?')}")
            return
        started = self._started_at_depth.get(self._depth, self._state_started)
        spent = self._time_of(event) - started
        stalled = "stalled, on_stall " if event.get("reason") == "stalled" else ""
        cost = "" if self._state_cost is None else f", {format_cost(self._state_cost)}"
        write_line(f"{self._indent}{stalled}-> {event.get('to', '?')} ({spent:.1f}s{cost})")

    def _handoff(self, event: dict[str, Any]) -> None:
        self._finish_line()
        write_line(
            f"{self._indent}handoff: "
            f"{shorten(str(event.get('continuation') or NO_PROMPT), ACTION_WIDTH)}"
        )

    def _handoff_continued(self, event: dict[str, Any]) -> None:
        self._finish_line()
        count = event.get("count", "?")
        write_line(f"{self._indent}continuing in a fresh process (continuation {count})")

    def _checkpoint(self, event: dict[str, Any]) -> None:
        self._finish_line()
        if event.get("warning"):
            write_line(f"{self._indent}! {one_line(event['warning'])}")
        else:
            write_line(f"{self._indent}checkpoint: committed {event.get('commit', '')}")

    def _backoff(self, event: dict[str, Any]) -> None:
        self._finish_line()
        seconds = event.get("seconds")
        shown = f"{seconds:g}" if isinstance(seconds, (int, float)) else "?"
        write_line(f"{self._indent}waiting {shown}s")

    def _limit_wait(self, event: dict[str, Any]) -> None:
        self._finish_line()
        self.activity.stop()
        until = event.get("until")
        now = self._wall_time_of(event)
        when = reset_phrase(until, now) if isinstance(until, str) else "when it resets"
        write_line(f"{self._indent}{one_line(event.get('message', ''))}")
        write_line(f"{self._indent}waiting for the usage limit to reset {when}")

    def _host_switch(self, event: dict[str, Any]) -> None:
        self._finish_line()
        self.activity.stop()
        write_line(f"{self._indent}{one_line(event.get('message', ''))}")
        write_line(
            f"{self._indent}moving {event.get('state', '?')} from {event.get('from', '?')} "
            f"to {event.get('to', '?')}"
        )

    def _host_return(self, event: dict[str, Any]) -> None:
        self._finish_line()
        write_line(
            f"{self._indent}back on {event.get('host', '?')} (its limit has reset; "
            f"was on {event.get('from', '?')})"
        )

    def _limit_wait_end(self, event: dict[str, Any]) -> None:
        self._finish_line()
        waited = event.get("waited_seconds")
        shown = format_wait(waited) if isinstance(waited, int | float) else "?"
        write_line(
            f"{self._indent}usage limit reset after {shown}: {event.get('state', '?')} again"
        )

    def _rate_limit_backoff(self, event: dict[str, Any]) -> None:
        self._finish_line()
        seconds = event.get("seconds")
        shown = _seconds(seconds) if isinstance(seconds, int | float) else "?"
        attempt, retries = event.get("attempt", "?"), event.get("retries", "?")
        write_line(f"{self._indent}{one_line(event.get('message', ''))}")
        write_line(f"{self._indent}backing off {shown} (retry {attempt} of {retries})")

    def _rate_limit_waiting(self, event: dict[str, Any]) -> None:
        # HEAD's ladder (§7.6) reports each minute of a wait; one line when it starts.
        if event.get("elapsed_seconds") != 0:
            return
        self._finish_line()
        until = event.get("next_attempt_at")
        now = self._wall_time_of(event)
        when = reset_phrase(until, now) if isinstance(until, str) else "later"
        write_line(f"{self._indent}rate limited: {event.get('tier', '?')} wait, again {when}")

    def _rate_limit_exhausted(self, event: dict[str, Any]) -> None:
        self._finish_line()
        waited = event.get("total_wait_seconds")
        shown = _seconds(waited) if isinstance(waited, int | float) else "?"
        spent = f"{event.get('retries', '?')} retries, {shown} waited"
        write_line(f"{self._indent}rate-limit budget of {event.get('state', '?')} spent ({spent})")

    def _wall_time_of(self, event: dict[str, Any]) -> float:
        stamp = event.get("ts")
        if isinstance(stamp, str):
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(stamp).timestamp()
        return time.time()

    def _action_retry(self, event: dict[str, Any]) -> None:
        # Temporal ran the action again after a worker or server failure (never silent).
        self._finish_line()
        state, attempt = event.get("state", "?"), event.get("attempt", "?")
        reason = one_line(str(event.get("reason", "")))
        write_line(f"{self._indent}state '{state}' run again (attempt {attempt}): {reason}")

    def _signal_ignored(self, event: dict[str, Any]) -> None:
        self._finish_line()
        marker = event.get("marker", "?")
        write_line(
            f"{self._indent}! {marker} printed on stderr is not acted on "
            "(signals are read from stdout: echo it there)"
        )

    def _loop_start(self, event: dict[str, Any]) -> None:
        if self._depth:  # a sub-loop starting (the run's own start has the preamble)
            self._finish_line()
            write_line(f"{self._pad}sub-loop {event.get('loop', '?')}")

    def _loop_complete(self, event: dict[str, Any]) -> None:
        self._finish_line()


def _seconds(seconds: float) -> str:
    """`0.5s`, `42s`, `4m00s`: short backoffs keep their fraction."""
    return f"{seconds:g}s" if seconds < 60 else format_wait(seconds)


def last_line(text: object) -> str:
    """The last non-blank line of `text` (an action's stderr tail), folded to one line."""
    lines = [line for line in str(text or "").splitlines() if line.strip()]
    return one_line(lines[-1]) if lines else ""


_HANDLERS = {
    "state_enter": ProgressDisplay._state_enter,
    "action_start": ProgressDisplay._action_start,
    "action_complete": ProgressDisplay._action_complete,
    "action_retry": ProgressDisplay._action_retry,
    "signal_ignored": ProgressDisplay._signal_ignored,
    "evaluate": ProgressDisplay._evaluate,
    "route": ProgressDisplay._route,
    "handoff_detected": ProgressDisplay._handoff,
    "handoff_continued": ProgressDisplay._handoff_continued,
    "checkpoint": ProgressDisplay._checkpoint,
    "backoff": ProgressDisplay._backoff,
    "limit_wait": ProgressDisplay._limit_wait,
    "limit_wait_end": ProgressDisplay._limit_wait_end,
    "host_switch": ProgressDisplay._host_switch,
    "host_return": ProgressDisplay._host_return,
    "rate_limit_backoff": ProgressDisplay._rate_limit_backoff,
    "rate_limit_waiting": ProgressDisplay._rate_limit_waiting,
    "rate_limit_exhausted": ProgressDisplay._rate_limit_exhausted,
    "loop_start": ProgressDisplay._loop_start,
    "loop_complete": ProgressDisplay._loop_complete,
}
