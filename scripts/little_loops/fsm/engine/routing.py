"""Choosing and resolving the next state from a verdict.

Routing order: the exact verdict, then `_error` (for the `error` verdict only), then `_`.
A state with a route table uses only the table; otherwise the shorthand keys
`on_success`, `on_failure` and `on_error` apply. A target is a state name, the token
`$current`, or a template containing `${...}` that is interpolated when the route is
taken (with `result` available) and must name an existing state.

This is the legacy dialect's routing; a HEAD-dialect state routes the HEAD way
(`head_routing`: yes/no synonyms, the no -> `on_error` fall-through, `on_<verdict>`
routes, cannot-judge holds), resolving its targets with `resolve_target` here.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.interpolation import InterpolationContext, InterpolationError, interpolate
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, StateConfig

NO_VALID_TRANSITION = "No valid transition"
"""`ExecutionResult.error` when a verdict has no route, exactly as in the reference; the
message people read (`no_route_message`) goes in `error_detail`. An error verdict that
carries its own message (an action that could not start, which the reference raised)
ends the run with that message instead, as it did there."""


class RoutingError(Exception):
    """A route target that cannot be resolved to a state of the loop."""


def choose_target(state: StateConfig, verdict: str) -> str | None:
    """The unresolved target for `verdict`, or None when the state has no route for it."""
    table = state.route
    if table is not None:
        if verdict in table.routes:
            return table.routes[verdict]
        if verdict == "error" and table.error is not None:
            return table.error
        return table.default
    shorthand = {"success": state.on_success, "failure": state.on_failure, "error": state.on_error}
    return shorthand.get(verdict)


def no_route_message(state_name: str, verdict: str | None, details: dict[str, Any]) -> str:
    """Why the run ends when a verdict has no route: an error verdict's own message wins."""
    if verdict == "error" and isinstance(details.get("error"), str):
        return str(details["error"])  # the failure itself says more than "no route"
    return f"No valid transition for verdict '{verdict}' in state '{state_name}'"


def no_route_error(
    state_name: str, verdict: str | None, details: dict[str, Any], *, raised: bool = False
) -> tuple[str, str | None]:
    """`(error, error_detail)` of a run that ends because a verdict has no route: the
    reference's bare text, with `no_route_message` for people. `raised`: the error is one
    the reference raised instead of judging (an action that could not be interpolated or
    started, or timed out), which ended its run with that message alone."""
    message = no_route_message(state_name, verdict, details)
    if raised or _setup_problem(details):
        return message, None
    return NO_VALID_TRANSITION, message


def _setup_problem(details: dict[str, Any]) -> bool:
    """An LLM judgement that could not be made at all (no credentials, LLM turned off):
    the run's setup is wrong, not the output, and the message says how to fix it."""
    return bool(details.get("auth_error") or details.get("llm_disabled"))


def resolve_target(
    target: str,
    *,
    current_state: str,
    state_names: set[str] | dict[str, StateConfig],
    ctx: InterpolationContext,
) -> str:
    """Turn a target into a state name: `$current`, templates, or the name itself."""
    if target == CURRENT_STATE_TOKEN:
        return current_state
    resolved = target
    if "${" in target:
        try:
            resolved = interpolate(target, ctx)
        except InterpolationError as exc:
            raise RoutingError(f"Route target '{target}' could not be resolved: {exc}") from exc
    if resolved not in state_names:
        if resolved == target:
            raise RoutingError(f"Route target '{target}' is not a state of this loop")
        raise RoutingError(f"Route target '{target}' resolved to unknown state '{resolved}'")
    return resolved
