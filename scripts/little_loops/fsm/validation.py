"""Deciding whether a loop file is a usable loop: the reference surface and the graph checks.

Every check between "bytes on disk" and "an `FSMLoop` the executor may run", in three
layers, each in its own module:

1. File (`loop_file.load_loop_mapping`): an existing regular file of at most 5 MiB,
   UTF-8 YAML whose top level is a mapping.
2. Shape (`loop_shape.check_loop_mapping`): unknown keys, wrong types and values outside
   a fixed set (`loop_vocabulary`) in the raw mapping, each with a dotted key path.
   Passing it guarantees that `FSMLoop.from_dict` cannot fail.
3. Graph (`validate_fsm`, here): the eleven checks of the reference on a built `FSMLoop`.
   Then our additions (`_file_level_errors`, each in its own module): the loop name,
   `${...}` variables, numeric evaluator settings, the action length.

`load_and_validate` runs the three layers like the reference does (no paradigm
compilation); `load_loop` also compiles paradigm files on the fly. Shape errors are
reported before the graph is built, so a typo such as `on_sucess` is reported on its own
instead of together with the "no transition" error it causes. This module re-exports the
names of the other layers, so `little_loops.fsm.validation` stays the one import for them.

Choices where we differ from the reference:
- Route targets containing `${` are resolved at run time, so the unknown-state check and
  the reachability walk skip them (as they skip `$current`, which is allowed everywhere,
  `next` included).
- The unknown-state error keeps the reference text and path and appends the defined
  states: `states.check: References unknown state 'fixx' (states are: check, fix, done)`.
- Several unknown references of one state are reported in sorted order.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from little_loops.fsm.argument_limits import action_length_errors
from little_loops.fsm.context_overrides import with_context_overrides
from little_loops.fsm.errors import LoopFileError, LoopValidationError
from little_loops.fsm.findings import ValidationError, ValidationSeverity
from little_loops.fsm.interpolation_checks import interpolation_errors
from little_loops.fsm.loop_file import MAX_LOOP_FILE_BYTES, load_loop_mapping
from little_loops.fsm.loop_name import loop_name_errors
from little_loops.fsm.loop_shape import check_loop_mapping, is_paradigm_spec
from little_loops.fsm.loop_vocabulary import (
    ACTION_TYPES,
    CHECKPOINT_KINDS,
    COMMON_SPEC_KEYS,
    CONSTRAINT_KEYS,
    DIRECTIONS,
    EVALUATOR_REQUIRED_FIELDS,
    EVALUATOR_TYPES,
    HANDOFF_BEHAVIORS,
    PARADIGM_SPEC_KEYS,
    PARADIGMS,
    REQUIRED_LOOP_FIELDS,
    SPECIAL_ROUTE_KEYS,
    UNTIL_KEYS,
    VALID_OPERATORS,
)
from little_loops.fsm.numeric_settings import numeric_setting_errors
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, EvaluateConfig, FSMLoop, StateConfig
from little_loops.fsm.value_checks import (
    FieldCheck,
    ValueCheck,
    describe_value,
    not_a_string_message,
)

__all__ = [
    "ACTION_TYPES",
    "CHECKPOINT_KINDS",
    "COMMON_SPEC_KEYS",
    "CONSTRAINT_KEYS",
    "DIRECTIONS",
    "EVALUATOR_REQUIRED_FIELDS",
    "EVALUATOR_TYPES",
    "HANDOFF_BEHAVIORS",
    "MAX_LOOP_FILE_BYTES",
    "PARADIGMS",
    "PARADIGM_SPEC_KEYS",
    "REQUIRED_LOOP_FIELDS",
    "SPECIAL_ROUTE_KEYS",
    "UNTIL_KEYS",
    "VALID_OPERATORS",
    "FieldCheck",
    "ValidationError",
    "ValidationSeverity",
    "ValueCheck",
    "check_loop_mapping",
    "describe_value",
    "is_paradigm_spec",
    "load_and_validate",
    "load_loop",
    "load_loop_mapping",
    "not_a_string_message",
    "validate_fsm",
]

logger = logging.getLogger("little_loops.fsm.validation")


# ---------------------------------------------------------------------------
# Graph checks on a built FSMLoop
# ---------------------------------------------------------------------------


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


def _transition_errors(name: str, state: StateConfig) -> list[ValidationError]:
    path = f"states.{name}"
    shorthand = (state.on_success, state.on_failure, state.on_error)
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


def _reachable_states(fsm: FSMLoop) -> set[str]:
    reachable: set[str] = set()
    queue = deque([fsm.initial])
    if fsm.on_stall is not None and not _is_resolved_at_run_time(fsm.on_stall):
        # A stall can happen in any state, so the recovery state is an edge from all.
        queue.append(fsm.on_stall)
    while queue:
        name = queue.popleft()
        if name in reachable or name not in fsm.states:
            continue
        reachable.add(name)
        targets = fsm.states[name].get_referenced_states()
        queue.extend(target for target in targets if not _is_resolved_at_run_time(target))
    return reachable


def _unreachable_warnings(fsm: FSMLoop) -> list[ValidationError]:
    reachable = _reachable_states(fsm)
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
        findings.extend(_transition_errors(name, state))
        findings.extend(_visit_limit_errors(name, state))
    findings.extend(_stall_route_findings(fsm))
    findings.extend(_unreachable_warnings(fsm))
    return findings


# ---------------------------------------------------------------------------
# Loading files
# ---------------------------------------------------------------------------


def _require_loop_fields(data: dict[str, Any], path: Path) -> None:
    missing = [key for key in REQUIRED_LOOP_FIELDS if key not in data]
    if missing:
        message = f"FSM file missing required fields: {', '.join(missing)}"
        raise LoopFileError(str(path), message)


def _raise_if_errors(path: Path, errors: list[ValidationError]) -> None:
    if errors:
        raise LoopValidationError(str(path), errors)


def _file_level_errors(fsm: FSMLoop) -> list[ValidationError]:
    """Mistakes the reference found only at run time (or never): our additions."""
    return [
        *loop_name_errors(fsm.name),
        *interpolation_errors(fsm),
        *numeric_setting_errors(fsm),
        *action_length_errors(fsm),
    ]


def _validated(fsm: FSMLoop, path: Path) -> FSMLoop:
    findings = validate_fsm(fsm) + _file_level_errors(fsm)
    errors = [item for item in findings if item.severity is ValidationSeverity.ERROR]
    _raise_if_errors(path, errors)
    for warning in findings:  # only warnings are left: errors have raised
        logger.warning("%s", warning)
    return fsm


def _load_fsm_mapping(data: dict[str, Any], path: Path) -> FSMLoop:
    _require_loop_fields(data, path)
    _raise_if_errors(path, check_loop_mapping(data))
    return _validated(FSMLoop.from_dict(data), path)


def load_and_validate(path: Path | str) -> FSMLoop:
    """Load an FSM loop file and validate it (paradigm files are not compiled).

    Raises `LoopNotFoundError` for a missing file, `LoopSyntaxError` for bad YAML,
    `LoopFileError` for a file that is not a loop, `LoopValidationError` for shape and
    graph errors. Warnings are logged on `little_loops.fsm.validation`.
    """
    path = Path(path)
    return _load_fsm_mapping(load_loop_mapping(path), path)


def load_loop(path: Path | str, *, context_overrides: Mapping[str, str] | None = None) -> FSMLoop:
    """Like `load_and_validate`, but a paradigm file is compiled first.

    `context_overrides` (`run --context`) are set in the file's `context` before checking.
    """
    path = Path(path)
    data = with_context_overrides(load_loop_mapping(path), context_overrides or {})
    if not is_paradigm_spec(data):
        return _load_fsm_mapping(data, path)
    _raise_if_errors(path, check_loop_mapping(data))
    # Imported here because the compilers use this module's checks.
    from little_loops.fsm.compilers import compile_paradigm

    try:
        fsm = compile_paradigm(data)
    except ValueError as exc:
        raise LoopFileError(str(path), str(exc)) from None
    return _validated(fsm, path)


# --- The reference's private helper names (fsm-api compatibility) -----------------------


def _validate_evaluator(state_name: str, evaluate: EvaluateConfig) -> list[ValidationError]:
    return _evaluator_errors(evaluate, f"states.{state_name}.evaluate")


_validate_state_routing = _transition_errors
_find_reachable_states = _reachable_states
