"""What a sub-loop is given: its context (spec §4.2 and §9d) and its wall clock (§4.5).

`bind_child_context` builds the child's context by one of HEAD's three paths (`with:`
bindings, `context_passthrough`, or the child's own `context:`), then applies the child's
declared parameters on every path: defaults fill what is absent, a required one must be
there, and each value must read as its type after interpolation. A mistake is a
`ChildBindingError`, which the sub-loop dispatch treats as the state's load failure.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.head_context import seeded_keys
from little_loops.fsm.interpolation import (
    InterpolationContext,
    InterpolationError,
    interpolate_dict,
)
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.model.head_parts import ParameterSpec
from little_loops.fsm.model.parameter_types import type_problem
from little_loops.fsm.schema import FSMLoop

__all__ = [
    "ChildBindingError",
    "bind_child_context",
    "clamped_child_budget",
    "clamped_child_timeout",
]


class ChildBindingError(Exception):
    """The child cannot be given its context (a load failure of the `loop:` state)."""


def bind_child_context(
    state: HeadStateConfig, child: FSMLoop, ctx: InterpolationContext, label: str
) -> dict[str, Any]:
    """The child's context for `state` (`label`: the child's name, for messages)."""
    if state.with_:
        context = _bound(state, child, ctx, label)
    elif state.context_passthrough:
        context = {**ctx.context, **_capture_outputs(ctx.captured), **child.context}
    else:
        context = dict(child.context)
    if isinstance(child, HeadLoop):
        _apply_parameters(child.parameters, context, label)
        _seed(child, context)
    return context


def _bound(
    state: HeadStateConfig, child: FSMLoop, ctx: InterpolationContext, label: str
) -> dict[str, Any]:
    """`with:` interpolated in the parent, declared defaults added; the parent's
    `run_dir` when the bindings lack it. Nothing else of the parent leaks in."""
    try:
        bound = interpolate_dict(dict(state.with_ or {}), ctx)
    except InterpolationError as exc:
        raise ChildBindingError(f"Sub-loop '{label}': cannot bind 'with': {exc}") from exc
    specs = child.parameters if isinstance(child, HeadLoop) else {}
    for name, spec in specs.items():
        if name in bound:
            continue
        if spec.required:
            raise ChildBindingError(
                f"Sub-loop '{label}' requires parameter '{name}' but it is not bound in 'with'"
            )
        if spec.default is not None:
            bound[name] = spec.default
    context = {**child.context, **bound}
    if "run_dir" not in bound and ctx.context.get("run_dir") is not None:
        context["run_dir"] = ctx.context["run_dir"]
    return context


def _capture_outputs(captured: dict[str, Any]) -> dict[str, Any]:
    """Captures as passthrough gives them: a capture record becomes its `output`."""
    return {
        name: value.get("output") if isinstance(value, dict) else value
        for name, value in captured.items()
    }


def _apply_parameters(specs: dict[str, ParameterSpec], context: dict[str, Any], label: str) -> None:
    """§9d on every path: defaults for what is absent, required ones, types."""
    for name, spec in specs.items():
        if name not in context and spec.default is not None:
            context[name] = spec.default
        if name not in context:
            if spec.required:
                raise ChildBindingError(
                    f"Sub-loop '{label}' requires parameter '{name}' but it is not bound"
                )
            continue
        problem = type_problem(spec, context[name])
        if problem is not None:
            raise ChildBindingError(f"Sub-loop '{label}' parameter '{name}' {problem}")


def _seed(child: HeadLoop, context: dict[str, Any]) -> None:
    """§2.5 keys every HEAD run has, seeded only when absent."""
    for key, value in seeded_keys(child, context).items():
        context.setdefault(key, value)


def clamped_child_timeout(
    child_timeout: int | None,
    *,
    parent_timeout: int | None,
    parent_elapsed_ms: int,
    state_timeout: int | None,
) -> int | None:
    """The child's wall clock (§4.5): at most what the parent has left (at least 1 s),
    lowered to the state's `timeout`; the child's own when it is smaller."""
    cap: int | None = None
    if parent_timeout:
        cap = max(1, int(parent_timeout - parent_elapsed_ms / 1000))
    if state_timeout:
        cap = state_timeout if cap is None else min(cap, state_timeout)
    if cap is None:
        return child_timeout
    return cap if child_timeout is None or child_timeout > cap else child_timeout


def clamped_child_budget(
    child_budget: float | None, *, run_budget: float | None, run_spent: float
) -> float | None:
    """The child's `max_cost_usd`: what the run's budget has left, or the child's own
    when that is smaller (the run's budget covers everything its children spend)."""
    if run_budget is None:
        return child_budget
    left = max(run_budget - run_spent, 0.0)
    return left if child_budget is None else min(child_budget, left)
