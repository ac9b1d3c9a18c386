"""The run loop of one loop: states, limits, signals, events.

`FSMExecutor` runs states one after another: it interpolates and runs the action (through
an `ActionRunner`), scans stdout for signals line by line as it streams, evaluates, routes
(see `routing`), and emits an event at every step. It knows nothing about files or the
terminal: persistence and the display subscribe to its events. Every expected failure (an
action that cannot start or times out, an evaluator that fails, an unresolvable variable)
becomes the `error` verdict, which routes through `on_error`/`_error` when the state has
one and ends the run otherwise.
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, cast

from little_loops.fsm.checkpoint import CheckpointResult
from little_loops.fsm.evaluators import evaluate, evaluate_exit_code, evaluate_llm_structured
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler, HandoffResult
from little_loops.fsm.interpolation import InterpolationContext, InterpolationError, interpolate
from little_loops.fsm.output_files import action_log_name
from little_loops.fsm.routing import (
    RoutingError,
    choose_target,
    no_route_message,
    resolve_target,
)
from little_loops.fsm.run_guards import RunGuards, StepEnding, visit_limit_message
from little_loops.fsm.runner import ActionResult, DefaultActionRunner, is_slash_command
from little_loops.fsm.schema import FSMLoop, StateConfig
from little_loops.fsm.signal_detector import DetectedSignal, SignalDetector, SignalScan

__all__ = [
    "ActionResult",
    "ActionRunner",
    "Checkpointer",
    "DefaultActionRunner",
    "EventCallback",
    "ExecutionResult",
    "FSMExecutor",
]

DEFAULT_ACTION_TIMEOUT = 120
EventCallback = Callable[[dict[str, Any]], None]
_RESERVED_EVENT_KEYS = ("event", "ts", "type", "verdict")


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


class _StreamingRunner(Protocol):
    """A runner whose class sets `supports_streaming = True`: it takes `on_line` (each
    line); with `supports_text_blocks = True` also `on_text` (blocks of whole lines); with
    `supports_output_log = True` also `log_path`."""

    def run(
        self,
        action: str,
        timeout: float,
        is_slash_command: bool,
        *,
        on_line: Callable[[str], None] | None = None,
        on_text: Callable[[str], None] | None = None,
        log_path: Path | None = None,
    ) -> ActionResult: ...


class EventCallbackError(Exception):
    """An event callback raised; the run ends with `terminated_by="error"`."""


@dataclass
class _Step:
    """What one state produced: its verdict (None for `next` states) and details."""

    verdict: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    action: ActionResult | None = None
    slash: bool = False
    cut_by_loop_timeout: bool = False
    signal: DetectedSignal | None = None


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
        self.event_callback: EventCallback = event_callback or _ignore_event
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
        """Stop soon: wake a backoff sleep and cancel the running action (signal-safe)."""
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
        self.started_at = self.started_at or _now()
        try:
            self._emit("loop_start", loop=self.fsm.name)
            return self._loop()
        except Exception as exc:  # a raising callback or collaborator must not escape
            return self._finish_after_crash(exc)

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
                ended = self._maintain_restart(state)
            elif not self.guards.may_enter(self.current_state, state):
                ended = self._leave_over_visited(state)
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

    def _leave_over_visited(self, state: StateConfig) -> ExecutionResult | None:
        """A state that used up `max_visits`: go to `on_max_visits`, or stop as stalled."""
        name = self.current_state
        count, limit = self.guards.visits.count(name), state.max_visits or 0
        cycled = name in self._redirected
        if state.on_max_visits is None or cycled:
            return self._finish("stalled", visit_limit_message(name, count, limit, cycled=cycled))
        self._redirected.add(name)
        try:
            target = self._resolve(state.on_max_visits, self._context())
        except RoutingError as exc:
            return self._finish("error", str(exc))
        self._emit("route", **{"from": name, "to": target, "reason": "max_visits"})
        self.current_state = target
        return None

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

    def _maintain_restart(self, state: StateConfig) -> ExecutionResult | None:
        """In maintain mode a terminal state starts the loop over (one iteration)."""
        self.iteration += 1
        try:
            target = self._resolve(state.on_maintain or self.fsm.initial, self._context())
        except RoutingError as exc:
            return self._finish("error", str(exc))
        self._emit("route", **{"from": self.current_state, "to": target, "reason": "maintain"})
        self.current_state = target
        return None

    def _run_state(self, state: StateConfig) -> ExecutionResult | None:
        """Execute one state; return the result when the run ends here."""
        ctx = self._context()
        step = _Step()
        if state.action:
            step = self._run_action(state, ctx)
            ended = self._end_after_action(step)
            if ended is not None:
                return ended
        self._evaluate(state, ctx, step)
        handoff = step.signal if step.signal and step.signal.signal_type == "handoff" else None
        if step.action is not None:
            self._checkpoint("handoff" if handoff else "iteration")
        stalled = self.guards.note_ending(self.current_state, self.iteration, _ending(step))
        if stalled is not None:
            return self._finish("stalled", stalled)
        if handoff is not None:
            return self._handoff(handoff)
        return self._route(state, ctx, step)

    def _checkpoint(self, reason: str) -> None:
        """Commit the work of the state that just ran (`checkpoint: git`)."""
        if self.checkpointer is None:
            return
        result = self.checkpointer.checkpoint(self.current_state, self.iteration, reason=reason)
        if result.status == "committed" or result.warning:
            keys: dict[str, Any] = {"status": result.status, "reason": reason}
            if result.commit:
                keys["commit"] = result.commit
            if result.warning:
                keys["warning"] = result.warning
            self._emit("checkpoint", state=self.current_state, iteration=self.iteration, **keys)

    def _end_after_action(self, step: _Step) -> ExecutionResult | None:
        if self._shutdown_requested:
            return self._finish("signal")
        if step.cut_by_loop_timeout:
            return self._finish("timeout")
        if step.signal is not None and step.signal.signal_type == "error":
            message = step.signal.payload or step.signal.raw_match
            stderr = step.action.stderr if step.action else ""
            self.guards.note_fatal_error(self.current_state, self.iteration, message, stderr)
            return self._finish("error", message)
        return None

    # -- actions ------------------------------------------------------------------------

    def _run_action(self, state: StateConfig, ctx: InterpolationContext) -> _Step:
        assert state.action
        try:
            action = self._action_text(state, ctx)
        except InterpolationError as exc:
            return _error_step(f"Cannot interpolate action: {exc}")
        self._emit("action_start", action=action)
        slash = _is_slash(state, action)
        limit = state.timeout or DEFAULT_ACTION_TIMEOUT
        timeout = self._action_timeout(limit)
        scan = self.signal_detector.scan() if self.signal_detector is not None else None
        result = self._call_runner(action, timeout, slash, scan)
        completed: dict[str, Any] = {
            "exit_code": result.exit_code,
            "duration_ms": result.duration_ms,
        }
        if result.error is not None:
            completed["error"] = result.error
        if result.log_path is not None:
            completed["log_path"] = result.log_path  # addition: the action's whole stdout
        self._emit("action_complete", **completed)
        if state.capture:
            self.captured[state.capture] = {
                "output": result.output,
                "stderr": result.stderr,
                "exit_code": result.exit_code,
                "duration_ms": result.duration_ms,
                **_log_key(result),
            }
        step = _Step(action=result, slash=slash, signal=self._acted_on(scan))
        step.cut_by_loop_timeout = result.timed_out and timeout < limit
        if result.error is not None:
            step.verdict, step.details = "error", {"error": result.error}
        return step

    def _action_text(self, state: StateConfig, ctx: InterpolationContext) -> str:
        """The interpolated action; a resumed handoff's prompt reaches its slash command."""
        assert state.action
        action = interpolate(state.action, ctx)
        handoff = self.handoff_context or {}
        if handoff.get("state") != self.current_state or self._handoff_delivered:
            return action
        self._handoff_delivered = True
        prompt = handoff.get("prompt")
        if prompt and _is_slash(state, action) and "${handoff.prompt}" not in state.action:
            action = f"{action}\n\n{prompt}"
        return action

    def _call_runner(
        self, action: str, timeout: float, slash: bool, scan: SignalScan | None
    ) -> ActionResult:
        if getattr(self.action_runner, "supports_streaming", False) is True:
            streaming = cast(_StreamingRunner, self.action_runner)
            result = self._run_streaming(streaming, action, timeout, slash, scan)
        else:
            result = self.action_runner.run(action, timeout=timeout, is_slash_command=slash)
        if scan is not None and scan.lines == 0:
            # A runner that does not stream (or streamed nothing): scan what it returned.
            scan.feed_text(result.output)
        return result

    def _run_streaming(
        self,
        runner: _StreamingRunner,
        action: str,
        timeout: float,
        slash: bool,
        scan: SignalScan | None,
    ) -> ActionResult:
        """Run through a streaming runner, asking for a log when we keep logs and it can.

        The signal scan reads the output in blocks (`on_text`) and the output callback
        line by line (`on_line`), so both see every line, also those the runner no longer
        keeps in memory, and a quiet run pays no per-line call at all.
        """
        feeds: dict[str, Any] = {"on_line": self.output_callback}
        if scan is not None and getattr(runner, "supports_text_blocks", False) is True:
            feeds["on_text"] = scan.feed_block
        elif scan is not None:
            feeds["on_line"] = _both(scan.feed, self.output_callback)
        if self.log_dir is not None and getattr(runner, "supports_output_log", False) is True:
            feeds["log_path"] = self.log_dir / action_log_name(self.iteration, self.current_state)
        return runner.run(action, timeout=timeout, is_slash_command=slash, **feeds)

    def _action_timeout(self, limit: float) -> float:
        if not self.fsm.timeout:
            return limit
        remaining = self.fsm.timeout - self.elapsed_ms() / 1000
        return min(limit, max(remaining, 0.001))  # an action never outlives the loop

    def _acted_on(self, scan: SignalScan | None) -> DetectedSignal | None:
        if scan is None:
            return None
        signal = scan.actionable()
        if signal is not None and signal.signal_type == "handoff":
            self._pending_handoff = signal
        return signal

    # -- evaluation ---------------------------------------------------------------------

    def _evaluate(self, state: StateConfig, ctx: InterpolationContext, step: _Step) -> None:
        """Fill in the verdict (unless the action already failed); update prev and result."""
        if step.verdict is None:
            if state.next:
                return  # `next` states are not evaluated
            if state.evaluate is None and step.action is None:
                self._remember_prev(step)
                step.verdict = "success"  # a decision state with nothing to judge
                return
            step.verdict, step.details = self._judge(state, ctx, step)
        if not state.next:
            self._remember_prev(step)
        self.last_result = {"verdict": step.verdict, "details": step.details}
        details = {k: v for k, v in step.details.items() if k not in _RESERVED_EVENT_KEYS}
        kind = state.evaluate.type if state.evaluate else "default"
        self._emit("evaluate", type=kind, verdict=step.verdict, **details)

    def _remember_prev(self, step: _Step) -> None:
        action = step.action
        self.prev_result = {
            "output": action.output if action else "",
            "exit_code": action.exit_code if action else 0,
            "state": self.current_state,
            **(_log_key(action) if action else {}),
        }

    def _judge(
        self, state: StateConfig, ctx: InterpolationContext, step: _Step
    ) -> tuple[str, dict[str, Any]]:
        action = step.action
        try:
            if state.evaluate is None:
                assert action is not None
                return self._default_judgement(action, step.slash)
            output, exit_code = (action.output, action.exit_code) if action else ("", 0)
            log_path = _full_output_log(action) if action else None
            result = evaluate(
                state.evaluate, output, exit_code, ctx, llm=self.fsm.llm, log_path=log_path
            )
        except Exception as exc:  # evaluators report expected failures; this is a backstop
            return "error", {"error": f"Evaluation failed: {type(exc).__name__}: {exc}"}
        return result.verdict, result.details

    def _default_judgement(self, action: ActionResult, slash: bool) -> tuple[str, dict[str, Any]]:
        llm = self.fsm.llm
        if slash and llm.enabled:
            result = evaluate_llm_structured(
                action.output, model=llm.model, max_tokens=llm.max_tokens, timeout=llm.timeout
            )
        else:
            result = evaluate_exit_code(action.exit_code)
        return result.verdict, result.details

    # -- routing, handoff, ending -------------------------------------------------------

    def _route(
        self, state: StateConfig, ctx: InterpolationContext, step: _Step
    ) -> ExecutionResult | None:
        stop = step.signal if step.signal and step.signal.signal_type == "stop" else None
        target = state.next if step.verdict is None else choose_target(state, step.verdict)
        if target is None:
            if stop is not None:
                return self._finish("signal_stop", stop_reason=stop.payload)
            message = no_route_message(self.current_state, step.verdict, step.details)
            return self._finish("error", message)
        ctx.result = self.last_result
        try:
            resolved = self._resolve(target, ctx)
        except RoutingError as exc:
            return self._finish("error", str(exc))
        route: dict[str, Any] = {"from": self.current_state, "to": resolved}
        if step.verdict is not None:
            route["verdict"] = step.verdict
        self._emit("route", **route)
        self.current_state = resolved
        if stop is not None:
            return self._finish("signal_stop", stop_reason=stop.payload)
        return None

    def _resolve(self, target: str, ctx: InterpolationContext) -> str:
        return resolve_target(
            target, current_state=self.current_state, state_names=self.fsm.states, ctx=ctx
        )

    def _handoff(self, signal: DetectedSignal) -> ExecutionResult | None:
        payload = signal.payload
        self.handoff_count += 1
        self._emit(
            "handoff_detected",
            state=self.current_state,
            iteration=self.iteration,
            continuation=payload,
        )
        if self._continuations_exhausted():
            limit = self.fsm.max_continuations
            reason = f"max_continuations ({limit}) reached: this handoff is not continued"
            return self._finish("handoff", reason, continuation_prompt=payload, exhausted=True)
        if self._handoff_behavior() is HandoffBehavior.CONTINUE:
            self._continue_after_handoff(payload)
            return None
        error: str | None = None
        if self.handoff_handler is not None:
            self.handoff_result = self.handoff_handler.handle(self.fsm.name, payload)
            error = self.handoff_result.error
        return self._finish("handoff", error, continuation_prompt=payload)

    def _handoff_behavior(self) -> HandoffBehavior:
        if self.handoff_handler is not None:
            return self.handoff_handler.behavior
        return HandoffBehavior(self.fsm.on_handoff)

    def _continue_after_handoff(self, payload: str | None) -> None:
        """`on_handoff: continue`: the same state runs again next, in a fresh process,
        and gets the continuation prompt as a resumed handoff does."""
        self.handoff_context = {
            "prompt": payload or "",
            "count": self.handoff_count,
            "state": self.current_state,
        }
        self._handoff_delivered = False
        self._emit(
            "handoff_continued",
            state=self.current_state,
            iteration=self.iteration,
            count=self.handoff_count,
            continuation=payload,
        )

    def _continuations_exhausted(self) -> bool:
        """Whether this handoff goes past `max_continuations` (terminate never continues)."""
        handler = self.handoff_handler
        if handler is not None and handler.behavior is HandoffBehavior.TERMINATE:
            return False
        return self.handoff_count > self.fsm.max_continuations

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
        self._emit("loop_complete", **_completion_keys(result))
        return result

    def _finish_after_crash(self, exc: Exception) -> ExecutionResult:
        message = (
            str(exc) if isinstance(exc, EventCallbackError) else f"{type(exc).__name__}: {exc}"
        )
        result = self._result("error", message)
        with contextlib.suppress(EventCallbackError):  # the callback is what failed
            self._emit("loop_complete", **_completion_keys(result))
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
        event = {"event": name, "ts": _now(), **payload}
        try:
            self.event_callback(event)
        except Exception as exc:
            message = f"Event callback failed on '{name}': {type(exc).__name__}: {exc}"
            raise EventCallbackError(message) from exc

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
        with contextlib.suppress(queue.Empty):
            self._wake.get(timeout=seconds)


def _ignore_event(event: dict[str, Any]) -> None:
    """Default callback: nobody is listening."""


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _is_slash(state: StateConfig, action: str) -> bool:
    """`action_type` decides when set; otherwise the shape of the interpolated action."""
    if state.action_type is not None:
        return state.action_type == "slash_command"
    return is_slash_command(action)


def _full_output_log(result: ActionResult) -> str | None:
    """The log holding the whole stdout, when `result.output` holds only its tail."""
    return result.log_path if result.output_truncated else None


def _log_key(result: ActionResult) -> dict[str, str]:
    """`{"log_path": ...}` for a capture or `prev` whose stdout was logged, else nothing."""
    return {"log_path": result.log_path} if result.log_path is not None else {}


def _ending(step: _Step) -> StepEnding:
    """What the guards need to know about how a state ended."""
    action = step.action
    error = step.details.get("error") if step.verdict == "error" else None
    signal = step.signal
    handoff = signal is not None and signal.signal_type == "handoff"
    return StepEnding(
        verdict=step.verdict,
        output=action.output if action is not None else None,
        details=step.details,
        stderr=action.stderr if action is not None else "",
        exit_code=action.exit_code if action is not None else 0,
        ran_action=action is not None,
        error=None if error is None else str(error),
        handoff=handoff,
        handoff_prompt=signal.payload if signal is not None and handoff else None,
    )


def _error_step(message: str) -> _Step:
    return _Step(verdict="error", details={"error": message})


def _completion_keys(result: ExecutionResult) -> dict[str, Any]:
    keys: dict[str, Any] = {
        "final_state": result.final_state,
        "iterations": result.iterations,
        "terminated_by": result.terminated_by,
    }
    if result.error is not None:
        keys["error"] = result.error
    if result.stop_reason is not None:
        keys["stop_reason"] = result.stop_reason
    return keys


def _both(
    first: Callable[[str], None], second: Callable[[str], None] | None
) -> Callable[[str], None]:
    """One line callback that calls `first`, then `second` when there is one."""
    if second is None:
        return first

    def call_both(line: str) -> None:
        first(line)
        second(line)

    return call_both
