"""Shape checks on a raw loop mapping, before `FSMLoop.from_dict` sees it.

Unknown keys, wrong types and values outside a fixed set are errors, each with a dotted
key path (`states.check.evaluate.type`) and a message that names what is allowed.
Passing `check_loop_mapping` guarantees that `from_dict` cannot fail. Paradigm specs (a
`paradigm` other than `fsm`, no `initial`/`states`) get the same treatment for the keys
the compilers know; their required keys are checked by the compilers.

The shape stage of `pipeline`; the paradigm compilers (`paradigms`) use it too, and the
reference path `validation` re-exports it.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.loading.approval_keys import or_approval
from little_loops.fsm.loading.parallel_checks import check_parallel, parallel_state_errors
from little_loops.fsm.loading.value_checks import (
    FieldCheck,
    check_bool,
    check_duration,
    check_fields,
    check_fraction,
    check_mapping,
    check_non_empty_string,
    check_non_negative_int,
    check_non_negative_number,
    check_positive_int,
    check_positive_number,
    check_string,
    check_string_list,
    check_target,
    check_tolerance,
    describe_value,
    join_path,
    mapping_of,
    nullable,
    one_of,
    scalar,
    unchecked,
)
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.model.host_choice import unknown_host_message
from little_loops.fsm.model.loop_vocabulary import (
    ACTION_TYPES,
    CHECKPOINT_KINDS,
    CONSTRAINT_KEYS,
    DIRECTIONS,
    EVALUATOR_TYPES,
    HANDOFF_BEHAVIORS,
    PARADIGM_SPEC_KEYS,
    PARADIGMS,
    REQUIRED_LOOP_FIELDS,
    SPECIAL_ROUTE_KEYS,
    UNTIL_KEYS,
    VALID_OPERATORS,
)


def _check_route(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, dict):
        return [ValidationError(f"must be a mapping, got {describe_value(value)}", path)]
    errors: list[ValidationError] = []
    for verdict, target in value.items():
        if not isinstance(verdict, str):
            message = f"verdict names must be strings, got {describe_value(verdict)}"
            errors.append(ValidationError(message, path))
        elif verdict.startswith("_") and verdict not in SPECIAL_ROUTE_KEYS:
            message = f"unknown key '{verdict}' (allowed special keys: _, _error)"
            errors.append(ValidationError(message, join_path(path, verdict)))
        else:
            errors.extend(scalar(check_string)(target, join_path(path, verdict)))
    return errors


_optional_string = scalar(nullable(check_string))

_EVALUATE_CHECKS: dict[str, FieldCheck] = {
    "type": scalar(one_of("evaluator type", EVALUATOR_TYPES)),
    "operator": scalar(nullable(one_of("operator", tuple(sorted(VALID_OPERATORS))))),
    "target": scalar(nullable(check_target)),
    "tolerance": scalar(nullable(check_tolerance)),
    "pattern": _optional_string,
    "negate": scalar(check_bool),
    "path": _optional_string,
    "prompt": _optional_string,
    "schema": scalar(nullable(check_mapping)),
    "min_confidence": scalar(check_fraction),
    "uncertain_suffix": scalar(check_bool),
    "source": _optional_string,
    "previous": _optional_string,
    "direction": scalar(one_of("direction", DIRECTIONS)),
}

_STATE_CHECKS: dict[str, FieldCheck] = {
    "action": _optional_string,
    "evaluate": mapping_of(_EVALUATE_CHECKS, required=("type",)),
    "route": _check_route,
    "on_success": _optional_string,
    "on_failure": _optional_string,
    "on_error": _optional_string,
    "next": _optional_string,
    "terminal": scalar(check_bool),
    "capture": _optional_string,
    "timeout": scalar(nullable(check_positive_int)),
    "on_maintain": _optional_string,
    "action_type": scalar(nullable(or_approval(one_of("action_type", ACTION_TYPES)))),
    "max_visits": scalar(nullable(check_positive_int)),
    "on_max_visits": _optional_string,
}
# The reference's keys, which its "unknown key" message lists (our additions below are
# accepted without changing that message).
_REFERENCE_STATE_KEYS = ", ".join(_STATE_CHECKS)
_OUR_STATE_CHECKS: dict[str, FieldCheck] = {
    **_STATE_CHECKS,
    "parallel": check_parallel,  # issue 25, with its mixed-outcome route
    "on_partial": _optional_string,
    "host": scalar(nullable(unknown_host_message)),  # issue 24: the state's agent host(s)
}

_LLM_CHECKS: dict[str, FieldCheck] = {
    "enabled": scalar(check_bool),
    "model": scalar(check_non_empty_string),
    "max_tokens": scalar(check_positive_int),
    "timeout": scalar(check_positive_int),
}


_RATE_LIMIT_CHECKS: dict[str, FieldCheck] = {
    "max_wait": scalar(check_duration),
    "retries": scalar(check_non_negative_int),
    "continue_session": scalar(check_bool),
    "first_backoff": scalar(check_duration),
    "max_utilization": scalar(nullable(check_fraction)),
}


def _check_state(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, dict):
        return [ValidationError(f"must be a mapping, got {describe_value(value)}", path)]
    errors = check_fields(value, path, _OUR_STATE_CHECKS, allowed_text=_REFERENCE_STATE_KEYS)
    return errors or parallel_state_errors(value, path, head=False)


def _check_states(value: Any, path: str) -> list[ValidationError]:
    return check_states(value, path, _check_state)


def check_states(value: Any, path: str, check_state: FieldCheck) -> list[ValidationError]:
    """`states:`: a non-empty mapping of string names, each state checked by `check_state`
    (the legacy checks here, HEAD's in `head_shape`)."""
    if not isinstance(value, dict):
        message = f"must be a mapping of state names to states, got {describe_value(value)}"
        return [ValidationError(message, path)]
    if not value:
        return [ValidationError("must define at least one state", path)]
    errors: list[ValidationError] = []
    for name, state in value.items():
        if isinstance(name, str):
            errors.extend(check_state(state, join_path(path, name)))
        else:
            message = f"state names must be strings, got {describe_value(name)}"
            errors.append(ValidationError(message, path))
    return errors


_LOOP_CHECKS: dict[str, FieldCheck] = {
    "name": scalar(check_non_empty_string),
    "initial": scalar(check_string),
    "states": _check_states,
    "paradigm": scalar(nullable(one_of("paradigm", PARADIGMS))),
    "context": scalar(check_mapping),
    "scope": check_string_list,
    "max_iterations": scalar(check_positive_int),
    "backoff": scalar(nullable(check_non_negative_number)),
    "timeout": scalar(nullable(check_positive_int)),
    "maintain": scalar(check_bool),
    "llm": mapping_of(_LLM_CHECKS),
    "on_handoff": scalar(one_of("on_handoff value", HANDOFF_BEHAVIORS)),
    "max_continuations": scalar(check_positive_int),
    "stall_threshold": scalar(check_non_negative_int),
    "checkpoint": scalar(nullable(one_of("checkpoint kind", CHECKPOINT_KINDS))),
    "logs_keep": scalar(nullable(check_non_negative_int)),
    "on_stall": _optional_string,
    "progress_paths": check_string_list,
    "max_cost_usd": scalar(nullable(check_positive_number)),
    "notify": _optional_string,
    "rate_limit": mapping_of(_RATE_LIMIT_CHECKS),
    "host": scalar(nullable(unknown_host_message)),
}


# The legacy tables, public for the HEAD shape checks (`head_shape`), which extend them.
LEGACY_LOOP_CHECKS = _LOOP_CHECKS
LEGACY_STATE_CHECKS = _STATE_CHECKS
LEGACY_EVALUATE_CHECKS = _EVALUATE_CHECKS
LEGACY_LLM_CHECKS = _LLM_CHECKS
check_legacy_route = _check_route


# ---------------------------------------------------------------------------
# Paradigm specs
# ---------------------------------------------------------------------------


def _check_constraint_keys(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, list):
        return []
    checks: dict[str, FieldCheck] = dict.fromkeys(CONSTRAINT_KEYS, unchecked)
    errors: list[ValidationError] = []
    for index, constraint in enumerate(value):
        if isinstance(constraint, dict):
            errors.extend(check_fields(constraint, join_path(path, index), checks))
    return errors


def _check_until_keys(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, dict):
        return []
    checks: dict[str, FieldCheck] = dict.fromkeys(UNTIL_KEYS, unchecked)
    return check_fields(value, path, checks)


_SPEC_CHECKS: dict[str, FieldCheck] = {
    **_LOOP_CHECKS,
    "constraints": _check_constraint_keys,
    "until": _check_until_keys,
}


def missing_loop_fields(data: dict[str, Any]) -> list[str]:
    """The required keys of an FSM loop file (`name`, `initial`, `states`) it lacks."""
    return [key for key in REQUIRED_LOOP_FIELDS if key not in data]


def is_paradigm_spec(data: dict[str, Any]) -> bool:
    """True for a file that must be compiled: a non-`fsm` paradigm and no FSM keys."""
    paradigm = data.get("paradigm")
    return paradigm not in (None, "fsm") and "initial" not in data and "states" not in data


def _check_paradigm_spec(data: dict[str, Any]) -> list[ValidationError]:
    paradigm = data["paradigm"]
    if not isinstance(paradigm, str) or paradigm not in PARADIGM_SPEC_KEYS:
        return scalar(one_of("paradigm", PARADIGMS))(paradigm, "paradigm")
    # Value types of a paradigm's own keys are checked by its compiler.
    checks = {key: _SPEC_CHECKS.get(key, unchecked) for key in PARADIGM_SPEC_KEYS[paradigm]}
    return check_fields(data, None, checks)


def check_loop_mapping(data: dict[str, Any]) -> list[ValidationError]:
    """Shape errors of a raw loop mapping (or paradigm spec), in file order.

    An empty result guarantees that `FSMLoop.from_dict(data)` succeeds (for a paradigm
    spec: that the keys the compilers carry are well typed).
    """
    if not isinstance(data, dict):
        return [ValidationError(f"a loop must be a mapping, got {describe_value(data)}")]
    if is_paradigm_spec(data):
        return _check_paradigm_spec(data)
    return check_fields(data, None, _LOOP_CHECKS, REQUIRED_LOOP_FIELDS)
