"""Paradigm specs (goal, convergence, invariants, imperative) compiled into an `FSMLoop`.

A paradigm is a short way to write a common loop shape. Each compiler checks its own
keys (presence, with the reference messages, and types) and raises `ValueError` with a
message naming the key; it does not validate the result (the graph checks that follow in
`pipeline` do). Keys a compiler does not know are ignored here, like `from_dict` ignores
them; the shape checks (`shape.check_loop_mapping`) report them for files. This is the
implementation behind the reference path `little_loops.fsm.compilers`.

Besides the reference behaviour, every compiler carries the loop-level keys `context`,
`scope`, `llm`, `on_handoff`, `max_continuations`, `stall_threshold`, `checkpoint`,
`logs_keep`, `progress_paths`, `max_cost_usd`, `notify` and `rate_limit` (as well as
`max_iterations`, `backoff`, `timeout`), and
the convergence paradigm accepts `direction` (`minimize` or `maximize`). The `fsm`
pass-through raises `ValueError` rather than `KeyError` or `AttributeError` for a
malformed loop. Null values of optional keys count as absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from little_loops.fsm.loading.shape import check_loop_mapping
from little_loops.fsm.loading.value_checks import describe_value, not_a_string_message
from little_loops.fsm.schema import (
    DEFAULT_MAX_CONTINUATIONS,
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_ON_HANDOFF,
    EvaluateConfig,
    FSMLoop,
    LLMConfig,
    RateLimitConfig,
    RouteConfig,
    StateConfig,
)

SLUG_MAX_LENGTH = 50
_NOT_SLUG_CHARS = re.compile(r"[^\w\s-]")
_SLUG_SEPARATORS = re.compile(r"[\s-]+")


def _slugify(text: str) -> str:
    """Reference slug: keep word chars, hyphenate runs of space/hyphen, trim, lower, cut."""
    slug = _NOT_SLUG_CHARS.sub("", text)
    slug = _SLUG_SEPARATORS.sub("-", slug).strip("-").lower()
    return slug[:SLUG_MAX_LENGTH]


def _optional(spec: dict[str, Any], key: str, default: Any = None) -> Any:
    value = spec.get(key)
    return default if value is None else value


def _require_string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} {not_a_string_message(value)}")
    return value


def _require_string_list(value: Any, what: str) -> list[str]:
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of strings, got {describe_value(value)}")
    for index, item in enumerate(value):
        _require_string(item, f"{what} entry {index}")
    return value


def _carried_fields(spec: dict[str, Any], paradigm: str) -> dict[str, Any]:
    """Loop-level keys copied from the spec (values are checked by the later stages)."""
    title = f"{paradigm.capitalize()} paradigm"
    context = _optional(spec, "context", {})
    if not isinstance(context, dict):
        raise ValueError(f"{title} 'context' must be a mapping, got {describe_value(context)}")
    scope = _require_string_list(_optional(spec, "scope", []), f"{title} 'scope'")
    llm = _optional(spec, "llm", {})
    if not isinstance(llm, dict):
        raise ValueError(f"{title} 'llm' must be a mapping, got {describe_value(llm)}")
    return {
        "paradigm": paradigm,
        "context": dict(context),
        "scope": list(scope),
        "max_iterations": _optional(spec, "max_iterations", DEFAULT_MAX_ITERATIONS),
        "backoff": spec.get("backoff"),
        "timeout": spec.get("timeout"),
        "llm": LLMConfig.from_dict(llm),
        "on_handoff": _optional(spec, "on_handoff", DEFAULT_ON_HANDOFF),
        "max_continuations": _optional(spec, "max_continuations", DEFAULT_MAX_CONTINUATIONS),
        "stall_threshold": spec.get("stall_threshold"),
        "checkpoint": spec.get("checkpoint"),
        "logs_keep": spec.get("logs_keep"),
        "progress_paths": list(
            _require_string_list(_optional(spec, "progress_paths", []), f"{title} 'progress_paths'")
        ),
        "max_cost_usd": spec.get("max_cost_usd"),
        "notify": spec.get("notify"),
        "rate_limit": RateLimitConfig.from_dict(_optional(spec, "rate_limit", {})),
    }


def _terminal() -> StateConfig:
    return StateConfig(terminal=True)


# ---------------------------------------------------------------------------
# goal
# ---------------------------------------------------------------------------


def compile_goal(spec: dict[str, Any]) -> FSMLoop:
    """evaluate (check tool) -> done on success, fix (fix tool) -> evaluate on failure."""
    if "goal" not in spec:
        raise ValueError("Goal paradigm requires 'goal' field")
    goal = _require_string(spec["goal"], "Goal paradigm 'goal'")
    tools = spec.get("tools")
    if not tools:
        raise ValueError("Goal paradigm requires 'tools' field with at least one tool")
    tools = _require_string_list(tools, "Goal paradigm 'tools'")
    check_tool = tools[0]
    fix_tool = tools[1] if len(tools) > 1 else tools[0]
    name = _optional(spec, "name", f"goal-{_slugify(goal)}")
    states = {
        "evaluate": StateConfig(action=check_tool, on_success="done", on_failure="fix"),
        "fix": StateConfig(action=fix_tool, next="evaluate"),
        "done": _terminal(),
    }
    return FSMLoop(
        name=_require_string(name, "Goal paradigm 'name'"),
        initial="evaluate",
        states=states,
        **_carried_fields(spec, "goal"),
    )


# ---------------------------------------------------------------------------
# convergence
# ---------------------------------------------------------------------------

_CONVERGENCE_REQUIRED = ("name", "check", "toward", "using")


def _convergence_values(spec: dict[str, Any]) -> tuple[Any, Any, str]:
    """`toward`, `tolerance` (numbers, or `${...}` strings) and `direction`."""
    toward = spec["toward"]
    if isinstance(toward, bool) or not isinstance(toward, int | float | str):
        raise ValueError(
            "Convergence paradigm 'toward' must be a number or a string, "
            f"got {describe_value(toward)}"
        )
    tolerance = _optional(spec, "tolerance", 0)
    is_number = isinstance(tolerance, int | float) and not isinstance(tolerance, bool)
    if not (isinstance(tolerance, str) or (is_number and tolerance >= 0)):
        raise ValueError(
            "Convergence paradigm 'tolerance' must be a number >= 0 or a string, "
            f"got {describe_value(tolerance)}"
        )
    direction = _optional(spec, "direction", "minimize")
    if direction not in ("minimize", "maximize"):
        raise ValueError(
            "Convergence paradigm 'direction' must be 'minimize' or 'maximize', "
            f"got {describe_value(direction)}"
        )
    return toward, tolerance, direction


def _convergence_context(generated: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The generated metric keys, then the spec's own context (which may not replace them)."""
    clashes = [key for key in generated if key in extra]
    if clashes:
        raise ValueError(
            f"Convergence paradigm 'context' cannot set '{clashes[0]}' "
            "(metric_cmd, target and tolerance come from check, toward and tolerance)"
        )
    return {**generated, **extra}


def _measure_state(direction: str) -> StateConfig:
    evaluate = EvaluateConfig(
        type="convergence",
        target="${context.target}",
        tolerance="${context.tolerance}",
        previous="${prev.output}",
        direction=direction,
    )
    route = RouteConfig(routes={"target": "done", "progress": "apply", "stall": "done"})
    return StateConfig(
        action="${context.metric_cmd}", evaluate=evaluate, route=route, capture="current_value"
    )


def compile_convergence(spec: dict[str, Any]) -> FSMLoop:
    """measure (convergence evaluator) -> apply -> measure, until target or stall."""
    missing = [key for key in _CONVERGENCE_REQUIRED if key not in spec]
    if missing:
        raise ValueError(f"Convergence paradigm requires: {', '.join(missing)}")
    for key in ("name", "check", "using"):
        _require_string(spec[key], f"Convergence paradigm '{key}'")
    toward, tolerance, direction = _convergence_values(spec)
    carried = _carried_fields(spec, "convergence")
    generated = {"metric_cmd": spec["check"], "target": toward, "tolerance": tolerance}
    carried["context"] = _convergence_context(generated, carried["context"])
    states = {
        "measure": _measure_state(direction),
        "apply": StateConfig(action=spec["using"], next="measure"),
        "done": _terminal(),
    }
    return FSMLoop(name=spec["name"], initial="measure", states=states, **carried)


# ---------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------


def _constraint_fields(index: int, constraint: Any) -> tuple[str, str, str]:
    if not isinstance(constraint, dict):
        raise ValueError(
            f"Constraint {index} must be a mapping with name, check and fix, "
            f"got {describe_value(constraint)}"
        )
    if "name" not in constraint:
        raise ValueError(f"Constraint {index} requires 'name' field")
    name = _require_string(constraint["name"], f"Constraint {index} 'name'")
    for key in ("check", "fix"):
        if key not in constraint:
            raise ValueError(f"Constraint '{name}' requires '{key}' field")
        _require_string(constraint[key], f"Constraint '{name}' '{key}'")
    return name, constraint["check"], constraint["fix"]


def _checked_constraints(spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    constraints = spec.get("constraints")
    if not constraints:
        raise ValueError(
            "Invariants paradigm requires 'constraints' field with at least one constraint"
        )
    if not isinstance(constraints, list):
        raise ValueError(
            f"Invariants paradigm 'constraints' must be a list, got {describe_value(constraints)}"
        )
    fields = [_constraint_fields(index, item) for index, item in enumerate(constraints)]
    seen: set[str] = set()
    for name, _, _ in fields:
        # A repeated name would silently overwrite the earlier states and break the chain.
        if name in seen:
            raise ValueError(f"Constraint name '{name}' is used more than once")
        seen.add(name)
    return fields


def compile_invariants(spec: dict[str, Any]) -> FSMLoop:
    """check_<N> -> next check (or all_valid); on failure fix_<N> -> check_<N>."""
    if "name" not in spec:
        raise ValueError("Invariants paradigm requires 'name' field")
    name = _require_string(spec["name"], "Invariants paradigm 'name'")
    constraints = _checked_constraints(spec)
    maintain = _optional(spec, "maintain", False)
    if not isinstance(maintain, bool):
        raise ValueError(
            f"Invariants paradigm 'maintain' must be true or false, got {describe_value(maintain)}"
        )
    return FSMLoop(
        name=name,
        initial=f"check_{constraints[0][0]}",
        states=_invariant_states(constraints, maintain),
        maintain=maintain,
        **_carried_fields(spec, "invariants"),
    )


def _invariant_states(
    constraints: list[tuple[str, str, str]], maintain: bool
) -> dict[str, StateConfig]:
    states: dict[str, StateConfig] = {}
    for index, (constraint, check, fix) in enumerate(constraints):
        following = constraints[index + 1][0] if index + 1 < len(constraints) else None
        on_success = f"check_{following}" if following is not None else "all_valid"
        states[f"check_{constraint}"] = StateConfig(
            action=check, on_success=on_success, on_failure=f"fix_{constraint}"
        )
        states[f"fix_{constraint}"] = StateConfig(action=fix, next=f"check_{constraint}")
    first_check = f"check_{constraints[0][0]}"
    states["all_valid"] = StateConfig(terminal=True, on_maintain=first_check if maintain else None)
    return states


# ---------------------------------------------------------------------------
# imperative
# ---------------------------------------------------------------------------


def _checked_steps_and_until(spec: dict[str, Any]) -> tuple[list[str], str]:
    steps = spec.get("steps")
    if not steps:
        raise ValueError("Imperative paradigm requires 'steps' field with at least one step")
    steps = _require_string_list(steps, "Imperative paradigm 'steps'")
    if "until" not in spec:
        raise ValueError("Imperative paradigm requires 'until' field")
    until = spec["until"]
    if not isinstance(until, dict):
        raise ValueError(
            f"Imperative paradigm 'until' must be a mapping, got {describe_value(until)}"
        )
    if "check" not in until:
        raise ValueError("Imperative paradigm 'until' requires 'check' field")
    return steps, _require_string(until["check"], "Imperative paradigm 'until.check'")


def compile_imperative(spec: dict[str, Any]) -> FSMLoop:
    """step_0 -> step_1 -> ... -> check_done; failure starts over at step_0."""
    if "name" not in spec:
        raise ValueError("Imperative paradigm requires 'name' field")
    name = _require_string(spec["name"], "Imperative paradigm 'name'")
    steps, until_check = _checked_steps_and_until(spec)
    states: dict[str, StateConfig] = {}
    for index, step in enumerate(steps):
        following = f"step_{index + 1}" if index + 1 < len(steps) else "check_done"
        states[f"step_{index}"] = StateConfig(action=step, next=following)
    states["check_done"] = StateConfig(action=until_check, on_success="done", on_failure="step_0")
    states["done"] = _terminal()
    return FSMLoop(
        name=name, initial="step_0", states=states, **_carried_fields(spec, "imperative")
    )


# ---------------------------------------------------------------------------
# dispatch
# ---------------------------------------------------------------------------


def passthrough_fsm(spec: dict[str, Any]) -> FSMLoop:
    """Pass-through: the spec already is an FSM; malformed ones raise ValueError."""
    missing = [key for key in ("name", "initial") if key not in spec]
    if missing:
        raise ValueError(f"FSM paradigm requires: {', '.join(missing)}")
    errors = check_loop_mapping(spec)
    if errors:
        details = "; ".join(
            f"{error.path}: {error.message}" if error.path else error.message for error in errors
        )
        raise ValueError(f"Invalid FSM loop: {details}")
    return FSMLoop.from_dict(spec)


_COMPILERS: dict[str, Callable[[dict[str, Any]], FSMLoop]] = {
    "goal": compile_goal,
    "convergence": compile_convergence,
    "invariants": compile_invariants,
    "imperative": compile_imperative,
    "fsm": passthrough_fsm,
}


def compile_paradigm(spec: dict[str, Any]) -> FSMLoop:
    """Compile a spec by its `paradigm` key (`fsm` when absent or null)."""
    paradigm = _optional(spec, "paradigm", "fsm")
    compiler = _COMPILERS.get(paradigm) if isinstance(paradigm, str) else None
    if compiler is None:
        names = ", ".join(sorted(_COMPILERS))
        raise ValueError(f"Unknown paradigm: '{paradigm}'. Must be one of: {names}")
    return compiler(spec)
