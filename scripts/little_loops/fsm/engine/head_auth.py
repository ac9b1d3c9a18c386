"""HEAD sends a prompt action's authentication failure straight to `on_error`
(spec/ll-head-dialect.md §7.6): no evaluation, no route table, no `retryable_exit_codes`
detour, since running the state again cannot log claude in. Without `on_error` the
failure takes the usual way (the `error` verdict and its routes)."""

from __future__ import annotations

from little_loops.fsm.engine.head_routing import HeadRoute
from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.process.claude_refusal import is_auth_failure

__all__ = ["AUTH_FAILURE", "auth_failure_route"]

AUTH_FAILURE = "auth_failure"
"""The `reason` of the `route` event an authentication failure takes."""


def auth_failure_route(state: HeadStateConfig, step: Step) -> HeadRoute | None:
    """The route to `on_error` when `step`'s prompt action failed to authenticate."""
    result = step.action
    if state.on_error is None or not step.slash or result is None or result.error is None:
        return None
    claude = result.claude
    status = claude.api_error_status if claude is not None else None
    text = claude.result_text if claude is not None and claude.result_text else result.output
    if not is_auth_failure(text, status):
        return None
    return HeadRoute(state.on_error, AUTH_FAILURE)
