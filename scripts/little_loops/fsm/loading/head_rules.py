"""Rules between the keys of a HEAD file (spec/ll-head-dialect.md §2.2-§2.4, §3.1), on
raw mappings whose keys are already well typed.

Each function returns findings with key paths; `head_shape` calls them once a mapping
has no type errors, so they may read values without checking their types again.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.loading.value_checks import (
    FieldCheck,
    check_bool,
    check_fields,
    check_string,
    describe_value,
    join_path,
    nullable,
    one_of,
    scalar,
)
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.head_parts import HEAD_VISIBILITIES, PARAMETER_TYPES, ThrottleConfig
from little_loops.fsm.model.loop_vocabulary import HEAD_EVALUATOR_REQUIRED_FIELDS

_WARNING = ValidationSeverity.WARNING

# Pairs of keys that need each other (§2.2): (key, the key it needs).
_NEEDS: tuple[tuple[str, str], ...] = (
    ("max_retries", "on_retry_exhausted"),
    ("on_retry_exhausted", "max_retries"),
    ("retryable_exit_codes", "on_error"),
    ("max_rate_limit_retries", "on_rate_limit_exhausted"),
    ("on_rate_limit_exhausted", "max_rate_limit_retries"),
    ("worktree", "loop"),
)

# (key, key): both on one state is an ERROR (§2.2).
_EXCLUSIVE: tuple[tuple[str, str, str], ...] = (
    ("loop", "action", "a loop: state runs a sub-loop, it cannot also have an action"),
    ("with", "context_passthrough", "with and context_passthrough cannot be used together"),
)


def _written(state: dict[str, Any], key: str) -> bool:
    return state.get(key) is not None


def check_state_rules(state: dict[str, Any], path: str) -> list[ValidationError]:
    """The ERRORs and WARNINGs between the keys of one well-typed HEAD state."""
    errors = [
        ValidationError(f"{key} needs {needed}", join_path(path, key))
        for key, needed in _NEEDS
        if _written(state, key) and not _written(state, needed)
    ]
    errors.extend(
        ValidationError(message, join_path(path, first))
        for first, second, message in _EXCLUSIVE
        if _written(state, first) and _written(state, second) and state.get(second) is not False
    )
    errors.extend(_with_errors(state, path))
    errors.extend(_params_errors(state, path))
    errors.extend(_alias_warnings(state, path))
    return errors


def _with_errors(state: dict[str, Any], path: str) -> list[ValidationError]:
    if _written(state, "with") and not (_written(state, "loop") or _written(state, "fragment")):
        return [ValidationError("with needs loop or fragment", join_path(path, "with"))]
    if _written(state, "parameters") and not _written(state, "fragment"):
        message = "parameters of a state come from its fragment (declare them in fragments:)"
        return [ValidationError(message, join_path(path, "parameters"))]
    return []


def _params_errors(state: dict[str, Any], path: str) -> list[ValidationError]:
    if _written(state, "params") and state.get("action_type") != "mcp_tool":
        message = "params is only for action_type: mcp_tool"
        return [ValidationError(message, join_path(path, "params"))]
    return []


def _alias_warnings(state: dict[str, Any], path: str) -> list[ValidationError]:
    """`on_yes` beside `on_success` (or `on_no` beside `on_failure`) naming another target:
    the HEAD name wins (§3.1)."""
    warnings: list[ValidationError] = []
    for alias, name in (("on_yes", "on_success"), ("on_no", "on_failure")):
        alias_target, target = state.get(alias), state.get(name)
        if alias_target is not None and target is not None and alias_target != target:
            message = (
                f"{alias} ({alias_target!r}) and {name} ({target!r}) name different targets; "
                f"{alias} wins"
            )
            warnings.append(ValidationError(message, join_path(path, name), _WARNING))
    return warnings


def check_route_spellings(route: dict[Any, Any], path: str) -> list[ValidationError]:
    """A route table writing one verdict in both dialects' spellings (§3.1)."""
    return [
        ValidationError(
            f"'{legacy}' and '{head}' name the same verdict; keep one", join_path(path, head)
        )
        for legacy, head in (("success", "yes"), ("failure", "no"))
        if legacy in route and head in route
    ]


def check_cost_ceiling(cost: dict[str, Any], path: str) -> list[ValidationError]:
    """`cost_warn_at` may not be above `cost_ceiling_per_state` (§2.2)."""
    ceiling, warn_at = cost.get("cost_ceiling_per_state"), cost.get("cost_warn_at")
    if ceiling is None or warn_at is None or warn_at <= ceiling:
        return []
    message = f"cost_warn_at ({warn_at}) must not be above cost_ceiling_per_state ({ceiling})"
    return [ValidationError(message, path)]


def check_throttle_order(throttle: dict[str, Any], path: str) -> list[ValidationError]:
    """`normal_max < warn_max < hard_max`, with HEAD's defaults for keys not written."""
    values = ThrottleConfig.from_dict(throttle)
    if values.normal_max < values.warn_max < values.hard_max:
        return []
    message = (
        "must be strictly increasing: normal_max < warn_max < hard_max "
        f"(got {values.normal_max}, {values.warn_max}, {values.hard_max})"
    )
    return [ValidationError(message, path)]


def evaluate_required_errors(evaluate: dict[str, Any], path: str) -> list[ValidationError]:
    """Required fields of the evaluators HEAD adds (the legacy ones are checked on the
    built loop, with the same message)."""
    kind = evaluate.get("type")
    return [
        ValidationError(f"Evaluator type '{kind}' requires '{field}' field", path)
        for field in HEAD_EVALUATOR_REQUIRED_FIELDS.get(str(kind), ())
        if evaluate.get(field) is None
    ]


def _check_values_list(value: Any) -> str | None:
    return None if isinstance(value, list) else f"must be a list, got {describe_value(value)}"


_PARAMETER_CHECKS: dict[str, FieldCheck] = {
    "type": scalar(one_of("parameter type", PARAMETER_TYPES)),
    "required": scalar(check_bool),
    "default": lambda value, path: [],
    "description": scalar(nullable(check_string)),
    "values": scalar(nullable(_check_values_list)),
}


def parameter_spec_errors(spec: dict[str, Any], path: str) -> list[ValidationError]:
    """One ParameterSpec (§2.4): its keys, then `enum` needs `values` and a required
    parameter has no default."""
    errors = check_fields(spec, path, _PARAMETER_CHECKS, ("type",))
    if errors:
        return errors
    if spec["type"] == "enum" and spec.get("values") is None:
        errors.append(ValidationError("an enum parameter needs values", join_path(path, "type")))
    if spec.get("required") is True and spec.get("default") is not None:
        message = "a required parameter cannot have a default"
        errors.append(ValidationError(message, join_path(path, "default")))
    return errors


def visibility_warnings(data: dict[str, Any]) -> list[ValidationError]:
    """A `visibility` HEAD does not know is treated as `public` (§2.1)."""
    value = data.get("visibility")
    if not isinstance(value, str) or value in HEAD_VISIBILITIES:
        return []
    allowed = ", ".join(HEAD_VISIBILITIES)
    message = f"unknown visibility {describe_value(value)} (allowed: {allowed}); treated as public"
    return [ValidationError(message, "visibility", _WARNING)]
