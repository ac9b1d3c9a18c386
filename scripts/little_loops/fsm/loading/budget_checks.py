"""The checks of the budget keys (`model.budgets`), in both dialects.

`budget_shape_findings` runs on the raw mapping beside the dialect's own shape checks
(which see it without the budget keys, so their unknown-key messages stay as they were):
types, and a state budget needing its `on_budget` route. `budget_route_findings` runs on
the built loop: every `on_budget` must name a state. `budget_targets` gives the graph
walk the states budgets may route to, so a wrap-up state reached only that way is not
reported unreachable.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.loading.value_checks import (
    FieldCheck,
    check_fields,
    check_positive_int,
    check_positive_number,
    check_string,
    join_path,
    nullable,
    scalar,
)
from little_loops.fsm.model.budgets import LOOP_BUDGET_KEYS, STATE_BUDGET_KEYS, loop_budget
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, FSMLoop

__all__ = ["budget_route_findings", "budget_shape_findings", "budget_targets"]

_TOKENS = scalar(nullable(check_positive_int))
_ROUTE = scalar(nullable(check_string))
_LOOP_CHECKS: dict[str, FieldCheck] = {"max_tokens": _TOKENS, "on_budget": _ROUTE}
_STATE_CHECKS: dict[str, FieldCheck] = {
    "max_cost_usd": scalar(nullable(check_positive_number)),
    "max_tokens": _TOKENS,
    "on_budget": _ROUTE,
}
_NEEDS_ROUTE = "required with {keys}: the state to go to when this state's budget is spent"
_INERT_ROUTE = "on_budget has no effect without max_cost_usd or max_tokens on the state"


def budget_shape_findings(data: dict[str, Any]) -> list[ValidationError]:
    """The budget keys' findings in a raw loop mapping (errors, and a warning)."""
    loop_keys = {key: data[key] for key in LOOP_BUDGET_KEYS if key in data}
    findings = check_fields(loop_keys, None, _LOOP_CHECKS)
    states = data.get("states")
    if isinstance(states, dict):
        for name, state in states.items():
            if isinstance(state, dict):
                findings.extend(_state_findings(state, join_path("states", name)))
    return findings


def _state_findings(state: dict[str, Any], path: str) -> list[ValidationError]:
    keys = {key: state[key] for key in STATE_BUDGET_KEYS if key in state}
    findings = check_fields(keys, path, _STATE_CHECKS)
    limits = [key for key in ("max_cost_usd", "max_tokens") if keys.get(key) is not None]
    route_path = join_path(path, "on_budget")
    if limits and keys.get("on_budget") is None:
        message = _NEEDS_ROUTE.format(keys=" and ".join(limits))
        findings.append(ValidationError(message, route_path))
    elif not limits and keys.get("on_budget") is not None:
        findings.append(ValidationError(_INERT_ROUTE, route_path, ValidationSeverity.WARNING))
    return findings


def budget_route_findings(fsm: FSMLoop) -> list[ValidationError]:
    """Errors for `on_budget` routes naming no state (`$current` and templates are
    resolved at run time)."""
    defined = ", ".join(fsm.states)
    return [
        ValidationError(f"References unknown state '{target}' (states are: {defined})", path)
        for path, target in _routes(fsm)
        if _static(target) and target not in fsm.states
    ]


def budget_targets(fsm: FSMLoop, state: str | None = None) -> list[str]:
    """The states budgets may route to: the loop's wrap-up (from anywhere) when `state`
    is None, else `state`'s own `on_budget` (static names only)."""
    budgets = loop_budget(fsm)
    if budgets is None:
        return []
    if state is None:
        target = budgets.on_budget
    else:
        own = budgets.states.get(state)
        target = own.on_budget if own is not None else None
    return [target] if target is not None and _static(target) else []


def _routes(fsm: FSMLoop) -> list[tuple[str, str]]:
    budgets = loop_budget(fsm)
    if budgets is None:
        return []
    routes = [("on_budget", budgets.on_budget)]
    routes += [(f"states.{name}.on_budget", own.on_budget) for name, own in budgets.states.items()]
    return [(path, target) for path, target in routes if target is not None]


def _static(target: str) -> bool:
    return target != CURRENT_STATE_TOKEN and "${" not in target
