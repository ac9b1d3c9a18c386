"""Bindings checked against declared parameters (spec/ll-head-dialect.md §2.4, §4.2, §5).

A fragment state's `with:` and a sub-loop state's `with:` bind parameters declared as
ParameterSpecs. Statically: a key that is not declared, a required parameter left unbound
and a literal of the wrong type are ERRORs. Values holding `${` are resolved at run time
and not type-checked here. The literal check is §2.4's, with §9d's correction that
`true` is not an integer.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.loading.value_checks import describe_value, join_path
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.model.head_parts import ParameterSpec


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def literal_fits(spec: ParameterSpec, value: Any) -> bool:
    """Whether a literal (non-template) value has the parameter's type."""
    if spec.type == "integer":
        return _is_int(value)
    if spec.type == "number":
        return _is_int(value) or isinstance(value, float)
    if spec.type == "boolean":
        return isinstance(value, bool)
    if spec.type == "string":
        return isinstance(value, str)
    if spec.type == "enum":
        return value in (spec.values or [])
    return True  # path: anything


def _type_text(spec: ParameterSpec) -> str:
    if spec.type == "enum":
        return f"one of {', '.join(map(str, spec.values or []))}"
    article = "an" if spec.type[0] in "aeiou" else "a"
    return f"{article} {spec.type}"


def binding_errors(
    bindings: dict[str, Any],
    specs: dict[str, ParameterSpec],
    path: str,
    *,
    exempt: frozenset[str] = frozenset(),
) -> list[ValidationError]:
    """Unknown keys, wrong literal types, then missing required parameters (not `exempt`)."""
    declared = ", ".join(specs) or "(none)"
    errors: list[ValidationError] = []
    for key, value in bindings.items():
        spec = specs.get(key)
        if spec is None:
            message = f"unknown parameter {describe_value(key)} (declared: {declared})"
            errors.append(ValidationError(message, join_path(path, key)))
        elif not (isinstance(value, str) and "${" in value) and not literal_fits(spec, value):
            message = f"must be {_type_text(spec)}, got {describe_value(value)}"
            errors.append(ValidationError(message, join_path(path, key)))
    errors.extend(
        ValidationError(f"missing required parameter '{name}'", path)
        for name, spec in specs.items()
        if spec.required and name not in bindings and name not in exempt
    )
    return errors
