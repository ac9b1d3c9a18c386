"""`${namespace.path}` variables in actions, targets and evaluator settings.

This module owns the template syntax and how each namespace is looked up. It knows
nothing about states, files or processes: the executor fills an `InterpolationContext`
and asks for strings back.

Namespaces: `context`, `captured`, `prev`, `result` (nested dict lookups), `state`,
`loop`, `env`, and our addition `handoff` (the continuation prompt of a resumed run).
`$${` writes a literal `${`. Expansion is a single pass: a resolved value that itself
contains `${...}` stays literal.

A HEAD-dialect run (`InterpolationContext.head`, filled only by such a run) also reads
the modifiers `:default=TEXT`, `?` and `:shell` (`model.head_templates`) and the
namespaces `param` (a fragment's parameters) and `messages`; a legacy run never does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.model.head_templates import (
    MESSAGES,
    HeadVariable,
    HeadVariableError,
    messages_property,
    parse_head_variable,
    render,
)

VARIABLE_PATTERN = re.compile(r"\$\{([^}]+)\}")
ESCAPED_PATTERN = re.compile(r"\$\$\{")
# NUL characters cannot appear in YAML text, so the sentinel cannot clash with user input.
ESCAPED_PLACEHOLDER = "\x00ESCAPED_DOLLAR_BRACE\x00"

_LOOKUP_NAMESPACES = ("context", "captured")
_HANDOFF_DEFAULTS: dict[str, Any] = {"prompt": "", "count": 0, "state": ""}


class InterpolationError(Exception):
    """A variable could not be resolved (unknown namespace, missing path, unset env)."""


@dataclass
class InterpolationContext:
    """Everything a template may refer to, as the executor sees it when a state starts."""

    context: dict[str, Any] = field(default_factory=dict)
    captured: dict[str, dict[str, Any]] = field(default_factory=dict)
    prev: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    state_name: str = ""
    iteration: int = 1
    loop_name: str = ""
    started_at: str = ""
    elapsed_ms: int = 0
    # Addition: {"prompt", "count", "state"} of the handoff being continued, if any.
    handoff: dict[str, Any] | None = None
    # Addition: what `${env.X}` reads (the engine's injected environment); None: os.environ.
    env: Mapping[str, str] | None = None
    # HEAD dialect only (a legacy run leaves them unset): the modifiers and namespaces of
    # spec/ll-head-dialect.md §2.5, `${param.*}` of a state built from a fragment (None:
    # not such a state) and the texts `${messages}` joins.
    head: bool = False
    param: dict[str, Any] | None = None
    messages: list[str] | None = None

    def resolve(self, namespace: str, path: str) -> Any:
        """Return the value of `${namespace.path}`; raise `InterpolationError` if unknown."""
        if namespace in _LOOKUP_NAMESPACES:
            return _lookup(getattr(self, namespace), path, namespace)
        if namespace == "prev":
            if self.prev is None:
                raise InterpolationError("No previous state result available")
            return _lookup(self.prev, path, "prev")
        if namespace == "result":
            if self.result is None:
                raise InterpolationError("No evaluation result available")
            return _lookup(self.result, path, "result")
        if namespace == "state":
            return self._state_property(path)
        if namespace == "loop":
            return self._loop_property(path)
        if namespace == "env":
            return _environment_variable(path, self.env)
        if namespace == "handoff":
            return self._handoff_property(path)
        if self.head and namespace in ("param", MESSAGES):
            return self._head_namespace(namespace, path)
        raise InterpolationError(f"Unknown namespace: {namespace}")

    def _state_property(self, key: str) -> Any:
        if key == "name":
            return self.state_name
        if key == "iteration":
            return self.iteration
        raise InterpolationError(f"Unknown state property: {key}")

    def _loop_property(self, key: str) -> Any:
        properties: dict[str, Any] = {
            "name": self.loop_name,
            "started_at": self.started_at,
            "elapsed_ms": self.elapsed_ms,
        }
        if key in properties:
            return properties[key]
        if key == "elapsed":
            return format_elapsed(self.elapsed_ms)
        raise InterpolationError(f"Unknown loop property: {key}")

    def _head_namespace(self, namespace: str, path: str) -> Any:
        if namespace == MESSAGES:
            text = messages_property(self.messages or [], path)
            if text is None:
                raise InterpolationError(f"Unknown messages property: {path}")
            return text
        if self.param is None:
            raise InterpolationError(
                "No fragment parameters: ${param.*} is only available in a state built "
                "from a fragment"
            )
        return _lookup(self.param, path, "param")

    def _handoff_property(self, key: str) -> Any:
        # Defaults keep `${handoff.prompt}` usable in actions of runs that never handed off.
        if key not in _HANDOFF_DEFAULTS:
            raise InterpolationError(f"Unknown handoff property: {key}")
        value = (self.handoff or {}).get(key)
        return _HANDOFF_DEFAULTS[key] if value is None else value


def _lookup(data: dict[str, Any], path: str, namespace: str) -> Any:
    """Walk `data` along the dotted `path`; only dict keys are followed (no list indexes)."""
    segments = path.split(".")
    current: Any = data
    for depth, segment in enumerate(segments):
        if not isinstance(current, dict) or segment not in current:
            walked = ".".join(segments[: depth + 1])
            raise InterpolationError(f"Path '{walked}' not found in {namespace}")
        current = current[segment]
    return current


def _environment_variable(name: str, env: Mapping[str, str] | None = None) -> str:
    value = (os.environ if env is None else env).get(name)
    if value is None:
        raise InterpolationError(f"Environment variable '{name}' not set")
    return value


def format_elapsed(elapsed_ms: int) -> str:
    """Human-readable duration: `250ms`, `42s`, `5m`, `5m 3s` (no hours unit)."""
    if elapsed_ms < 1000:
        return f"{elapsed_ms}ms"
    seconds = elapsed_ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, remainder = divmod(seconds, 60)
    return f"{minutes}m" if remainder == 0 else f"{minutes}m {remainder}s"


def split_variable(inside: str) -> tuple[str, str]:
    """Split the text between `${` and `}` into (namespace, path) at the first dot."""
    if "." not in inside:
        raise InterpolationError(f"Invalid variable: ${{{inside}}} (expected namespace.path)")
    namespace, path = inside.split(".", 1)
    return namespace, path


def interpolate(template: str, ctx: InterpolationContext) -> str:
    """Expand every `${namespace.path}` in `template`; the first failure aborts the call."""

    def replace(match: re.Match[str]) -> str:
        if ctx.head:
            return _head_text(match.group(1), ctx)
        value = ctx.resolve(*split_variable(match.group(1)))
        return "" if value is None else str(value)

    protected = ESCAPED_PATTERN.sub(ESCAPED_PLACEHOLDER, template)
    expanded = VARIABLE_PATTERN.sub(replace, protected)
    return expanded.replace(ESCAPED_PLACEHOLDER, "${")


def resolve_template(template: str, ctx: InterpolationContext) -> Any:
    """Like `interpolate`, but a template that is exactly one variable gives the raw value.

    Lets a setting such as `target: ${context.expected}` keep the number (or list, or
    boolean) it refers to instead of its string form.
    """
    whole = VARIABLE_PATTERN.fullmatch(template)
    if whole is None:
        return interpolate(template, ctx)
    if ctx.head:
        variable = _head_variable(whole.group(1))
        if not variable.plain:
            return _head_text(whole.group(1), ctx)
        return ctx.resolve(variable.namespace, variable.path)
    return ctx.resolve(*split_variable(whole.group(1)))


def _head_variable(inside: str) -> HeadVariable:
    try:
        return parse_head_variable(inside)
    except HeadVariableError as exc:
        raise InterpolationError(str(exc)) from None


def _head_text(inside: str, ctx: InterpolationContext) -> str:
    """The text of one HEAD variable: a missing value falls back when a modifier says so."""
    variable = _head_variable(inside)
    try:
        value = ctx.resolve(variable.namespace, variable.path)
    except InterpolationError:
        if variable.fallback is None:
            raise
        return variable.fallback
    return render(variable, value)


def interpolate_dict(obj: dict[str, Any], ctx: InterpolationContext) -> dict[str, Any]:
    """Return a copy of `obj` with every string value (at any depth) interpolated."""
    return {key: _interpolate_value(value, ctx) for key, value in obj.items()}


def _interpolate_value(value: Any, ctx: InterpolationContext) -> Any:
    if isinstance(value, str):
        return interpolate(value, ctx)
    if isinstance(value, dict):
        return interpolate_dict(value, ctx)
    if isinstance(value, list):
        return [_interpolate_value(item, ctx) for item in value]
    return value


def _interpolate_list(items: list[Any], ctx: InterpolationContext) -> list[Any]:
    """A copy of `items` with every string (at any depth) interpolated (reference name)."""
    return [_interpolate_value(item, ctx) for item in items]


# The reference's name for the duration formatter (`${loop.elapsed}`).
_format_duration = format_elapsed
