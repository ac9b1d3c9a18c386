"""`action_type: human_approval` states in both dialects (issue 26 item 2).

- `fold_legacy_approvals`: a legacy file writes an approval state's routes as `on_yes`,
  `on_no`, `on_edit`, `on_timeout` (the shape little-loops proposed); the legacy record
  has no such fields, so they become the state's route table (`yes`, `no`, `edit`,
  `timeout`) before the shape check. A HEAD file keeps them as HEAD reads any `on_<x>`.
- `approval_findings`: the checks on a built loop: a question, the `yes` and `no`
  routes, nothing to run or judge; and the warning for a loop that continues handoffs
  unattended (`on_handoff: continue`) but may wait for ever for a person.
"""

from __future__ import annotations

import copy
from typing import Any

from little_loops.fsm.loading.value_checks import ValueCheck
from little_loops.fsm.model.approval import APPROVAL_ROUTE_KEYS, HUMAN_APPROVAL, is_approval
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = ["approval_findings", "fold_legacy_approvals", "or_approval"]


def or_approval(check: ValueCheck) -> ValueCheck:
    """`check` of `action_type` that also takes `human_approval` (our addition: the
    dialects' own messages, which list their types, stay as they were)."""

    def checked(value: Any) -> str | None:
        return None if value == HUMAN_APPROVAL else check(value)

    return checked


def fold_legacy_approvals(data: dict[str, Any]) -> tuple[dict[str, Any], list[ValidationError]]:
    """`data` with each legacy approval state's `on_yes`/... in its route table (a copy
    when anything moved), and the errors of routes written both ways."""
    states = data.get("states")
    if not isinstance(states, dict) or not any(_folds(s) for s in states.values()):
        return data, []
    data = copy.copy(data)
    data["states"] = folded = dict(states)
    errors: list[ValidationError] = []
    for name, state in states.items():
        if _folds(state):
            folded[name], error = _fold_state(state, f"states.{name}")
            errors.extend(error)
    return data, errors


def _folds(state: Any) -> bool:
    return (
        isinstance(state, dict)
        and state.get("action_type") == HUMAN_APPROVAL
        and any(key in APPROVAL_ROUTE_KEYS for key in state)
    )


def _fold_state(state: dict[str, Any], path: str) -> tuple[dict[str, Any], list[ValidationError]]:
    if "route" in state:
        message = (
            "write the answers' routes as on_yes/on_no/on_edit/on_timeout or as route:, not both"
        )
        return state, [ValidationError(message, path)]
    kept = {key: value for key, value in state.items() if key not in APPROVAL_ROUTE_KEYS}
    routes = {APPROVAL_ROUTE_KEYS[key]: state[key] for key in state if key in APPROVAL_ROUTE_KEYS}
    errors = [
        ValidationError(f"must be a state name, got {value!r}", f"{path}.on_{verdict}")
        for verdict, value in routes.items()
        if not isinstance(value, str)
    ]
    return {**kept, "route": routes}, errors


def approval_findings(fsm: FSMLoop) -> list[ValidationError]:
    """The errors and warnings of the loop's approval states."""
    findings: list[ValidationError] = []
    for name, state in fsm.states.items():
        if is_approval(state):
            findings.extend(_state_findings(fsm, name, state))
    return findings


def _state_findings(fsm: FSMLoop, name: str, state: StateConfig) -> list[ValidationError]:
    path = f"states.{name}"
    errors = []
    if not state.action:
        errors.append(ValidationError("a human_approval state needs its question as action:", path))
    for verdict in ("yes", "no"):
        if not _route(state, verdict):
            errors.append(ValidationError(f"a human_approval state needs on_{verdict}:", path))
    if state.evaluate is not None:
        errors.append(ValidationError("a human_approval state takes no evaluate:", path))
    if not state.timeout and fsm.on_handoff == "continue":
        message = (
            "this approval has no timeout: in a loop with on_handoff: continue (meant to "
            "run unattended) it may wait for ever; give it a timeout: (seconds)"
        )
        errors.append(ValidationError(message, path, ValidationSeverity.WARNING))
    return errors


def _route(state: StateConfig, verdict: str) -> bool:
    if state.route is not None:
        return verdict in state.route.routes or state.route.default is not None
    shorthand = state.on_success if verdict == "yes" else state.on_failure
    return shorthand is not None or (
        isinstance(state, HeadStateConfig) and verdict in state.on_verdicts
    )
