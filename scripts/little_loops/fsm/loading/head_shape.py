"""Shape checks on a raw HEAD loop mapping (spec/ll-head-dialect.md §2), before
`HeadLoop.from_dict` sees it.

The HEAD tables extend the legacy ones of `shape` with the keys of §2.1-§2.4: each key's
type and range, then the rules between keys (`max_retries` needs `on_retry_exhausted`,
`with` needs `loop` or `fragment`, ...). Unknown keys stay errors naming what is allowed;
on a state, any `on_<verdict>` is a verdict route. Passing `check_head_mapping` (no
errors) guarantees that `HeadLoop.from_dict` cannot fail. The findings may hold warnings
(`on_yes` beside a different `on_success`, an unknown `visibility`).
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.loading.head_rules import (
    check_cost_ceiling,
    check_route_spellings,
    check_state_rules,
    check_throttle_order,
    evaluate_required_errors,
    parameter_spec_errors,
    visibility_warnings,
)
from little_loops.fsm.loading.shape import (
    LEGACY_EVALUATE_CHECKS,
    LEGACY_LLM_CHECKS,
    LEGACY_LOOP_CHECKS,
    LEGACY_STATE_CHECKS,
    check_legacy_route,
    check_states,
)
from little_loops.fsm.loading.value_checks import (
    FieldCheck,
    check_bool,
    check_fields,
    check_mapping,
    check_non_empty_string,
    check_non_negative_int,
    check_non_negative_number,
    check_positive_int,
    check_string,
    check_string_list,
    describe_value,
    integer_hint,
    join_path,
    mapping_of,
    nullable,
    one_of,
    scalar,
    unchecked,
)
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_parts import HEAD_SESSION_MODES
from little_loops.fsm.model.host_choice import unknown_host_message
from little_loops.fsm.model.loop_vocabulary import (
    HEAD_ACTION_TYPES,
    HEAD_EVALUATOR_TYPES,
    HEAD_LINE_WORDS,
    HEAD_LINT_SWITCHES,
    HEAD_PREPATCH_CHECKS,
    HEAD_REQUEST_PATHS,
    HEAD_TAMPER_GUARDS,
    REQUIRED_LOOP_FIELDS,
)

_optional_string = scalar(nullable(check_string))
_optional_positive_int = scalar(nullable(check_positive_int))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_line(value: Any) -> str | None:
    if _is_int(value) or value in HEAD_LINE_WORDS:
        return None
    return f"must be 'last', 'first' or an integer, got {describe_value(value)}"


def _check_positive_int_list(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, list):
        message = f"must be a list of integers >= 1, got {describe_value(value)}"
        return [ValidationError(message, path)]
    return [
        ValidationError(problem, join_path(path, index))
        for index, item in enumerate(value)
        if (problem := check_positive_int(item)) is not None
    ]


def _check_ladder(value: Any, path: str) -> list[ValidationError]:
    if isinstance(value, list) and not value:
        return [ValidationError("must be a non-empty list of integers >= 1", path)]
    return _check_positive_int_list(value, path)


def _at_least_two(value: Any) -> str | None:
    if _is_int(value) and value >= 2:
        return None
    return f"must be an integer >= 2, got {describe_value(value)}{integer_hint(value)}"


def _check_contains_template(value: Any) -> str | None:
    if not isinstance(value, str):
        return check_string(value)
    if "${" not in value:
        return f"must contain a ${{...}} template, got {describe_value(value)}"
    return None


def _list_of(checks: dict[str, FieldCheck], label: str) -> FieldCheck:
    check_item = mapping_of(checks)

    def run(value: Any, path: str) -> list[ValidationError]:
        if not isinstance(value, list):
            return [
                ValidationError(f"must be a list of {label}, got {describe_value(value)}", path)
            ]
        errors: list[ValidationError] = []
        for index, item in enumerate(value):
            errors.extend(check_item(item, join_path(path, index)))
        return errors

    return run


def _mapping_of_mappings(label: str, check_item: FieldCheck | None = None) -> FieldCheck:
    def run(value: Any, path: str) -> list[ValidationError]:
        if not isinstance(value, dict):
            return [
                ValidationError(f"must be a mapping of {label}, got {describe_value(value)}", path)
            ]
        errors: list[ValidationError] = []
        for name, item in value.items():
            item_path = join_path(path, name)
            if not isinstance(item, dict):
                errors.append(
                    ValidationError(f"must be a mapping, got {describe_value(item)}", item_path)
                )
            elif check_item is not None:
                errors.extend(check_item(item, item_path))
        return errors

    return run


def _enum(label: str, allowed: tuple[str, ...]) -> FieldCheck:
    return scalar(nullable(one_of(label, allowed)))


def _number_at_least_zero() -> FieldCheck:
    return scalar(check_non_negative_number)


HEAD_EVALUATE_CHECKS: dict[str, FieldCheck] = {
    **LEGACY_EVALUATE_CHECKS,
    "type": scalar(one_of("evaluator type", HEAD_EVALUATOR_TYPES)),
    "error_patterns": check_string_list,
    "key": _optional_string,
    "line": scalar(_check_line),
    "scope": check_string_list,
    "max_stall": scalar(check_positive_int),
    "history_file": _optional_string,
    "epsilon": _number_at_least_zero(),
    "track": check_string_list,
    "max_repeat": scalar(check_positive_int),
    "baseline_path": _optional_string,
    "auto_promote": scalar(check_bool),
    "min_pairs": scalar(check_positive_int),
    "pairs": unchecked,
}


def _check_evaluate(value: Any, path: str) -> list[ValidationError]:
    errors = mapping_of(HEAD_EVALUATE_CHECKS, required=("type",))(value, path)
    if not errors and isinstance(value, dict):
        errors.extend(evaluate_required_errors(value, path))
    return errors


def _check_route(value: Any, path: str) -> list[ValidationError]:
    errors = check_legacy_route(value, path)
    if isinstance(value, dict):
        errors.extend(check_route_spellings(value, path))
    return errors


def _check_throttle(value: Any, path: str) -> list[ValidationError]:
    checks = dict.fromkeys(("normal_max", "warn_max", "hard_max"), scalar(check_positive_int))
    errors = mapping_of(checks)(value, path)
    if not errors and isinstance(value, dict):
        errors.extend(check_throttle_order(value, path))
    return errors


def check_parameters(value: Any, path: str) -> list[ValidationError]:
    """A `parameters:` mapping of ParameterSpecs (§2.4)."""
    return _mapping_of_mappings("parameter names to specs", parameter_spec_errors)(value, path)


_LEARNING_CHECKS: dict[str, FieldCheck] = {
    "targets": check_string_list,
    "targets_csv": _optional_string,
    "max_retries": scalar(check_non_negative_int),
    "max_retries_expr": _optional_string,
}
_PRUNING_CHECKS: dict[str, FieldCheck] = {
    "name": _optional_string,
    "enabled": scalar(check_bool),
    "suppress_catalog": scalar(check_bool),
    "suppress_claude_md": scalar(check_bool),
}
_COST_CEILING_CHECKS: dict[str, FieldCheck] = {
    "cost_ceiling_per_state": _number_at_least_zero(),
    "cost_warn_at": _number_at_least_zero(),
}


def _check_cost_ceiling(value: Any, path: str) -> list[ValidationError]:
    errors = mapping_of(_COST_CEILING_CHECKS)(value, path)
    if not errors and isinstance(value, dict):
        errors.extend(check_cost_ceiling(value, path))
    return errors


HEAD_STATE_CHECKS: dict[str, FieldCheck] = {
    **LEGACY_STATE_CHECKS,
    "action_type": _enum("action_type", HEAD_ACTION_TYPES),
    "evaluate": _check_evaluate,
    "route": _check_route,
    "on_yes": _optional_string,
    "on_no": _optional_string,
    "failure": scalar(check_bool),
    "idle_timeout": scalar(nullable(check_non_negative_int)),
    "loop": _optional_string,
    "with": scalar(nullable(check_mapping)),
    "context_passthrough": scalar(check_bool),
    "worktree": _optional_string,
    "fragment": _optional_string,
    "parameters": check_parameters,
    "max_retries": _optional_positive_int,
    "on_retry_exhausted": _optional_string,
    "retryable_exit_codes": _check_positive_int_list,
    "max_rate_limit_retries": _optional_positive_int,
    "on_rate_limit_exhausted": _optional_string,
    "rate_limit_backoff_base_seconds": _optional_positive_int,
    "rate_limit_max_wait_seconds": _optional_positive_int,
    "rate_limit_long_wait_ladder": _check_ladder,
    "throttle": _check_throttle,
    "on_throttle_hard": _optional_string,
    "agent": _optional_string,
    "tools": check_string_list,
    "model": _optional_string,
    "effort": _optional_string,
    "host": scalar(nullable(unknown_host_message)),
    "session_mode": _enum("session_mode", HEAD_SESSION_MODES),
    "append_to_messages": scalar(nullable(_check_contains_template)),
    "params": scalar(nullable(check_mapping)),
    "type": _optional_string,
    "learning": mapping_of(_LEARNING_CHECKS),
    "pruning_profile": mapping_of(_PRUNING_CHECKS),
    "tamper_guard": _enum("tamper_guard", HEAD_TAMPER_GUARDS),
    "prepatch_check": _enum("prepatch_check", HEAD_PREPATCH_CHECKS),
    "request_path": _enum("request_path", HEAD_REQUEST_PATHS),
    "cost_ceiling": _check_cost_ceiling,
    "description": _optional_string,
    "output": unchecked,
    "with_": unchecked,
}


def check_head_state(value: Any, path: str) -> list[ValidationError]:
    """One HEAD state: keys and types, then the rules between keys. Any `on_<verdict>`
    key is a verdict route (a target name)."""
    if not isinstance(value, dict):
        return [ValidationError(f"must be a mapping, got {describe_value(value)}", path)]
    routes = {
        key: _optional_string
        for key in value
        if isinstance(key, str) and key.startswith("on_") and key not in HEAD_STATE_CHECKS
    }
    # The message lists the state keys and `on_<verdict>`, not this file's own routes.
    allowed = ", ".join([*HEAD_STATE_CHECKS, "on_<verdict>"])
    errors = check_fields(value, path, {**HEAD_STATE_CHECKS, **routes}, allowed_text=allowed)
    if not any(error.severity is ValidationSeverity.ERROR for error in errors):
        errors.extend(check_state_rules(value, path))
    return errors


def _check_states(value: Any, path: str) -> list[ValidationError]:
    return check_states(value, path, check_head_state)


def check_fragment_definition(value: dict[Any, Any], path: str) -> list[ValidationError]:
    """A fragment's own keys (§2.4): `description` and its `parameters` specs. Its state
    keys are checked in each state built from it."""
    checks = {"description": _optional_string, "parameters": check_parameters}
    return [
        error
        for key, check in checks.items()
        if key in value
        for error in check(value[key], join_path(path, key))
    ]


_REPEATED_FAILURE_CHECKS: dict[str, FieldCheck] = {
    "window": scalar(check_positive_int),
    "on_repeated_failure": scalar(check_non_empty_string),
    "progress_paths": check_string_list,
    "exclude_paths": check_string_list,
    "recurrent_window": scalar(nullable(_at_least_two)),
}


_CONFIG_CHECKS: dict[str, FieldCheck] = {
    "automation": mapping_of({"max_continuations": scalar(check_positive_int)}),
    "continuation": mapping_of({"max_continuations": scalar(check_positive_int)}),
    "commands": mapping_of(
        {
            "confidence_gate": mapping_of(
                {
                    "readiness_threshold": _number_at_least_zero(),
                    "outcome_threshold": _number_at_least_zero(),
                }
            )
        }
    ),
    "handoff_threshold": unchecked,
}

_plain_mapping: FieldCheck = scalar(check_mapping)

HEAD_LOOP_CHECKS: dict[str, FieldCheck] = {
    **LEGACY_LOOP_CHECKS,
    "states": _check_states,
    "llm": mapping_of({**LEGACY_LLM_CHECKS, "effort": scalar(check_string)}),
    "description": _optional_string,
    "category": scalar(check_string),
    "labels": check_string_list,
    "visibility": scalar(check_string),
    "parameters": check_parameters,
    "input_key": scalar(check_non_empty_string),
    "required_inputs": check_string_list,
    "max_steps": scalar(check_positive_int),
    "on_max_steps": _optional_string,
    "on_max_iterations": _optional_string,
    "max_edge_revisits": scalar(check_positive_int),
    "default_timeout": _optional_positive_int,
    "default_idle_timeout": scalar(check_non_negative_int),
    "singleton": scalar(check_bool),
    "session_mode": _enum("session_mode", HEAD_SESSION_MODES),
    "circuit": mapping_of({"repeated_failure": mapping_of(_REPEATED_FAILURE_CHECKS)}),
    "import": check_string_list,
    "fragments": _mapping_of_mappings("fragment names to fragments", check_fragment_definition),
    "from": scalar(check_string),
    "flow": check_string_list,
    "state_defs": _mapping_of_mappings("state names to partial states"),
    "commands": _list_of({"cmd": scalar(check_string), "comment": _optional_string}, "commands"),
    "config": mapping_of(_CONFIG_CHECKS),
    "artifact_versioning": scalar(check_bool),
    **dict.fromkeys(HEAD_LINT_SWITCHES, scalar(check_bool)),
    "tamper_guard": _enum("tamper_guard", HEAD_TAMPER_GUARDS),
    "prepatch_check": _enum("prepatch_check", HEAD_PREPATCH_CHECKS),
    "pruning_profile": mapping_of(_PRUNING_CHECKS),
    "host_guard": _plain_mapping,
    "prompt_size_guard": _plain_mapping,
    "targets": _list_of(
        {"file": _optional_string, "glob": _optional_string, "states": check_string_list},
        "targets",
    ),
}


def check_head_mapping(data: dict[str, Any]) -> list[ValidationError]:
    """Shape findings of a raw HEAD loop mapping (after `from:`, `flow:` and fragments),
    in file order: errors, and a few warnings."""
    findings = check_fields(data, None, HEAD_LOOP_CHECKS, REQUIRED_LOOP_FIELDS)
    findings.extend(visibility_warnings(data))
    return findings


__all__ = [
    "HEAD_EVALUATE_CHECKS",
    "HEAD_LOOP_CHECKS",
    "HEAD_STATE_CHECKS",
    "check_head_mapping",
    "check_head_state",
    "check_parameters",
]
