"""Evaluator settings that must be numbers: `target` and `tolerance` of numeric evaluators.

`output_numeric` and `convergence` turn `target` (and `convergence` its `tolerance`) into
a float when the state is evaluated. The shape check lets any string through, because a
`${...}` template is allowed there; but `target: abc` then ends the run with an `error`
verdict at its first evaluation, and a `tolerance: abc` is silently read as 0 (the
reference's fallback). Both are reported before the run:

- a string is fine when it reads as a number (`"0.5"`), or when it is a template that is
  resolved at run time (`${captured.x.output}`);
- a template that is exactly one `${context.key}` is looked up in the loop's `context`
  (that is how the convergence paradigm passes `toward` and `tolerance`), and the value
  found there must be a number (or a number as text, or itself a template).

`output_json` targets may be any value (they are compared as JSON), so they are not checked.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.interpolation import VARIABLE_PATTERN
from little_loops.fsm.loading.value_checks import describe_value
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.schema import EvaluateConfig, FSMLoop

_NUMERIC_FIELDS = {"output_numeric": ("target",), "convergence": ("target", "tolerance")}


def numeric_setting_errors(fsm: FSMLoop) -> list[ValidationError]:
    """An error for each numeric evaluator setting that can never be a number."""
    errors: list[ValidationError] = []
    for name, state in fsm.states.items():
        if state.evaluate is not None:
            errors.extend(_evaluate_errors(state.evaluate, f"states.{name}.evaluate", fsm.context))
    return errors


def _evaluate_errors(
    evaluate: EvaluateConfig, path: str, context: dict[str, Any]
) -> list[ValidationError]:
    errors: list[ValidationError] = []
    for field in _NUMERIC_FIELDS.get(evaluate.type, ()):
        problem = _problem(getattr(evaluate, field), context)
        if problem is not None:
            errors.append(ValidationError(problem, f"{path}.{field}"))
    return errors


def _problem(value: Any, context: dict[str, Any]) -> str | None:
    if not isinstance(value, str) or _reads_as_number(value):
        return None  # numbers are checked by the shape check
    whole = VARIABLE_PATTERN.fullmatch(value)
    if whole is None:
        if "${" in value:
            return None  # resolved at run time
        return f"must be a number or a ${{...}} template, got {describe_value(value)}"
    found = _context_value(whole.group(1), context)
    if found is None or _can_be_number(found[0]):
        return None  # not from context (run time), or a usable context value
    return f"{value} is {describe_value(found[0])} in the loop's context, not a number"


def _context_value(inside: str, context: dict[str, Any]) -> tuple[Any] | None:
    """(value,) of a `context.a.b` variable; None for other namespaces or missing keys."""
    namespace, _dot, key_path = inside.partition(".")
    if namespace != "context":
        return None
    current: Any = context
    for key in key_path.split("."):
        if not isinstance(current, dict) or key not in current:
            return None  # reported by the interpolation checks
        current = current[key]
    return (current,)


def _can_be_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and ("${" in value or _reads_as_number(value))


def _reads_as_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
