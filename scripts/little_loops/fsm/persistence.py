"""Runs that survive their process: `PersistentExecutor`, resume, listing and history.

This module owns what a run leaves on disk and how a later process picks it up. It wraps
an `FSMExecutor`, writes every event to `<name>.events.jsonl` and a `LoopState` snapshot
to `<name>.state.json` (one per state entered, one per route, one at the end), and
restores a saved run. The file formats live in `state_files`; nothing here prints.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopError, StateFileError
from little_loops.fsm.executor import EventCallback, ExecutionResult, FSMExecutor
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import SignalDetector
from little_loops.fsm.state_files import (
    PHASE_ENTERED,
    PHASE_ROUTED,
    RUNNING_DIR,
    STATE_VERSION,
    LoopState,
    StatePersistence,
    is_process_alive,
    now_iso,
)

__all__ = [
    "RUNNING_DIR",
    "STATE_VERSION",
    "LoopState",
    "NotResumableError",
    "PersistentExecutor",
    "StatePersistence",
    "get_loop_history",
    "is_process_alive",
    "list_running_loops",
]

# Outputs kept in state files (the tail, behind a marker): a snapshot is rewritten at every
# state, so a chatty action must not make each write cost megabytes.
STATE_OUTPUT_CAP = 16 * 1024

_FINAL_STATUS = {
    "terminal": "completed",
    "max_iterations": "interrupted",
    "signal": "interrupted",
    "handoff": "awaiting_continuation",
    "error": "failed",
    "timeout": "failed",
    "signal_stop": "stopped",
}
_NOT_DETAILS = ("event", "ts", "type", "verdict")
_RESUMABLE = ("awaiting_continuation", "interrupted", "running")


class NotResumableError(LoopError):
    """A saved run that `resume` must not continue; the message says why in one line."""


def _wall_clock_ms() -> int:
    # The clock `FSMExecutor.run()` compares `start_time_ms` with (fsm-api.md §0).
    return int(time.time() * 1000)


def cap_output(text: str, cap: int = STATE_OUTPUT_CAP) -> str:
    """`text`, or its last `cap` characters behind a marker saying how much was cut."""
    if len(text) <= cap:
        return text
    cut = len(text) - cap
    return f"[... {cut} characters truncated ...]\n{text[cut:]}"


def _capped_result(result: dict[str, Any]) -> dict[str, Any]:
    """A copy of an action result with long `output`/`stderr` cut for the state file."""
    copy = dict(result)
    for key in ("output", "stderr"):
        if isinstance(copy.get(key), str):
            copy[key] = cap_output(copy[key])
    return copy


def _capped_captured(captured: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: _capped_result(value) for name, value in captured.items()}


def _evaluation_record(event: dict[str, Any]) -> dict[str, Any]:
    """`last_result` from an `evaluate` event: the verdict and every detail key."""
    details = {key: value for key, value in event.items() if key not in _NOT_DETAILS}
    return {"verdict": event.get("verdict"), "details": details}


def _refusal(state: LoopState) -> str | None:
    """Why a saved run cannot be resumed, or None if it can."""
    name = state.loop_name
    if state.status == "completed":
        return f"loop '{name}' already completed"
    if state.status == "failed":
        return f"loop '{name}' failed: {state.error}" if state.error else f"loop '{name}' failed"
    if state.status == "stopped":
        return f"loop '{name}' was stopped by LOOP_STOP"
    if state.status == "handoff_terminated":
        return f"loop '{name}' ended at a handoff (handoff_terminated)"
    if state.status == "running" and _owner_alive(state):
        return f"loop '{name}' is running (pid {state.pid})"
    if state.status not in _RESUMABLE:
        return f"loop '{name}' has status '{state.status}', which cannot be resumed"
    return None


def _owner_alive(state: LoopState) -> bool:
    """Whether the process that wrote a `running` state still runs (on this host)."""
    if state.host is not None and state.host != socket.gethostname():
        return False  # we cannot see it; the brief treats it as gone
    return is_process_alive(state.pid)


class PersistentExecutor:
    """An `FSMExecutor` whose events and state are saved, so the run can be resumed."""

    def __init__(
        self,
        fsm: FSMLoop,
        persistence: StatePersistence | None = None,
        loops_dir: Path | None = None,
        *,
        event_callback: EventCallback | None = None,
        **executor_kwargs: Any,
    ) -> None:
        self.fsm = fsm
        # Built first so an invalid `on_handoff` fails before any directory is created.
        self.signal_detector = SignalDetector()
        handoff_behavior = HandoffBehavior(fsm.on_handoff)
        self.persistence = persistence or StatePersistence(fsm.name, loops_dir or Path(".loops"))
        self.persistence.initialize()
        self.handoff_handler = HandoffHandler(
            handoff_behavior, log_dir=self.persistence.running_dir
        )
        self.event_callback = event_callback
        self._executor = FSMExecutor(
            fsm,
            event_callback=self._handle_event,
            signal_detector=self.signal_detector,
            handoff_handler=self.handoff_handler,
            **executor_kwargs,
        )
        self._last_result: dict[str, Any] | None = None
        self._continuation_prompt: str | None = None
        self._handoff_count = 0
        self._resumed_at: str | None = None
        self._phase: str | None = None
        self._host = socket.gethostname()

    def request_shutdown(self) -> None:
        """Ask the inner executor to stop; the run is then saved as `interrupted`."""
        self._executor.request_shutdown()

    # --- events -------------------------------------------------------------------------

    def _handle_event(self, event: dict[str, Any]) -> None:
        """Persist first, then let the chained observer (the CLI display) see the event."""
        self.persistence.append_event(event)
        kind = event.get("event")
        if kind == "state_enter":
            self._save_snapshot(str(event["state"]), PHASE_ENTERED)
        elif kind == "route":
            self._save_snapshot(str(event["to"]), PHASE_ROUTED)
        elif kind == "evaluate":
            self._last_result = _evaluation_record(event)
        elif kind == "handoff_detected":
            self._continuation_prompt = event.get("continuation")
            self._handoff_count += 1
            if self.handoff_handler.behavior is HandoffBehavior.SPAWN:
                # The handler starts the new session right after this event: the state
                # file must already say where to continue when it calls `ll-loop resume`.
                self._save_handoff_before_spawn()
        if self.event_callback is not None:
            self.event_callback(event)

    def _save_snapshot(self, current_state: str, phase: str) -> None:
        self._phase = phase
        state = self._build_state(current_state, self._running_status(current_state))
        self.persistence.save_state(state)

    def _save_handoff_before_spawn(self) -> None:
        state = self._build_state(self._executor.current_state, "awaiting_continuation")
        state.continuation_prompt = self._continuation_prompt
        state.terminated_by = "handoff"
        self.persistence.save_state(state)

    def _running_status(self, current_state: str) -> str:
        config = self.fsm.states.get(current_state)
        reached_end = config is not None and config.terminal and not self.fsm.maintain
        return "completed" if reached_end else "running"

    def _build_state(self, current_state: str, status: str) -> LoopState:
        executor = self._executor
        prev = executor.prev_result
        return LoopState(
            loop_name=self.fsm.name,
            current_state=current_state,
            iteration=executor.iteration,
            captured=_capped_captured(executor.captured),
            prev_result=_capped_result(prev) if prev is not None else None,
            last_result=self._last_result,
            started_at=executor.started_at,
            updated_at="",
            status=status,
            pid=os.getpid(),
            host=self._host,
            elapsed_ms=executor.elapsed_ms(),
            handoff_count=self._handoff_count,
            resumed_at=self._resumed_at,
            phase=self._phase,
        )

    # --- run and resume -----------------------------------------------------------------

    def run(self, clear_previous: bool = True) -> ExecutionResult:
        """Run the loop (after deleting the previous files unless resuming); save the end."""
        if clear_previous:
            self.persistence.clear_all()
        try:
            result = self._executor.run()
        except BaseException as exc:
            self._save_crash(exc)
            raise
        self._save_final(result)
        return result

    def _final_status(self, terminated_by: str) -> str:
        terminating = self.handoff_handler.behavior is HandoffBehavior.TERMINATE
        if terminated_by == "handoff" and terminating:
            return "handoff_terminated"
        return _FINAL_STATUS.get(terminated_by, "failed")

    def _save_final(self, result: ExecutionResult) -> None:
        state = self._build_state(result.final_state, self._final_status(result.terminated_by))
        state.iteration = result.iterations
        state.continuation_prompt = self._continuation_prompt
        state.terminated_by = result.terminated_by
        state.error = result.error
        state.elapsed_ms = result.duration_ms
        spawned = self._executor.handoff_result
        if result.handoff and spawned is not None and spawned.spawned_process is not None:
            state.pid = spawned.spawned_process.pid  # the session that will resume the loop
            self.persistence.append_event(self._spawn_event(spawned.spawned_process.pid))
        self.persistence.save_state(state)

    def _spawn_event(self, pid: int) -> dict[str, Any]:
        log = os.path.abspath(str(self.handoff_handler.log_path(self.fsm.name)))
        return {"event": "handoff_spawned", "ts": now_iso(), "pid": pid, "log": log}

    def _save_crash(self, exc: BaseException) -> None:
        """Record a run cut short by Ctrl-C or `sys.exit` (the executor catches the rest)."""
        state = self._build_state(self._executor.current_state, "interrupted")
        state.terminated_by = "signal"
        if not isinstance(exc, KeyboardInterrupt):
            state.error = f"{type(exc).__name__}: {exc}"
        self.persistence.save_state(state)

    def resume(self) -> ExecutionResult | None:
        """Continue a saved run; None when there is nothing resumable (reference API)."""
        try:
            return self.resume_checked()
        except (NotResumableError, StateFileError):
            return None

    def resume_checked(self) -> ExecutionResult:
        """Continue a saved run, or raise `NotResumableError`/`StateFileError` saying why."""
        state = self.persistence.load_state_checked()
        if state is None:
            raise NotResumableError(f"no saved state for '{self.fsm.name}'")
        reason = _refusal(state)
        if reason is not None:
            raise NotResumableError(reason)
        self._restore(state)
        self.persistence.append_event(self._resume_event(state))
        return self.run(clear_previous=False)

    def _restore(self, state: LoopState) -> None:
        executor = self._executor
        executor.current_state = state.current_state
        # A state cut off before its action finished runs again under the same number;
        # after a handoff the action did finish, so the re-run is a new iteration.
        cut_off = state.phase == PHASE_ENTERED and state.status != "awaiting_continuation"
        executor.iteration = max(state.iteration - 1, 0) if cut_off else state.iteration
        executor.captured.clear()
        executor.captured.update(state.captured)
        executor.prev_result = state.prev_result
        executor.last_result = state.last_result
        # The first start stays; the loop clock continues from the time already spent.
        executor.started_at = state.started_at
        executor.start_time_ms = _wall_clock_ms() - (state.elapsed_ms or 0)
        executor._pending_handoff = None
        if state.status == "awaiting_continuation":
            executor.handoff_context = {
                "prompt": state.continuation_prompt or "",
                "count": state.handoff_count,
                "state": state.current_state,
            }
        self._last_result = state.last_result
        self._handoff_count = state.handoff_count
        self._phase = state.phase
        self._resumed_at = now_iso()

    def _resume_event(self, state: LoopState) -> dict[str, Any]:
        event: dict[str, Any] = {
            "event": "loop_resume",
            "ts": now_iso(),
            "loop": self.fsm.name,
            "from_state": state.current_state,
            "iteration": state.iteration,
        }
        if state.status == "awaiting_continuation" and state.continuation_prompt:
            event["from_handoff"] = True
            event["continuation_prompt"] = state.continuation_prompt
        return event


def list_running_loops(loops_dir: Path | None = None) -> list[LoopState]:
    """Every readable saved state (all statuses), sorted by file name; damaged ones skipped."""
    base = loops_dir or Path(".loops")
    running_dir = base / RUNNING_DIR
    if not running_dir.is_dir():
        return []
    states = []
    for path in sorted(running_dir.glob("*.state.json")):
        state = StatePersistence(path.name.removesuffix(".state.json"), base).load_state()
        if state is not None:
            states.append(state)
    return states


def get_loop_history(loop_name: str, loops_dir: Path | None = None) -> list[dict[str, Any]]:
    """All events of the latest run of `loop_name` (and its resumes), in order."""
    return StatePersistence(loop_name, loops_dir).read_events()
