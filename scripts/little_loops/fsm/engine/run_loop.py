"""The run loop of one loop: states, limits, signals, events.

`FSMExecutor` runs states one after another: it interpolates and runs the action (through
an `ActionRunner`), scans stdout for signals line by line as it streams, evaluates, routes
(see `routing`), and emits an event at every step. It knows nothing about files or the
terminal: persistence and the display subscribe to its events. Every expected failure (an
action that cannot start or times out, an evaluator that fails, an unresolvable variable)
becomes the `error` verdict, which routes through `on_error`/`_error` when the state has
one and ends the run otherwise.

This module keeps the public surface and the loop itself (which state runs next, the
limits, entering a state, ending the run). The steps of a state live in their own modules
and see the run only through a `StepContext` (`context`): `action_step` (running the
action), `evaluation_step` (the verdict), `handoff_flow` (a handoff signal),
`routing_step` (moving on). They move the run's `RunCursor` and return a `Step` or an
`Ending`; only this module ends the run. Clocks and the environment are injected.
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from little_loops.fsm.engine.action_step import run_action
from little_loops.fsm.engine.context import (
    ActionRunner,
    Checkpointer,
    Clock,
    EventCallback,
    RunCursor,
    StepContext,
    iso_time,
)
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
)
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Ending, ExecutionResult, Step, step_ending
from little_loops.fsm.handoff_handler import HandoffHandler, HandoffResult
from little_loops.fsm.process.clock import SYSTEM_CLOCK
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.schema import FSMLoop, StateConfig
from little_loops.fsm.signal_detector import DetectedSignal, SignalDetector

__all__ = ["ExecutionResult", "FSMExecutor"]

T = TypeVar("T")


class _CursorField(Generic[T]):
    """An executor attribute kept in its cursor (the attributes fsm-api.md lets other
    components read and set: `current_state`, `iteration`, `captured`, ...)."""

    def __init__(self, field: str) -> None:
        self.field = field

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _CursorField[T]: ...

    @overload
    def __get__(self, obj: FSMExecutor, owner: type[Any]) -> T: ...

    def __get__(self, obj: FSMExecutor | None, owner: type[Any]) -> T | _CursorField[T]:
        if obj is None:
            return self
        return cast(T, getattr(obj.cursor, self.field))

    def __set__(self, obj: FSMExecutor, value: T) -> None:
        setattr(obj.cursor, self.field, value)


class FSMExecutor:
    """Runs an `FSMLoop` to its end and reports every step as an event."""

    current_state = _CursorField[str]("current_state")
    iteration = _CursorField[int]("iteration")
    captured = _CursorField[dict[str, dict[str, Any]]]("captured")
    prev_result = _CursorField[dict[str, Any] | None]("prev_result")
    # Additions, set by persistence on resume: the last evaluation (`${result.*}`), the
    # handoff being continued ({"prompt", "count", "state"}) and how many handoffs the run
    # has made (bounded by `max_continuations`).
    last_result = _CursorField[dict[str, Any] | None]("last_result")
    handoff_context = _CursorField[dict[str, Any] | None]("handoff_context")
    handoff_count = _CursorField[int]("handoff_count")
    started_at = _CursorField[str]("started_at")
    start_time_ms = _CursorField[int]("start_time_ms")
    _pending_handoff = _CursorField[DetectedSignal | None]("pending_handoff")

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
        clock: Clock | None = None,
        env: Mapping[str, str] | None = None,
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
        # Additions: the clocks and the environment (`${env.X}`; None: the process's).
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.env = env
        self.cursor = RunCursor(fsm.initial)
        self.handoff_result: HandoffResult | None = None
        self._shutdown_requested = False
        self._clock_start = self.clock.monotonic()
        self._elapsed_before_ms = 0
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()

    # -- public -------------------------------------------------------------------------

    def snapshot(self) -> RunCursor:
        """A copy of where the run stands (no files are touched)."""
        return self.cursor.copy()

    def restore(self, cursor: RunCursor) -> None:
        """Go on from `cursor` (e.g. a saved run's); `run()` then starts at its state."""
        self.cursor = cursor.copy()

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
        wall = self.clock.wall()
        now_ms = int(wall * 1000)
        cursor = self.cursor
        cursor.start_time_ms = cursor.start_time_ms or now_ms
        self._elapsed_before_ms = max(now_ms - cursor.start_time_ms, 0)
        self._clock_start = self.clock.monotonic()  # durations from here on are monotonic
        cursor.started_at = cursor.started_at or iso_time(wall)
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
        return self._elapsed_before_ms + int((self.clock.monotonic() - self._clock_start) * 1000)

    # -- the loop -----------------------------------------------------------------------

    def _loop(self) -> ExecutionResult:
        sc = self._step_context()  # the collaborators are fixed for the run
        while True:
            state = self.fsm.states.get(self.cursor.current_state)
            if state is None:
                return self._finish(
                    Ending("error", f"State '{self.current_state}' is not in the loop")
                )
            reason = self._stop_reason(state)
            if reason is not None:
                return self._finish(Ending(reason))
            sc.cursor = self.cursor
            if state.terminal:
                ending = maintain_restart(sc, state)
            elif not self.guards.may_enter(self.current_state, state):
                ending = leave_over_visited(sc, state)
                if ending is None:
                    continue  # nothing ran: no backoff before the state it went to
            else:
                ending = self._enter(sc, state)
            if ending is not None:
                return self._finish(ending)
            self._sleep_between_iterations()

    def _enter(self, sc: StepContext, state: StateConfig) -> Ending | None:
        cursor = self.cursor
        cursor.iteration += 1
        self.guards.visits.enter(cursor.current_state)
        cursor.redirected.clear()
        self._emit("state_enter", state=cursor.current_state, iteration=cursor.iteration)
        return self._run_state(sc, state)

    def _stop_reason(self, state: StateConfig) -> str | None:
        if self._shutdown_requested:
            return "signal"
        if state.terminal and not self.fsm.maintain:
            return "terminal"  # even when this was the last allowed iteration
        if self.cursor.iteration >= self.fsm.max_iterations:
            return "max_iterations"
        if self._loop_timed_out():
            return "timeout"
        return None

    def _run_state(self, sc: StepContext, state: StateConfig) -> Ending | None:
        """Execute one state; return how the run ends when it ends here."""
        ctx = sc.interpolation()
        step = Step()
        if state.action:
            step = run_action(sc, state, ctx)
            ending = self._end_after_action(step)
            if ending is not None:
                return ending
        evaluate_step(sc, state, ctx, step)
        handoff = step.signal_of("handoff")
        if step.action is not None:
            self._checkpoint("handoff" if handoff else "iteration")
        cursor = self.cursor
        stall = self.guards.note_ending(cursor.current_state, cursor.iteration, step_ending(step))
        if stall is not None:
            return leave_stalled(sc, stall)
        if handoff is not None:
            return handle_handoff(sc, handoff)
        return route_after_step(sc, state, ctx, step)

    def _checkpoint(self, reason: str) -> None:
        """Commit the work of the state that just ran (`checkpoint: git`)."""
        if self.checkpointer is None:
            return
        result = self.checkpointer.checkpoint(self.current_state, self.iteration, reason=reason)
        keys = checkpoint_keys(result, reason)
        if keys is not None:
            self._emit("checkpoint", state=self.current_state, iteration=self.iteration, **keys)

    def _end_after_action(self, step: Step) -> Ending | None:
        # Only an action the shutdown cut off ends the run here (it runs again on resume).
        # One that finished on its own is evaluated and routed as usual; the run then
        # stops at the next state (see `_stop_reason`), so its work is kept.
        if self._shutdown_requested and step.action is not None and step.action.cancelled:
            return Ending("signal")
        if step.cut_by_loop_timeout:
            return Ending("timeout")
        if step.signal is not None and step.signal.signal_type == "error":
            message = step.signal.payload or step.signal.raw_match
            stderr = step.action.stderr if step.action else ""
            self.guards.note_fatal_error(self.current_state, self.iteration, message, stderr)
            return Ending("error", message)
        return None

    # -- ending ------------------------------------------------------------------------

    def _finish(self, ending: Ending) -> ExecutionResult:
        if ending.handoff_result is not None:
            self.handoff_result = ending.handoff_result
        result = self._result(ending.terminated_by, ending.error)
        result.handoff = ending.terminated_by == "handoff"
        result.continuation_prompt = ending.continuation_prompt
        result.stop_reason = ending.stop_reason
        result.continuations_exhausted = ending.exhausted
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
        deliver(self.event_callback, name, payload, iso_time(self.clock.wall()))

    def _step_context(self) -> StepContext:
        return StepContext(
            fsm=self.fsm,
            cursor=self.cursor,
            guards=self.guards,
            runner=self.action_runner,
            emit=self._emit,
            elapsed_ms=self.elapsed_ms,
            env=self.env,
            signal_detector=self.signal_detector,
            handoff_handler=self.handoff_handler,
            output_callback=self.output_callback,
            log_dir=self.log_dir,
        )

    def _loop_timed_out(self) -> bool:
        return bool(self.fsm.timeout) and self.elapsed_ms() > (self.fsm.timeout or 0) * 1000

    def _sleep_between_iterations(self) -> None:
        """Wait `backoff` seconds before the next state; `request_shutdown` cuts it short."""
        seconds = self.fsm.backoff or 0
        target = self.fsm.states.get(self.cursor.current_state)
        if seconds <= 0 or self._shutdown_requested or (target is not None and target.terminal):
            return
        if self.cursor.iteration >= self.fsm.max_iterations:
            return  # the run ends at the next check; do not make it wait
        if self.fsm.timeout:
            seconds = min(seconds, max(self.fsm.timeout - self.elapsed_ms() / 1000, 0))
        self._emit("backoff", seconds=seconds)  # addition: so the wait can be shown
        with contextlib.suppress(queue.Empty):
            self._wake.get(timeout=seconds)
