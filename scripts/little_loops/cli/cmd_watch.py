"""`ll-loop watch <loop>` (and `run/resume --background --follow`): follow a run from
another terminal.

The run's events file (`.loops/.running/<loop>.events.jsonl`) is polled and its events
fed to the same `ProgressDisplay` `run` prints with, so a person sees the lines `run`
would have printed, live; with `-v` the running action's log is followed too. When the
run ends (its `loop_complete` event, or its process gone) the run's summary is printed
and the watcher exits with the run's exit code: a handoff pause ends the watch with 3.
Ctrl-C stops the watcher only (exit 130): the loop runs in another process and is not
signalled.

A run that is not under way (finished, paused, interrupted) is not waited for: its last
summary is printed from the state file, with the exit code it ended with. `--wait` waits
instead until a run is under way (a new `run`, or the `resume` of a paused run) and follows
it. A run that was resumed is followed from its last start (`loop_start`/`loop_resume`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from little_loops.cli.cap_text import cap_line
from little_loops.cli.display import ProgressDisplay
from little_loops.cli.event_follow import EventFollower, LogTail
from little_loops.cli.exit_codes import BROKEN_PIPE, FAILED, INTERRUPTED, exit_code_for
from little_loops.cli.live_line import ticking
from little_loops.cli.liveness import Owner, owner_of
from little_loops.cli.output import Logger, write_error_line, write_line
from little_loops.cli.resolve import LOOPS_DIR, load_resolved
from little_loops.cli.run_report import report_run
from little_loops.cli.state_efforts import state_efforts
from little_loops.cli.summary import summarize
from little_loops.fsm.engine.events import (
    ACTION_COMPLETE,
    ACTION_START,
    LOOP_COMPLETE,
    LOOP_RESUME,
    LOOP_START,
    STATE_ENTER,
)
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.persistence import LoopState, StatePersistence, is_process_alive
from little_loops.fsm.process.output_files import action_log_name
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.locking import read_holder
from little_loops.fsm.store.run_history import LIVE_STATUSES

POLL_SECONDS = 0.2
"""How often the events file is read (and the action's log, with `-v`)."""
LIVENESS_SECONDS = 1.0
"""How often, while no event comes, the watcher checks that the run's process lives."""
FINAL_STATE_WAIT_SECONDS = 5.0
"""After `loop_complete`, how long to wait for the runner to save its final state."""
START_EVENTS = (LOOP_START, LOOP_RESUME)
# A saved status -> how the run ended, for state files that do not say (`terminated_by`).
_ENDED_BY_STATUS = {
    "completed": "terminal",
    "awaiting_continuation": "handoff",
    "interrupted": "signal",
    "running": "signal",  # its process is gone
    "stalled": "stalled",
}


def watch_command(
    loop_arg: str, *, verbose: bool = False, wait: bool = False, started_pid: int | None = None
) -> int:
    """Follow the run of `loop_arg`; `started_pid`: the background run just started
    (`--follow`), followed from its start even if it has already ended."""
    _, fsm = load_resolved(loop_arg)
    watcher = _Watcher(fsm, loop_arg, verbose)
    try:
        return watcher.watch(wait=wait, started_pid=started_pid)
    except KeyboardInterrupt:
        watcher.display.finish()
        write_error_line(
            f"Stopped watching; {fsm.name} is not affected "
            f"(ll-loop status {loop_arg}; stop it with: ll-loop stop {loop_arg})"
        )
        return INTERRUPTED


def event_time(event: dict[str, Any]) -> float:
    """When `event` happened (seconds since the epoch), from its `ts`; now if it has none."""
    try:
        return datetime.fromisoformat(str(event.get("ts"))).timestamp()
    except ValueError:
        return time.time()


@dataclass
class _Action:
    """The action under way, whose log `-v` follows."""

    iteration: int = 0
    state: str = ""
    log: LogTail | None = None


class _Watcher:
    def __init__(self, fsm: FSMLoop, loop_arg: str, verbose: bool) -> None:
        self.fsm = fsm
        self.loop_arg = loop_arg
        self.verbose = verbose
        self.persistence = StatePersistence(fsm.name, LOOPS_DIR)
        self.display = self._new_display()
        self.action = _Action()

    def _new_display(self) -> ProgressDisplay:
        import sys

        return ProgressDisplay(
            max_iterations=self.fsm.max_iterations,
            verbose=self.verbose,
            live=sys.stdout.isatty(),
            clock=time.time,
            event_time=event_time,
            efforts=state_efforts(self.fsm),
        )

    # --- which run -----------------------------------------------------------------------

    def watch(self, *, wait: bool, started_pid: int | None) -> int:
        if started_pid is not None:
            state = self._wait_for_start(started_pid)
            if state is None:
                return self._start_failed(started_pid)
            return self._follow(state)
        state = self.persistence.load_state_checked()
        seen = state.updated_at if state is not None else None
        if wait or self._starting(state):
            state = self._wait_for_run(state, until_unlocked=not wait)
        if state is None:
            Logger().error(f"No state found for: {self.loop_arg}")
            return FAILED
        if not _under_way(state) and state.updated_at == seen:
            return self._print_ended(state, None)
        return self._follow(state)

    def _starting(self, state: LoopState | None) -> bool:
        """A run holds the loop's lock but has not saved its state yet (just started)."""
        if state is not None and _under_way(state):
            return False
        return read_holder(self.persistence.running_dir, self.fsm.name) is not None

    def _wait_for_run(self, state: LoopState | None, *, until_unlocked: bool) -> LoopState | None:
        """Wait until a run is under way; one that came and went meanwhile (its state was
        saved again) is followed from its events too. `until_unlocked`: give up once
        nobody holds the loop's lock."""
        seen = state.updated_at if state is not None else None
        while state is None or not _under_way(state):
            if state is not None and state.updated_at != seen:
                break
            if until_unlocked and not self._starting(state):
                break
            time.sleep(POLL_SECONDS)
            state = self.persistence.load_state_checked()
        return state

    def _wait_for_start(self, pid: int) -> LoopState | None:
        """The state of the run `pid` started, once it saved one (None: it never did)."""
        while True:
            state = self.persistence.load_state()
            if state is not None and state.pid == pid:
                return state
            if not _child_alive(pid):
                state = self.persistence.load_state()
                return state if state is not None and state.pid == pid else None
            time.sleep(POLL_SECONDS)

    def _start_failed(self, pid: int) -> int:
        log = self.persistence.running_dir / f"{self.fsm.name}.log"
        write_error_line(f"The background run (pid {pid}) ended before it started; its log:")
        try:
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            lines = [f"({log} could not be read)"]
        for line in lines[-20:]:
            write_error_line(f"  {line}")
        return FAILED

    # --- following -----------------------------------------------------------------------

    def _follow(self, state: LoopState) -> int:
        write_line(f"Watching loop: {self.fsm.name} (pid {state.pid})")
        write_line(cap_line(self.fsm))
        write_line()
        follower = EventFollower(self.persistence.events_file)
        first = follower.read_new().events
        with ticking(self.display):
            completion = self._show(_this_run(first))
            last_check = time.monotonic()
            while completion is None and not self.display.broken_pipe:
                time.sleep(POLL_SECONDS)
                self._show_output()
                found = follower.read_new()
                if found.replaced:
                    self._new_run()
                completion = self._show(found.events)
                if found.events:
                    last_check = time.monotonic()
                elif time.monotonic() - last_check >= LIVENESS_SECONDS:
                    last_check = time.monotonic()
                    if self._runner_gone():
                        completion = self._show(follower.read_new().events) or {}
        if self.display.broken_pipe:
            return BROKEN_PIPE
        return self._print_ended(self._final_state(), completion)

    def _new_run(self) -> None:
        """A new run started in the same place: its lines follow under a header of its own."""
        self.display.finish()
        self.display = self._new_display()
        self.action = _Action()
        write_line()
        write_line(f"A new run of {self.fsm.name} started")

    def _show(self, events: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Display `events`; the `loop_complete` event among them, if the run ended."""
        for event in events:
            kind = event.get("event")
            if kind == STATE_ENTER:
                self.action = _Action(_int(event.get("iteration")), str(event.get("state")))
            elif kind == ACTION_START and self.verbose:
                self.action.log = LogTail(self._log_path())
            elif kind == ACTION_COMPLETE:
                self._show_output(rest=True)
            self.display(event)
            if kind == LOOP_COMPLETE and not event.get("depth"):  # (not a child's end)
                return event
        return None

    def _log_path(self) -> Path:
        name = action_log_name(self.action.iteration, self.action.state)
        return self.persistence.logs_dir / name

    def _show_output(self, *, rest: bool = False) -> None:
        log = self.action.log
        if log is None:
            return
        for line in log.read_rest() if rest else log.read_new():
            self.display.on_output_line(line)
        if rest:
            self.action.log = None

    def _runner_gone(self) -> bool:
        state = self.persistence.load_state()
        return state is not None and not _under_way(state)

    def _final_state(self) -> LoopState | None:
        """The state the runner saves after its `loop_complete` event (waited for a little)."""
        deadline = time.monotonic() + FINAL_STATE_WAIT_SECONDS
        while True:
            state = self.persistence.load_state()
            done = (
                state is None or state.status not in LIVE_STATUSES or owner_of(state) != Owner.ALIVE
            )
            if done or time.monotonic() >= deadline:
                return state
            time.sleep(POLL_SECONDS)

    # --- the end -------------------------------------------------------------------------

    def _print_ended(self, state: LoopState | None, completion: dict[str, Any] | None) -> int:
        if completion is not None:  # after the progress lines, as `run` ends
            result = _result(state, completion)
            return report_run(result, self.fsm, self.loop_arg, self.display)
        return print_ended_summary(state, self.fsm, self.loop_arg)


def print_ended_summary(state: LoopState | None, fsm: FSMLoop, loop_arg: str) -> int:
    """Nothing followed: the run's summary alone from its saved state (problems on stderr,
    as `run` prints them), and the exit code it ended with (the Temporal watch too)."""
    result = _result(state, {})
    summary = summarize(result, fsm, loop_arg)
    for line in summary.lines:
        (write_error_line if summary.is_problem else write_line)(line)
    if result.terminated_by == "handoff":
        write_line(f"Follow the resumed run with: ll-loop watch {loop_arg} --wait")
    return exit_code_for(result.terminated_by)


def _child_alive(pid: int) -> bool:
    """Is the background run we started still there? It is our child: an ended one stays a
    zombie (alive to `kill 0`) until reaped, so reap it here."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not our child after all
        return is_process_alive(pid)
    return done == 0


def _under_way(state: LoopState) -> bool:
    return state.status in LIVE_STATUSES and owner_of(state) in (Owner.ALIVE, Owner.ELSEWHERE)


def _this_run(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events since the run's last start: a resumed run is followed from its resume."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.get("event") in START_EVENTS and not event.get("depth"):  # (not a child's)
            return events[index:]
    return events


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _result(state: LoopState | None, completion: dict[str, Any]) -> ExecutionResult:
    """How the run ended, from its final state and (when seen) its `loop_complete` event."""
    ended_by = completion.get("terminated_by") or (state.terminated_by if state else None)
    if ended_by is None:
        ended_by = _ENDED_BY_STATUS.get(state.status, "error") if state else "error"
    return ExecutionResult(
        final_state=str(completion.get("final_state") or (state.current_state if state else "?")),
        iterations=_int(completion.get("iterations")) or (state.iteration if state else 0),
        terminated_by=str(ended_by),
        duration_ms=(state.elapsed_ms or 0) if state else 0,
        captured=state.captured if state else {},
        error=(state.error if state else None)
        or completion.get("error_detail")
        or completion.get("error"),
        handoff=ended_by == "handoff",
        continuation_prompt=state.continuation_prompt if state else None,
        stop_reason=completion.get("stop_reason"),
        errors=state.errors if state else [],
    )
