"""Moving the run to its next state: after a verdict, away from a state that used up
`max_visits` or stalled (`on_stall`), and back to the start in maintain mode.

Each function resolves the target (see `routing`), emits the `route` event and sets the
executor's `current_state`, or finishes the run when there is no route, the target cannot
be resolved, or a `LOOP_STOP:` signal asks to stop. They are part of `FSMExecutor`, split
out: they read and set its attributes and finish the run through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.routing import (
    RoutingError,
    choose_target,
    no_route_message,
    resolve_target,
)
from little_loops.fsm.engine.run_guards import Stall, visit_limit_message
from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.schema import StateConfig

if TYPE_CHECKING:
    from little_loops.fsm.engine.run_loop import ExecutionResult, FSMExecutor

__all__ = ["leave_over_visited", "leave_stalled", "maintain_restart", "route_after_step"]


def route_after_step(
    ex: FSMExecutor, state: StateConfig, ctx: InterpolationContext, step: Step
) -> ExecutionResult | None:
    """Follow the route for `step`'s verdict (or `next`); a stop signal ends the run after."""
    stop = step.signal_of("stop")
    target = state.next if step.verdict is None else choose_target(state, step.verdict)
    if target is None:
        if stop is not None:
            return ex._finish("signal_stop", stop_reason=stop.payload)
        message = no_route_message(ex.current_state, step.verdict, step.details)
        return ex._finish("error", message)
    ctx.result = ex.last_result
    try:
        resolved = _resolve(ex, target, ctx)
    except RoutingError as exc:
        return ex._finish("error", str(exc))
    route: dict[str, Any] = {"from": ex.current_state, "to": resolved}
    if step.verdict is not None:
        route["verdict"] = step.verdict
    ex._emit("route", **route)
    ex.current_state = resolved
    if stop is not None:
        return ex._finish("signal_stop", stop_reason=stop.payload)
    return None


def leave_over_visited(ex: FSMExecutor, state: StateConfig) -> ExecutionResult | None:
    """A state that used up `max_visits`: go to `on_max_visits`, or stop as stalled."""
    name = ex.current_state
    count, limit = ex.guards.visits.count(name), state.max_visits or 0
    cycled = name in ex._redirected
    if state.on_max_visits is None or cycled:
        return ex._finish("stalled", visit_limit_message(name, count, limit, cycled=cycled))
    ex._redirected.add(name)
    try:
        target = _resolve(ex, state.on_max_visits, ex._context())
    except RoutingError as exc:
        return ex._finish("error", str(exc))
    ex._emit("route", **{"from": name, "to": target, "reason": "max_visits"})
    ex.current_state = target
    return None


def leave_stalled(ex: FSMExecutor, stall: Stall) -> ExecutionResult | None:
    """A stalled state: go to the loop's `on_stall` state once per streak, or stop."""
    if stall.recover_to is None:
        return ex._finish("stalled", stall.message)
    try:
        target = _resolve(ex, stall.recover_to, ex._context())
    except RoutingError as exc:
        return ex._finish("error", str(exc))
    ex._emit("route", **{"from": ex.current_state, "to": target, "reason": "stalled"})
    ex.current_state = target
    return None


def maintain_restart(ex: FSMExecutor, state: StateConfig) -> ExecutionResult | None:
    """In maintain mode a terminal state starts the loop over (one iteration)."""
    ex.iteration += 1
    try:
        target = _resolve(ex, state.on_maintain or ex.fsm.initial, ex._context())
    except RoutingError as exc:
        return ex._finish("error", str(exc))
    ex._emit("route", **{"from": ex.current_state, "to": target, "reason": "maintain"})
    ex.current_state = target
    return None


def _resolve(ex: FSMExecutor, target: str, ctx: InterpolationContext) -> str:
    return resolve_target(
        target, current_state=ex.current_state, state_names=ex.fsm.states, ctx=ctx
    )
