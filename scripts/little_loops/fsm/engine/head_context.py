"""What `${...}` sees in a HEAD-dialect run beyond a legacy one (spec/ll-head-dialect.md
§2.5, §5).

- The injected context keys (`run_dir`, `input_hash`, `max_steps`, `max_iterations`, the
  two confidence thresholds, `design_tokens_context`), each only when the loop's context
  lacks it: they sit under the loop's context, so `--context`, the positional input and
  the file's own `context:` all win over them.
- `${param.*}` of a state built from a fragment: its `with:` bindings interpolated anew
  each time the state's context is built, unbound optional parameters filled with their
  non-null defaults, a required one still unbound an error that ends the run.

`StepContext.interpolation()` asks this module only for a HEAD loop, so a legacy run sees
exactly what it saw before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.interpolation import (
    InterpolationContext,
    InterpolationError,
    interpolate_dict,
)
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.schema import StateConfig

__all__ = [
    "DEFAULT_OUTCOME_THRESHOLD",
    "DEFAULT_READINESS_THRESHOLD",
    "FragmentParameterError",
    "fill_head_fields",
    "fragment_parameters",
    "injected_context",
    "seeded_keys",
]

DEFAULT_READINESS_THRESHOLD = 85
DEFAULT_OUTCOME_THRESHOLD = 65
_INPUT_HASH_LENGTH = 12


class FragmentParameterError(InterpolationError):
    """A required fragment parameter is not bound, or a binding cannot be interpolated:
    the run ends `error` (§5)."""


def injected_context(loop: HeadLoop, memory: HeadMemory) -> dict[str, Any]:
    """The keys HEAD injects that `loop.context` lacks (computed from the run so far)."""
    values: dict[str, Any] = {"max_steps": loop.max_steps}
    if loop.max_passes is not None:
        values["max_iterations"] = loop.max_passes
    elif loop.max_iterations_written:  # written alone, it is the step cap
        values["max_iterations"] = loop.max_steps
    values["design_tokens_context"] = ""
    if memory.run_dir is not None:
        values["run_dir"] = memory.run_dir
    values.update(seeded_keys(loop, loop.context))
    return {key: value for key, value in values.items() if key not in loop.context}


def seeded_keys(loop: HeadLoop, context: Mapping[str, Any]) -> dict[str, Any]:
    """The two confidence thresholds and, when `context` has a text `input`, its
    `input_hash`: what every HEAD run has, a sub-loop's too (§2.5, §4.2)."""
    values: dict[str, Any] = {
        "readiness_threshold": _threshold(loop, "readiness", DEFAULT_READINESS_THRESHOLD),
        "outcome_threshold": _threshold(loop, "outcome", DEFAULT_OUTCOME_THRESHOLD),
    }
    given = context.get("input")
    if isinstance(given, str):
        import hashlib  # here, not at the top: a legacy run never loads OpenSSL's hashes

        digest = hashlib.sha256(given.encode("utf-8")).hexdigest()
        values["input_hash"] = digest[:_INPUT_HASH_LENGTH]
    return values


def _threshold(loop: HeadLoop, kind: str, default: int) -> Any:
    """`config.commands.confidence_gate.<kind>_threshold`, else HEAD's default."""
    commands = loop.config.get("commands")
    gate = commands.get("confidence_gate") if isinstance(commands, dict) else None
    value = gate.get(f"{kind}_threshold") if isinstance(gate, dict) else None
    return default if value is None else value


def fragment_parameters(
    state: StateConfig | None, ctx: InterpolationContext
) -> dict[str, Any] | None:
    """`${param.*}` of `state` (None: not built from a fragment).

    Raises `FragmentParameterError` for a required parameter the bindings leave unbound.
    """
    if not isinstance(state, HeadStateConfig) or state.fragment is None:
        return None
    try:
        bound = interpolate_dict(dict(state.fragment_bindings or {}), ctx)
    except FragmentParameterError:
        raise
    except InterpolationError as exc:
        raise FragmentParameterError(
            f"Fragment '{state.fragment}': cannot interpolate its 'with' bindings: {exc}"
        ) from None
    for name, spec in (state.fragment_parameters or {}).items():
        if name in bound:
            continue
        if spec.default is not None:
            bound[name] = spec.default
        elif spec.required:
            raise FragmentParameterError(
                f"Fragment '{state.fragment}' requires parameter '{name}' "
                "but it is not bound in 'with'"
            )
    return bound


def fill_head_fields(
    ctx: InterpolationContext, loop: HeadLoop, memory: HeadMemory, state: StateConfig | None
) -> InterpolationContext:
    """`ctx` (built as for a legacy run) with what a HEAD run adds."""
    ctx.head = True
    ctx.context = {**injected_context(loop, memory), **loop.context}
    ctx.messages = memory.messages
    ctx.param = fragment_parameters(state, ctx)
    return ctx
