"""What `ll-loop show` adds for a HEAD-dialect loop (spec/ll-head-dialect.md §2.5, `show`):
description, category, labels, visibility, parameters, `input_key`, `required_inputs`,
`commands`, and per state its description, sub-loop and fragment.

Pure (no I/O), like `loop_outline`: the mapping goes under the view's `head` key (and the
state extras into each state's mapping) only for a HEAD loop, so a legacy loop's view and
lines are what they were.
"""

from __future__ import annotations

import json
from typing import Any

from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.model.head_parts import ParameterSpec
from little_loops.fsm.schema import StateConfig

__all__ = ["head_lines", "head_outline", "head_state_lines", "head_state_outline"]


def head_outline(loop: HeadLoop) -> dict[str, Any]:
    """The loop-level part of a HEAD loop's view."""
    return {
        "description": loop.description,
        "category": loop.category,
        "labels": list(loop.labels),
        "visibility": loop.visibility,
        "parameters": {name: _parameter(spec) for name, spec in loop.parameters.items()},
        "input_key": loop.input_key,
        "required_inputs": list(loop.required_inputs),
        "commands": [dict(command) for command in loop.commands],
        "max_steps": loop.max_steps,
        "max_passes": loop.max_passes,
    }


def _parameter(spec: ParameterSpec) -> dict[str, Any]:
    return {
        "type": spec.type,
        "required": spec.required,
        "default": spec.default,
        "description": spec.description,
        "values": spec.values,
    }


def head_state_outline(state: StateConfig) -> dict[str, Any]:
    """A HEAD state's extras: its description, sub-loop and fragment (None: none)."""
    if not isinstance(state, HeadStateConfig):
        return {}
    return {"description": state.description, "loop": state.loop, "fragment": state.fragment}


# --- text ---------------------------------------------------------------------------------


def head_lines(head: dict[str, Any]) -> list[str]:
    """The lines under `Loop: <name>` for a HEAD loop."""
    lines = [f"Description: {line}" for line in _description_lines(head["description"])[:1]]
    lines += [f"  {line}" for line in _description_lines(head["description"])[1:]]
    lines.append(f"Category: {head['category'] or '(none)'}")
    lines.append(f"Labels: {', '.join(head['labels']) or '(none)'}")
    lines.append(f"Visibility: {head['visibility']}")
    caps = f"max_steps {head['max_steps']}"
    if head["max_passes"] is not None:
        caps += f", max_iterations (passes) {head['max_passes']}"
    lines.append(f"Caps: {caps}")
    inputs = f"Input: context.{head['input_key']} (ll-loop run <loop> INPUT)"
    if head["required_inputs"]:
        inputs += f"; required: {', '.join(head['required_inputs'])}"
    lines.append(inputs)
    lines += _parameter_lines(head["parameters"])
    lines += _command_lines(head["commands"])
    return lines


def _description_lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _parameter_lines(parameters: dict[str, dict[str, Any]]) -> list[str]:
    if not parameters:
        return []
    lines = ["Parameters:"]
    for name, spec in parameters.items():
        kind = spec["type"]
        if spec["values"]:
            kind += f" ({', '.join(map(str, spec['values']))})"
        need = "required" if spec["required"] else f"default {json.dumps(spec['default'])}"
        if not spec["required"] and spec["default"] is None:
            need = "optional"
        text = f"  {name}: {kind}, {need}"
        lines.append(f"{text} - {spec['description']}" if spec["description"] else text)
    return lines


def _command_lines(commands: list[dict[str, Any]]) -> list[str]:
    if not commands:
        return []
    lines = ["Commands:"]
    for command in commands:
        text = f"  {command.get('cmd', '')}"
        comment = command.get("comment")
        lines.append(f"{text}  # {comment}" if comment else text)
    return lines


def head_state_lines(state: dict[str, Any]) -> list[str]:
    """A HEAD state's extra lines (after its name)."""
    lines = []
    if state.get("description"):
        lines.append(f"    description: {' '.join(_description_lines(state['description']))}")
    if state.get("loop"):
        lines.append(f"    sub-loop: {state['loop']}")
    if state.get("fragment"):
        lines.append(f"    fragment: {state['fragment']}")
    return lines
