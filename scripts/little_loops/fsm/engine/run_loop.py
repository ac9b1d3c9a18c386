"""The run loop of one loop: states, limits, signals, events.

`FSMExecutor` runs states one after another: it interpolates and runs the action (through
an `ActionRunner`), scans stdout for signals line by line as it streams, evaluates, routes
(see `routing`), and emits an event at every step. It knows nothing about files or the
terminal: persistence and the display subscribe to its events. Every expected failure (an
action that cannot start or times out, an evaluator that fails, an unresolvable variable)
becomes the `error` verdict, which routes through `on_error`/`_error` when the state has
one and ends the run otherwise.

This module keeps the public surface and the loop itself (which state runs next, the
limits, entering a state, ending the run). The steps of a state live in their own modules,
as functions that take the executor: `action_step` (running the action), `evaluation_step`
(the verdict), `handoff_flow` (a handoff signal), `routing_step` (moving on), with
`step_result` (what a state produced) and `run_events` (delivering events).
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from little_loops.fsm.engine.action_step import DEFAULT_ACTION_TIMEOUT as DEFAULT_ACTION_TIMEOUT
from little_loops.fsm.engine.action_step import run_action
from little_loops.fsm.engine.evaluation_step import evaluate_step
from little_loops.fsm.engine.handoff_flow import handle_handoff
from little_loops.fsm.engine.routing_step import (
    leave_over_visited,
    leave_stalled,
    maintain_restart,
    route_after_step,
)
from little_loops.fsm.engine.run_events import (
    EventCallbackError,
    checkpoint_keys,
    completion_keys,
    deliver,
    ignore_event,
    now,
)
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Step, step_ending
from little_loops.fsm.handoff_handler import HandoffHandler, HandoffResult
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.process.checkpoint import CheckpointResult
from little_loops.fsm.process.runner import ActionResult, DefaultActionRunner
from little_loops.fsm.schema import FSMLoop, StateConfig
from little_loops.fsm.signal_detector import DetectedSignal, SignalDetector

__all__ = [
    "ActionResult",
    "ActionRunner",
    "Checkpointer",
    "DefaultActionRunner",
    "EventCallback",
    "ExecutionResult",
    "FSMExecutor",
]

EventCallback = Callable[[dict[str, Any]], None]
# Kept importable from here, where they were defined before the split: DEFAULT_ACTION_TIMEOUT
# (now in `action_step`) and EventCallbackError (now in `run_events`).


@dataclass
class ExecutionResult:
    """How a run ended. `duration_ms` counts earlier runs of a resumed loop too.

    Additions: `stop_reason` is the payload of a `LOOP_STOP:` signal;
    `continuations_exhausted` says a handoff went past `max_continuations`, so it will not
    be continued (nothing was spawned; resume needs a higher limit).
    """

    final_state: str
    iterations: int
    terminated_by: str
    duration_ms: int
    captured: dict[str, dict[str, Any]]
    error: str | None = None
    handoff: bool = False
    continuation_prompt: str | None = None
    stop_reason: str | None = None
    continuations_exhausted: bool = False
    # Addition: the last errors seen during the run (see `guards.ErrorLog`), oldest first.
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "final_state": self.final_state,
            "iterations": self.iterations,
            "terminated_by": self.terminated_by,
            "duration_ms": self.duration_ms,
            "captured": self.captured,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.handoff:
            out["handoff"] = True
        if self.continuation_prompt is not None:
            out["continuation_prompt"] = self.continuation_prompt
        if self.stop_reason is not None:
            out["stop_reason"] = self.stop_reason
        if self.continuations_exhausted:
            out["continuations_exhausted"] = True
        if self.errors:
            out["errors"] = self.errors
        return out


class ActionRunner(Protocol):
    """Runs one action. Runners may also offer `cancel()` and `supports_streaming = True`."""

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult: ...


class Checkpointer(Protocol):
    """Saves the project's work (`checkpoint.GitCheckpointer`); never raises for its own
    failures, which it reports in the result."""

    def checkpoint(
        self, state: str, iteration: int, *, reason: str = "iteration"
    ) -> CheckpointResult: ...


class FSMExecutor:
    """Runs an `FSMLoop` to its end and reports every step as an event."""

    def __init__(
        self,
        fsm: FSMLoop,
        event_callback: EventCallback | None = None,
        action_runner: ActionRunner | None = None,
        signal_detector: SignalDetector | None = None,
        handoff_handler: HandoffHandler | None = None,
        *,
        output_callback: Callable[[str], None] | None = None,
        log_dir: Path | None = None,
        checkpointer: Checkpointer | None = None,
    ) -> None:
        self.fsm = fsm
        self.event_callback: EventCallback = event_callback or ignore_event
        self.action_runner: ActionRunner = action_runner or DefaultActionRunner()
        self.signal_detector = signal_detector
        self.handoff_handler = handoff_handler
        self.output_callback = output_callback
        # Addition: where each action's whole stdout is logged (`<iteration>-<state>.log`),
        # for runners that set `supports_output_log`. None: no logs.
        self.log_dir = log_dir
        # Additions: loop guards (stall streaks, visits, errors; restored on resume) and
        # `checkpoint: git` (None: no checkpoints).
        self.guards = RunGuards(fsm)
        self.checkpointer = checkpointer
        self._redirected: set[str] = set()  # states left by `on_max_visits` since a run
        self.current_state = fsm.initial
        self.iteration = 0
        self.captured: dict[str, dict[str, Any]] = {}
        self.prev_result: dict[str, Any] | None = None
        self.started_at = ""
        self.start_time_ms = 0
        self._shutdown_requested = False
        self._pending_handoff: DetectedSignal | None = None
        # Additions, set by persistence on resume: the last evaluation (`${result.*}`),
        # the handoff being continued ({"prompt", "count", "state"}) and how many handoffs
        # the run has made (bounded by `max_continuations`).
        self.last_result: dict[str, Any] | None = None
        self.handoff_context: dict[str, Any] | None = None
        self.handoff_count = 0
        self.handoff_result: HandoffResult | None = None
        self._handoff_delivered = False
        self._clock_start = time.monotonic()
        self._elapsed_before_ms = 0
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()

    # -- public -------------------------------------------------------------------------

    def request_shutdown(self) -> None:
        """Stop soon: wake a backoff sleep and cancel the running action (signal-safe).

        An action that still finishes on its own (it exited before the cancel landed, or
        the runner has no `cancel`) is evaluated and routed; the run stops before the next
        state, so resume starts there. An action the cancel cut off runs again on resume.
        """
        self._shutdown_requested = True
        self._wake.put(True)
        cancel = getattr(self.action_runner, "cancel", None)
        if callable(cancel):
            cancel()

    def run(self) -> ExecutionResult:
        """Run from `current_state` until a terminal state, a limit, a signal or an error.

        A resumed run (persistence preset `started_at` and `start_time_ms`) keeps its first
        start, and its loop clock counts the time already spent.
        """
        now_ms = int(time.time() * 1000)
        self.start_time_ms = self.start_time_ms or now_ms
        self._elapsed_before_ms = max(now_ms - self.start_time_ms, 0)
        self._clock_start = time.monotonic()  # durations from here on are monotonic
        self.started_at = self.started_at or now()
        try:
            self._emit("loop_start", loop=self.fsm.name)
            return self._loop()
        except Exception as exc:  # a raising callback or collaborator must not escape
            return self._finish_after_crash(exc)
        finally:
            # What actions left in the background lives as long as the run (runner.py).
            stop_background = getattr(self.action_runner, "stop_background", None)
            if callable(stop_background):
                stop_background()

    def elapsed_ms(self) -> int:
        """Milliseconds spent on this loop, earlier runs of a resumed loop included."""
        return self._elapsed_before_ms + int((time.monotonic() - self._clock_start) * 1000)

    # -- the loop -----------------------------------------------------------------------

    def _loop(self) -> ExecutionResult:
        while True:
            state = self.fsm.states.get(self.current_state)
            if state is None:
                return self._finish("error", f"State '{self.current_state}' is not in the loop")
            reason = self._stop_reason(state)
            if reason is not None:
                return self._finish(reason)
            if state.terminal:
                ended = maintain_restart(self, state)
            elif not self.guards.may_enter(self.current_state, state):
                ended = leave_over_visited(self, state)
                if ended is None:
                    continue  # nothing ran: no backoff before the state it went to
            else:
                ended = self._enter(state)
            if ended is not None:
                return ended
            self._sleep_between_iterations()

    def _enter(self, state: StateConfig) -> ExecutionResult | None:
        self.iteration += 1
        self.guards.visits.enter(self.current_state)
        self._redirected.clear()
        self._emit("state_enter", state=self.current_state, iteration=self.iteration)
        return self._run_state(state)

    def _stop_reason(self, state: StateConfig) -> str | None:
        if self._shutdown_requested:
            return "signal"
        if state.terminal and not self.fsm.maintain:
            return "terminal"  # even when this was the last allowed iteration
        if self.iteration >= self.fsm.max_iterations:
            return "max_iterations"
        if self._loop_timed_out():
            return "timeout"
        return None

    def _run_state(self, state: StateConfig) -> ExecutionResult | None:
        """Execute one state; return the result when the run ends here."""
        ctx = self._context()
        step = Step()
        if state.action:
            step = run_action(self, state, ctx)
            ended = self._end_after_action(step)
            if ended is not None:
                return ended
        evaluate_step(self, state, ctx, step)
        handoff = step.signal_of("handoff")
        if step.action is not None:
            self._checkpoint("handoff" if handoff else "iteration")
        stall = self.guards.note_ending(self.current_state, self.iteration, step_ending(step))
        if stall is not None:
            return leave_stalled(self, stall)
        if handoff is not None:
            return handle_handoff(self, handoff)
        return route_after_step(self, state, ctx, step)

    def _checkpoint(self, reason: str) -> None:
        """Commit the work of the state that just ran (`checkpoint: git`)."""
        if self.checkpointer is None:
            return
        result = self.checkpointer.checkpoint(self.current_state, self.iteration, reason=reason)
        keys = checkpoint_keys(result, reason)
        if keys is not None:
            self._emit("checkpoint", state=self.current_state, iteration=self.iteration, **keys)

    def _end_after_action(self, step: Step) -> ExecutionResult | None:
        # Only an action the shutdown cut off ends the run here (it runs again on resume).
        # One that finished on its own is evaluated and routed as usual; the run then
        # stops at the next state (see `_stop_reason`), so its work is kept.
        if self._shutdown_requested and step.action is not None and step.action.cancelled:
            return self._finish("signal")
        if step.cut_by_loop_timeout:
            return self._finish("timeout")
        if step.signal is not None and step.signal.signal_type == "error":
            message = step.signal.payload or step.signal.raw_match
            stderr = step.action.stderr if step.action else ""
            self.guards.note_fatal_error(self.current_state, self.iteration, message, stderr)
            return self._finish("error", message)
        return None

    # -- ending ------------------------------------------------------------------------

    def _finish(
        self,
        terminated_by: str,
        error: str | None = None,
        *,
        continuation_prompt: str | None = None,
        stop_reason: str | None = None,
        exhausted: bool = False,
    ) -> ExecutionResult:
        result = self._result(terminated_by, error)
        result.handoff = terminated_by == "handoff"
        result.continuation_prompt = continuation_prompt
        result.stop_reason = stop_reason
        result.continuations_exhausted = exhausted
        self._emit("loop_complete", **completion_keys(result))
        return result

    def _finish_after_crash(self, exc: Exception) -> ExecutionResult:
        message = (
            str(exc) if isinstance(exc, EventCallbackError) else f"{type(exc).__name__}: {exc}"
        )
        result = self._result("error", message)
        with contextlib.suppress(EventCallbackError):  # the callback is what failed
            self._emit("loop_complete", **completion_keys(result))
        return result

    def _result(self, terminated_by: str, error: str | None) -> ExecutionResult:
        return ExecutionResult(
            final_state=self.current_state,
            iterations=self.iteration,
            terminated_by=terminated_by,
            duration_ms=self.elapsed_ms(),
            captured=self.captured,
            error=error,
            errors=self.guards.errors.to_list(),
        )

    # -- helpers ------------------------------------------------------------------------

    def _emit(self, name: str, **payload: Any) -> None:
        deliver(self.event_callback, name, payload)

    def _context(self) -> InterpolationContext:
        return InterpolationContext(
            context=self.fsm.context,
            captured=self.captured,
            prev=self.prev_result,
            result=self.last_result,
            state_name=self.current_state,
            iteration=self.iteration,
            loop_name=self.fsm.name,
            started_at=self.started_at,
            elapsed_ms=self.elapsed_ms(),
            handoff=self.handoff_context,
        )

    def _loop_timed_out(self) -> bool:
        return bool(self.fsm.timeout) and self.elapsed_ms() > (self.fsm.timeout or 0) * 1000

    def _sleep_between_iterations(self) -> None:
        """Wait `backoff` seconds before the next state; `request_shutdown` cuts it short."""
        seconds = self.fsm.backoff or 0
        target = self.fsm.states.get(self.current_state)
        if seconds <= 0 or self._shutdown_requested or (target is not None and target.terminal):
            return
        if self.iteration >= self.fsm.max_iterations:
            return  # the run ends at the next check; do not make it wait
        if self.fsm.timeout:
            seconds = min(seconds, max(self.fsm.timeout - self.elapsed_ms() / 1000, 0))
        self._emit("backoff", seconds=seconds)  # addition: so the wait can be shown
        with contextlib.suppress(queue.Empty):
            self._wake.get(timeout=seconds)
