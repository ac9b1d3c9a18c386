"""`flow:` and `state_defs:`: a linear loop written as a list (spec/ll-head-dialect.md §8.2).

Entry `name` gets `next:` the following entry; entry `name?a:b` (split at the first `?`,
then the first `:`, both sides non-empty) gets `on_yes: a`, `on_no: b`; the last entry is
also `terminal: true`. `state_defs[name]` is deep-merged over the generated state
(`state_defs` wins). The result replaces any `states:` (inherited ones included), and
`flow`/`state_defs` are removed. A malformed `flow:` is a load error; a `state_defs` name
that is not in the flow is a WARNING (HEAD drops it silently).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopFileError
from little_loops.fsm.loading.mapping_merge import deep_merge
from little_loops.fsm.loading.value_checks import describe_value
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity


def expand_flow(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], list[ValidationError]]:
    """The mapping with `flow:` turned into `states:`, and the warnings found."""
    if "flow" not in data:
        return data, []
    flow = data["flow"]
    if not isinstance(flow, list) or not flow or not all(isinstance(item, str) for item in flow):
        message = f"`flow:` must be a non-empty list of strings, got {describe_value(flow)}"
        raise LoopFileError(str(path), message)
    defs = data.get("state_defs") or {}
    if not isinstance(defs, dict):
        message = f"`state_defs:` must be a mapping, got {describe_value(defs)}"
        raise LoopFileError(str(path), message)
    states = _flow_states(flow, path)
    for name, body in defs.items():
        if name in states and isinstance(body, dict):
            states[name] = deep_merge(states[name], body)
    expanded = {key: value for key, value in data.items() if key not in ("flow", "state_defs")}
    expanded["states"] = states
    return expanded, _unused_def_warnings(defs, states)


def _flow_states(flow: list[str], path: Path) -> dict[str, dict[str, Any]]:
    entries = [_entry(item, path) for item in flow]
    states: dict[str, dict[str, Any]] = {}
    for index, (name, routes) in enumerate(entries):
        state: dict[str, Any] = dict(routes)
        if not routes and index + 1 < len(entries):
            state["next"] = entries[index + 1][0]
        if index + 1 == len(entries):
            state["terminal"] = True
        states[name] = state
    return states


def _entry(item: str, path: Path) -> tuple[str, dict[str, str]]:
    """(`name`, {}) or (`name`, {on_yes, on_no}) for `name?yes:no`."""
    if "?" not in item:
        return item, {}
    name, _, targets = item.partition("?")
    yes, colon, no = targets.partition(":")
    if not (name and colon and yes and no):
        message = f"`flow:` entry {describe_value(item)} must read name?yes_target:no_target"
        raise LoopFileError(str(path), message)
    return name, {"on_yes": yes, "on_no": no}


def _unused_def_warnings(defs: dict[Any, Any], states: dict[str, Any]) -> list[ValidationError]:
    return [
        ValidationError(
            "not a state of flow: (these definitions are dropped)",
            f"state_defs.{name}",
            ValidationSeverity.WARNING,
        )
        for name in defs
        if name not in states
    ]
