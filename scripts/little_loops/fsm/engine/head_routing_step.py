"""Moving a HEAD run to its next state after a step (spec/ll-head-dialect.md §3.3, §7.2).

`route_head_step` is `routing_step.route_after_step` for a `HeadStateConfig`: a `next:`
state follows §3.3.1 (a failing action may go to `on_error`, a killed one stops the run
as interrupted without it), an evaluated state takes the §7.2 detour for a non-retryable
`error` and then `head_routing.choose_head_target`. Targets are resolved as everywhere
(`$current`, templates) and the move is one `route` event; a `LOOP_STOP:` signal ends the
run after it, as for a legacy state.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.events import ACTION_ERROR, ROUTE
from little_loops.fsm.engine.head_routing import (
    HeadRoute,
    choose_head_target,
    next_state_route,
    retryable_route,
)
from little_loops.fsm.engine.routing import RoutingError, no_route_error, resolve_target
from little_loops.fsm.engine.step_result import Ending, Step
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.model.head_loop import HeadStateConfig

__all__ = ["move_head", "route_head_step"]

# `terminated_by` of a run whose `next:` action was killed by a signal with no `on_error`.
INTERRUPTED = "signal"


def route_head_step(
    sc: StepContext, state: HeadStateConfig, ctx: InterpolationContext, step: Step
) -> Ending | None:
    """Follow the HEAD route for `step`; a stop signal ends the run after it."""
    stop = step.signal_of("stop")
    route = _next_state(sc, state, step) if state.next else _evaluated(sc, state, step)
    if isinstance(route, Ending):
        return route
    if route.target is None and stop is not None:
        return Ending("signal_stop", stop_reason=stop.payload)
    if route.target is None and sc.fsm.maintain:
        # §3.3.5: in maintain mode a verdict without a route starts the loop over
        route = HeadRoute(state.on_maintain or sc.fsm.initial, "maintain")
    if route.target is None:
        error, detail = no_route_error(
            sc.cursor.current_state, step.verdict, step.details, raised=step.raised
        )
        return Ending("error", error, error_detail=detail)
    ctx.result = sc.cursor.last_result
    ending = move_head(sc, route, ctx, verdict=step.verdict)
    if ending is None and stop is not None:
        return Ending("signal_stop", stop_reason=stop.payload)
    return ending


def move_head(
    sc: StepContext, route: HeadRoute, ctx: InterpolationContext, *, verdict: str | None = None
) -> Ending | None:
    """Resolve `route.target`, emit `route` (with the verdict and the reason when there is
    one) and move the cursor; a target that cannot be resolved ends the run."""
    cursor = sc.cursor
    assert route.target is not None
    try:
        resolved = resolve_target(
            route.target, current_state=cursor.current_state, state_names=sc.fsm.states, ctx=ctx
        )
    except RoutingError as exc:
        return Ending("error", str(exc))
    event: dict[str, Any] = {"from": cursor.current_state, "to": resolved}
    if verdict is not None:
        event["verdict"] = verdict
    if route.reason is not None:
        event["reason"] = route.reason
    sc.emit(ROUTE, **event)
    cursor.current_state = resolved
    return None


def _evaluated(sc: StepContext, state: HeadStateConfig, step: Step) -> HeadRoute:
    verdict = step.verdict
    assert verdict is not None
    if verdict == "error":
        detour = retryable_route(state, step.action)
        if detour is not None:
            return detour
    return choose_head_target(state, verdict, sc.cursor.head.judge_holds, sc.cursor.current_state)


def _next_state(sc: StepContext, state: HeadStateConfig, step: Step) -> HeadRoute | Ending:
    """§3.3.1: an action that could not start, or was killed, before the usual rule."""
    action = step.action
    if step.verdict == "error" and (action is None or action.error is not None):
        error = str(step.details.get("error", ""))
        if state.on_error is None:
            return Ending("error", error or None)
        sc.emit(ACTION_ERROR, state=sc.cursor.current_state, error=error, route=state.on_error)
        return HeadRoute(state.on_error, "action_error")
    if action is not None and action.exit_code < 0 and state.on_error is None:
        return Ending(INTERRUPTED, f"action killed by signal {-action.exit_code}")
    return next_state_route(state, action)
