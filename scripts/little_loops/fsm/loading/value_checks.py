"""Building blocks for checking raw YAML values, with messages that name what is allowed.

Two kinds of check, combined by `shape` into the tables for a whole loop file:
- a value check (`ValueCheck`) looks at one value and returns a problem message, or None
  when the value is fine (`check_bool`, `one_of(...)`, `nullable(...)`);
- a field check (`FieldCheck`) takes a value and its dotted key path and returns the
  findings (`scalar(...)` wraps a value check, `mapping_of(...)` checks a nested mapping
  key by key, rejecting unknown keys).

`describe_value` and `not_a_string_message` are also used by the paradigm compilers
(`paradigms`), so their messages read like these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from little_loops.fsm.model.durations import parse_duration
from little_loops.fsm.model.findings import ValidationError

ValueCheck = Callable[[Any], "str | None"]
FieldCheck = Callable[[Any, str], "list[ValidationError]"]


# ---------------------------------------------------------------------------
# Describing values in messages
# ---------------------------------------------------------------------------


def describe_value(value: Any) -> str:
    """A short YAML-flavoured rendering of a value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # Huge integers cannot even be turned into text (Python's digit limit).
        return str(value) if value.bit_length() <= 256 else "a very large integer"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def integer_hint(value: Any) -> str:
    """` (write 1000000000)` for a whole number written as `1e9` or `1000000000.0`: YAML
    reads `1e9` as text and `1.0e9` as a float, and neither is an integer setting."""
    if isinstance(value, str) and any(mark in value for mark in "eE."):
        try:
            value = float(value)
        except ValueError:
            return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e18:
        return f" (write {int(value)})"
    return ""


def not_a_string_message(value: Any) -> str:
    """`must be a string, got ...`, with a hint for the classic unquoted `: ` mistake."""
    hint = ""
    if isinstance(value, dict) and len(value) == 1:
        hint = " (quote text that contains ': ', or YAML reads it as a mapping)"
    return f"must be a string, got {describe_value(value)}{hint}"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    if _is_int(value):
        return True
    return isinstance(value, float) and math.isfinite(value)


# ---------------------------------------------------------------------------
# Value checks: each returns a problem message, or None when the value is fine
# ---------------------------------------------------------------------------


def check_string(value: Any) -> str | None:
    return None if isinstance(value, str) else not_a_string_message(value)


def check_non_empty_string(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return None
    return f"must be a non-empty string, got {describe_value(value)}"


def check_bool(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    return f"must be true or false, got {describe_value(value)}"


def check_non_negative_int(value: Any) -> str | None:
    if _is_int(value) and value >= 0:
        return None
    return f"must be an integer >= 0, got {describe_value(value)}{integer_hint(value)}"


def check_positive_int(value: Any) -> str | None:
    if _is_int(value) and value >= 1:
        return None
    return f"must be an integer >= 1, got {describe_value(value)}{integer_hint(value)}"


def check_non_negative_number(value: Any) -> str | None:
    if _is_number(value) and value >= 0:
        return None
    return f"must be a number >= 0, got {describe_value(value)}"


def check_positive_number(value: Any) -> str | None:
    if _is_number(value) and value > 0:
        return None
    return f"must be a number > 0, got {describe_value(value)}"


def check_duration(value: Any) -> str | None:
    try:
        parse_duration(value)
    except ValueError as exc:
        return str(exc)
    return None


def check_fraction(value: Any) -> str | None:
    if _is_number(value) and 0 <= value <= 1:
        return None
    return f"must be a number from 0 to 1, got {describe_value(value)}"


def check_target(value: Any) -> str | None:
    if _is_number(value) or isinstance(value, str):
        return None
    return f"must be a number or a string, got {describe_value(value)}"


def check_tolerance(value: Any) -> str | None:
    if (_is_number(value) and value >= 0) or isinstance(value, str):
        return None
    return f"must be a number >= 0 or a string, got {describe_value(value)}"


def check_mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be a mapping, got {describe_value(value)}"


def one_of(label: str, allowed: tuple[str, ...]) -> ValueCheck:
    def check(value: Any) -> str | None:
        if isinstance(value, str) and value in allowed:
            return None
        choices = ", ".join(allowed)
        if isinstance(value, str):
            return f"unknown {label} {describe_value(value)} (allowed: {choices})"
        return f"must be a string (allowed: {choices}), got {describe_value(value)}"

    return check


def nullable(check: ValueCheck) -> ValueCheck:
    """Null means "not set" for keys whose default is None."""

    def nullable_check(value: Any) -> str | None:
        return None if value is None else check(value)

    return nullable_check


# ---------------------------------------------------------------------------
# Field checks: take the value and its key path, return the errors found
# ---------------------------------------------------------------------------


def join_path(path: str | None, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def scalar(check: ValueCheck) -> FieldCheck:
    def run(value: Any, path: str) -> list[ValidationError]:
        problem = check(value)
        return [] if problem is None else [ValidationError(problem, path)]

    return run


def unchecked(value: Any, path: str) -> list[ValidationError]:
    """Keys whose values the paradigm compilers check themselves."""
    return []


def check_fields(
    data: dict[Any, Any],
    path: str | None,
    checks: dict[str, FieldCheck],
    required: tuple[str, ...] = (),
    *,
    allowed_text: str | None = None,
) -> list[ValidationError]:
    """Run the check of every key; unknown keys and missing required keys are errors.
    `allowed_text` names the allowed keys in the message (default: the checked keys)."""
    errors: list[ValidationError] = []
    for key, value in data.items():
        check = checks.get(key) if isinstance(key, str) else None
        if check is None:
            allowed = allowed_text if allowed_text is not None else ", ".join(checks)
            message = f"unknown key {describe_value(key)} (allowed: {allowed})"
            errors.append(ValidationError(message, join_path(path, key)))
        else:
            errors.extend(check(value, join_path(path, key)))
    for key in required:
        if key not in data:
            errors.append(ValidationError(f"missing required key '{key}'", path))
    return errors


def mapping_of(checks: dict[str, FieldCheck], required: tuple[str, ...] = ()) -> FieldCheck:
    def run(value: Any, path: str) -> list[ValidationError]:
        if not isinstance(value, dict):
            return [ValidationError(f"must be a mapping, got {describe_value(value)}", path)]
        return check_fields(value, path, checks, required)

    return run


def check_string_list(value: Any, path: str) -> list[ValidationError]:
    if not isinstance(value, list):
        return [ValidationError(f"must be a list of strings, got {describe_value(value)}", path)]
    return [
        ValidationError(not_a_string_message(item), join_path(path, index))
        for index, item in enumerate(value)
        if not isinstance(item, str)
    ]
