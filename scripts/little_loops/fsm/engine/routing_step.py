"""Moving the run to its next state: after a verdict, away from a state that used up
`max_visits` or stalled (`on_stall`), and back to the start in maintain mode.

Each function resolves the target (see `routing`), emits the `route` event and moves the
cursor's `current_state`, or returns the `Ending` when there is no route, the target
cannot be resolved, or a `LOOP_STOP:` signal asks to stop; the executor ends the run.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.events import ROUTE
from little_loops.fsm.engine.head_routing_step import route_head_step
from little_loops.fsm.engine.routing import (
    RoutingError,
    choose_target,
    no_route_error,
    resolve_target,
)
from little_loops.fsm.engine.run_guards import Stall, visit_limit_message
from little_loops.fsm.engine.step_result import Ending, Step
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import StateConfig

__all__ = ["leave_over_visited", "leave_stalled", "maintain_restart", "route_after_step"]


def route_after_step(
    sc: StepContext, state: StateConfig, ctx: InterpolationContext, step: Step
) -> Ending | None:
    """Follow the route for `step`'s verdict (or `next`); a stop signal ends the run after.
    A HEAD state routes the HEAD way (`head_routing_step`)."""
    if isinstance(state, HeadStateConfig):
        return route_head_step(sc, state, ctx, step)
    cursor = sc.cursor
    stop = step.signal_of("stop")
    target = state.next if step.verdict is None else choose_target(state, step.verdict)
    if target is None:
        if stop is not None:
            return Ending("signal_stop", stop_reason=stop.payload)
        error, detail = no_route_error(
            cursor.current_state, step.verdict, step.details, raised=step.raised
        )
        return Ending("error", error, error_detail=detail)
    ctx.result = cursor.last_result
    try:
        resolved = _resolve(sc, target, ctx)
    except RoutingError as exc:
        return Ending("error", str(exc))
    route: dict[str, Any] = {"from": cursor.current_state, "to": resolved}
    if step.verdict is not None:
        route["verdict"] = step.verdict
    sc.emit(ROUTE, **route)
    cursor.current_state = resolved
    if stop is not None:
        return Ending("signal_stop", stop_reason=stop.payload)
    return None


def leave_over_visited(sc: StepContext, state: StateConfig) -> Ending | None:
    """A state that used up `max_visits`: go to `on_max_visits`, or stop as stalled."""
    cursor = sc.cursor
    name = cursor.current_state
    count, limit = sc.guards.visits.count(name), state.max_visits or 0
    cycled = name in cursor.redirected
    if state.on_max_visits is None or cycled:
        return Ending("stalled", visit_limit_message(name, count, limit, cycled=cycled))
    cursor.redirected.add(name)
    return _move(sc, state.on_max_visits, "max_visits")


def leave_stalled(sc: StepContext, stall: Stall) -> Ending | None:
    """A stalled state: go to the loop's `on_stall` state once per streak, or stop."""
    if stall.recover_to is None:
        return Ending("stalled", stall.message)
    return _move(sc, stall.recover_to, "stalled")


def maintain_restart(sc: StepContext, state: StateConfig) -> Ending | None:
    """In maintain mode a terminal state starts the loop over (one iteration; for a HEAD
    loop also one pass, §7.4)."""
    sc.cursor.iteration += 1
    if isinstance(state, HeadStateConfig):
        sc.cursor.head.passes += 1
    return _move(sc, state.on_maintain or sc.fsm.initial, "maintain")


def _move(sc: StepContext, target: str, reason: str) -> Ending | None:
    """Go to `target` for `reason` (a `route` event says why), or end on a bad target."""
    cursor = sc.cursor
    try:
        resolved = _resolve(sc, target, sc.interpolation())
    except RoutingError as exc:
        return Ending("error", str(exc))
    sc.emit(ROUTE, **{"from": cursor.current_state, "to": resolved, "reason": reason})
    cursor.current_state = resolved
    return None


def _resolve(sc: StepContext, target: str, ctx: InterpolationContext) -> str:
    return resolve_target(
        target, current_state=sc.cursor.current_state, state_names=sc.fsm.states, ctx=ctx
    )
