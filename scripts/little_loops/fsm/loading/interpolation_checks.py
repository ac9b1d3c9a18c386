"""`${...}` variables that can never resolve, found before the run instead of during it.

At run time an unknown namespace (`${undefined.var}`), a variable without a dot
(`${name}`) or a `${context.X}` whose key the loop's `context` does not define fails the
state with an `error` verdict, often many iterations in. The loop file alone decides all
three (nothing adds `context` keys at run time), so each is reported as an error with the
key path of the setting that holds it.

Only the settings the executor interpolates are checked: the action, every route target,
and the evaluator's `source`, `previous`, `target`, `tolerance`, `path` and `pattern`.
`$${` is a literal `${` and is skipped. Namespaces other than `context` are checked for
their name only: what they hold (`captured`, `prev`, `env`, ...) is known at run time.

A HEAD file (spec/ll-head-dialect.md §2.5) also has the namespaces `param` and `messages`
(`${messages}` alone included) and the modifiers `:default=`, `?` and `:shell`; its context
is completed at run time (injected keys, `--context`, the positional input, parameter
defaults), so its `${context.X}` keys are checked by `run`, not here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from little_loops.fsm.interpolation import ESCAPED_PATTERN, VARIABLE_PATTERN
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.model.head_loop import is_head
from little_loops.fsm.schema import FSMLoop, StateConfig

NAMESPACES = ("context", "captured", "prev", "result", "state", "loop", "env", "handoff")
"""The namespaces `InterpolationContext.resolve` knows, in the order the docs list them."""

HEAD_NAMESPACES = (*NAMESPACES, "param", "messages")

_EVALUATE_TEMPLATES = ("source", "previous", "target", "tolerance", "path", "pattern")


def interpolation_errors(fsm: FSMLoop) -> list[ValidationError]:
    """Errors for variables in `fsm` that cannot resolve, in state order."""
    errors: list[ValidationError] = []
    for path, template in _templates(fsm):
        problems = (
            _head_template_problems(template)
            if is_head(fsm)
            else _template_problems(template, fsm.context)
        )
        errors.extend(ValidationError(problem, path) for problem in problems)
    return errors


def _head_template_problems(template: str) -> Iterator[str]:
    unescaped = ESCAPED_PATTERN.sub("", template)
    for match in VARIABLE_PATTERN.finditer(unescaped):
        inside = match.group(1)
        namespace = inside.partition(".")[0].partition(":")[0].rstrip("?")
        if namespace not in HEAD_NAMESPACES:
            known = ", ".join(HEAD_NAMESPACES)
            yield f"${{{inside}}}: unknown namespace '{namespace}' (known: {known})"


def _templates(fsm: FSMLoop) -> Iterator[tuple[str, str]]:
    """(key path, text) of every interpolated setting of every state."""
    for name, state in fsm.states.items():
        yield from _state_templates(f"states.{name}", state)


def _state_templates(path: str, state: StateConfig) -> Iterator[tuple[str, str]]:
    if state.action is not None:
        yield f"{path}.action", state.action
    for key in ("on_success", "on_failure", "on_error", "next", "on_maintain", "on_max_visits"):
        target = getattr(state, key)
        if isinstance(target, str):
            yield f"{path}.{key}", target
    if state.route is not None:
        for verdict, target in state.route.routes.items():
            yield f"{path}.route.{verdict}", target
        for key, target in (("_", state.route.default), ("_error", state.route.error)):
            if target is not None:
                yield f"{path}.route.{key}", target
    if state.evaluate is not None:
        for key in _EVALUATE_TEMPLATES:
            value = getattr(state.evaluate, key)
            if isinstance(value, str):
                yield f"{path}.evaluate.{key}", value


def _template_problems(template: str, context: dict[str, Any]) -> Iterator[str]:
    unescaped = ESCAPED_PATTERN.sub("", template)
    for match in VARIABLE_PATTERN.finditer(unescaped):
        problem = _variable_problem(match.group(1), context)
        if problem is not None:
            yield problem


def _variable_problem(inside: str, context: dict[str, Any]) -> str | None:
    variable = f"${{{inside}}}"
    namespace, dot, key_path = inside.partition(".")
    if not dot:
        return f"{variable}: not a variable (expected ${{namespace.path}})"
    if namespace not in NAMESPACES:
        known = ", ".join(NAMESPACES)
        return f"{variable}: unknown namespace '{namespace}' (known: {known})"
    if namespace == "context":
        return _context_problem(variable, key_path, context)
    return None


def _context_problem(variable: str, key_path: str, context: dict[str, Any]) -> str | None:
    """The first key along `key_path` that the loop's `context` does not define."""
    if not context:
        first = key_path.split(".")[0]
        return f"{variable}: the loop has no context key '{first}' (it defines no context)"
    current: Any = context
    walked: list[str] = []
    for key in key_path.split("."):
        walked.append(key)
        if not isinstance(current, dict) or key not in current:
            keys = f" (keys: {', '.join(map(str, current))})" if isinstance(current, dict) else ""
            return f"{variable}: the loop has no context key '{'.'.join(walked)}'{keys}"
        current = current[key]
    return None
