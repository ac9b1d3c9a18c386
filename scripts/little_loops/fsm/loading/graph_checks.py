"""The graph checks on a built `FSMLoop`: the reference's `validate_fsm`.

The last stage of `pipeline` before our own file-level checks. `validate_fsm` makes the
eleven checks of the reference and returns every finding (errors and warnings); it never
raises for a well-typed loop. The reference path `little_loops.fsm.validation` re-exports
it, and its private names `_validate_evaluator`, `_validate_state_routing` and
`_find_reachable_states` are `state_evaluator_errors`, `transition_errors` and
`reachable_states` here.

Choices where we differ from the reference:
- Route targets containing `${` are resolved at run time, so the unknown-state check and
  the reachability walk skip them (as they skip `$current`, which is allowed everywhere,
  `next` included).
- The unknown-state error keeps the reference text and path and appends the defined
  states: `states.check: References unknown state 'fixx' (states are: check, fix, done)`.
- Several unknown references of one state are reported in sorted order.
- A HEAD state (spec/ll-head-dialect.md §3, §4) gets `head_transition_errors` instead of
  the legacy "no transition" rule, and a HEAD loop's loop-level routes (`on_max_steps`,
  ...) are edges from every state for reachability.
"""

from __future__ import annotations

from collections import deque

from little_loops.fsm.loading.budget_checks import budget_targets
from little_loops.fsm.loading.head_graph_checks import head_transition_errors, loop_level_targets
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.loop_vocabulary import (
    DIRECTIONS,
    EVALUATOR_REQUIRED_FIELDS,
    VALID_OPERATORS,
)
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, EvaluateConfig, FSMLoop, StateConfig


def _is_resolved_at_run_time(target: str) -> bool:
    return target == CURRENT_STATE_TOKEN or "${" in target


def _unknown_reference_errors(fsm: FSMLoop, name: str, state: StateConfig) -> list[ValidationError]:
    unknown = sorted(
        ref
        for ref in state.get_referenced_states()
        if not _is_resolved_at_run_time(ref) and ref not in fsm.states
    )
    defined = ", ".join(fsm.states)
    return [
        ValidationError(
            f"References unknown state '{ref}' (states are: {defined})", f"states.{name}"
        )
        for ref in unknown
    ]


def _evaluator_errors(evaluate: EvaluateConfig, path: str) -> list[ValidationError]:
    errors = [
        ValidationError(f"Evaluator type '{evaluate.type}' requires '{field}' field", path)
        for field in EVALUATOR_REQUIRED_FIELDS.get(evaluate.type, [])
        if getattr(evaluate, field) is None
    ]
    if evaluate.operator is not None and evaluate.operator not in VALID_OPERATORS:
        operators = ", ".join(sorted(VALID_OPERATORS))
        message = f"Invalid operator '{evaluate.operator}'. Must be one of: {operators}"
        errors.append(ValidationError(message, f"{path}.operator"))
    if evaluate.type == "convergence":
        errors.extend(_convergence_errors(evaluate, path))
    if evaluate.type == "llm_structured" and not 0 <= evaluate.min_confidence <= 1:
        message = "min_confidence must be between 0 and 1"
        errors.append(ValidationError(message, f"{path}.min_confidence"))
    return errors


def _convergence_errors(evaluate: EvaluateConfig, path: str) -> list[ValidationError]:
    errors: list[ValidationError] = []
    if evaluate.direction not in DIRECTIONS:
        message = f"Invalid direction '{evaluate.direction}'. Must be 'minimize' or 'maximize'"
        errors.append(ValidationError(message, f"{path}.direction"))
    tolerance = evaluate.tolerance
    # A string tolerance is a `${...}` template, checked when it is resolved.
    if isinstance(tolerance, int | float) and tolerance < 0:
        errors.append(ValidationError("Tolerance cannot be negative", f"{path}.tolerance"))
    return errors


def transition_errors(name: str, state: StateConfig) -> list[ValidationError]:
    if isinstance(state, HeadStateConfig):
        return head_transition_errors(name, state)
    path = f"states.{name}"
    # (`on_partial`: a `parallel:` state's, issue 25; no other legacy state has it)
    partial = getattr(state, "on_partial", None)
    shorthand = (state.on_success, state.on_failure, state.on_error, partial)
    has_shorthand = any(target is not None for target in shorthand)
    errors: list[ValidationError] = []
    if has_shorthand and state.route is not None:
        message = (
            "Both shorthand routing (on_success/on_failure/on_error) and full route table "
            "defined. Route table will take precedence."
        )
        errors.append(ValidationError(message, path, ValidationSeverity.WARNING))
    if not (has_shorthand or state.route is not None or state.next is not None or state.terminal):
        message = (
            "State has no transition defined. Add routing, 'next', or mark as 'terminal: true'"
        )
        errors.append(ValidationError(message, path))
    return errors


def _visit_limit_errors(name: str, state: StateConfig) -> list[ValidationError]:
    if state.on_max_visits is not None and state.max_visits is None:
        message = "on_max_visits has no effect without max_visits"
        return [ValidationError(message, f"states.{name}.on_max_visits")]
    return []


def _stall_route_findings(fsm: FSMLoop) -> list[ValidationError]:
    """`on_stall` must name a state, and does nothing while the stall guard is off."""
    target = fsm.on_stall
    if target is None:
        return []
    if not _is_resolved_at_run_time(target) and target not in fsm.states:
        defined = ", ".join(fsm.states)
        message = f"References unknown state '{target}' (states are: {defined})"
        return [ValidationError(message, "on_stall")]
    if fsm.effective_stall_threshold() == 0:
        message = "on_stall has no effect while the stall guard is off (set stall_threshold)"
        return [ValidationError(message, "on_stall", ValidationSeverity.WARNING)]
    return []


def reachable_states(fsm: FSMLoop) -> set[str]:
    reachable: set[str] = set()
    queue = deque([fsm.initial])
    if fsm.on_stall is not None and not _is_resolved_at_run_time(fsm.on_stall):
        # A stall can happen in any state, so the recovery state is an edge from all.
        queue.append(fsm.on_stall)
    queue.extend(loop_level_targets(fsm))
    queue.extend(budget_targets(fsm))  # addition: the loop's wrap-up, from anywhere
    while queue:
        name = queue.popleft()
        if name in reachable or name not in fsm.states:
            continue
        reachable.add(name)
        targets = {*fsm.states[name].get_referenced_states(), *budget_targets(fsm, name)}
        queue.extend(target for target in targets if not _is_resolved_at_run_time(target))
    return reachable


def _unreachable_warnings(fsm: FSMLoop) -> list[ValidationError]:
    reachable = reachable_states(fsm)
    return [
        ValidationError(
            "State is not reachable from initial state",
            f"states.{name}",
            ValidationSeverity.WARNING,
        )
        for name in fsm.states
        if name not in reachable
    ]


def validate_fsm(fsm: FSMLoop) -> list[ValidationError]:
    """Graph findings of a well-typed loop: errors and warnings, empty when valid."""
    findings: list[ValidationError] = []
    if fsm.initial not in fsm.states:
        message = f"Initial state '{fsm.initial}' not found in states"
        findings.append(ValidationError(message, "initial"))
    if not fsm.get_terminal_states():
        message = "No terminal state defined. At least one state must have 'terminal: true'"
        findings.append(ValidationError(message, "states"))
    for name, state in fsm.states.items():
        findings.extend(_unknown_reference_errors(fsm, name, state))
        if state.evaluate is not None:
            findings.extend(_evaluator_errors(state.evaluate, f"states.{name}.evaluate"))
        findings.extend(transition_errors(name, state))
        findings.extend(_visit_limit_errors(name, state))
    findings.extend(_stall_route_findings(fsm))
    findings.extend(_unreachable_warnings(fsm))
    return findings


def state_evaluator_errors(state_name: str, evaluate: EvaluateConfig) -> list[ValidationError]:
    """The evaluator findings of one state (the reference's `_validate_evaluator`)."""
    return _evaluator_errors(evaluate, f"states.{state_name}.evaluate")
