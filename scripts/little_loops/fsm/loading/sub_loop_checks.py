"""Static checks of `loop:` states (spec/ll-head-dialect.md §4.1, §4.2, §9c).

For every `loop:` name without `${` (resolved from the parent file's directory, then the
loops dir, `loop_refs`): an unresolvable name is an ERROR; `with:` bindings are checked
against the parameters the child declares (when it declares any); and the call graph of
static names across files must have no cycle, direct or indirect:
`states.fan.loop: sub-loop cycle: nightly -> triage -> nightly`.

Children are read with the reader the pipeline passes in (`from:` and `flow:` resolved),
never fully validated here: a child that does not load is its own file's problem, and at
run time a load failure of the state (§4.3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopError
from little_loops.fsm.loading.bindings import binding_errors
from little_loops.fsm.loading.loop_refs import resolve_loop_ref
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.model.head_parts import parameters_from_dict

# Reads a loop file into its resolved mapping (`from:` and `flow:` applied).
ReadResolved = Callable[[Path], dict[str, Any]]


def static_loop_refs(states: Any) -> Iterator[tuple[str, str]]:
    """(state name, loop name) of each `loop:` state whose name is fixed in the file."""
    if not isinstance(states, dict):
        return
    for name, state in states.items():
        target = state.get("loop") if isinstance(state, dict) else None
        if isinstance(target, str) and target and "${" not in target:
            yield str(name), target


def sub_loop_findings(fsm: HeadLoop, path: Path, read: ReadResolved) -> list[ValidationError]:
    """Unresolvable names, bad bindings and call-graph cycles of a HEAD loop's sub-loops."""
    findings: list[ValidationError] = []
    for state_name, state in fsm.states.items():
        if not isinstance(state, HeadStateConfig) or state.loop is None or "${" in state.loop:
            continue
        key_path = f"states.{state_name}.loop"
        child = resolve_loop_ref(state.loop, path.parent)
        if child is None:
            message = f"sub-loop '{state.loop}' not found next to this file or in .loops/"
            findings.append(ValidationError(message, key_path))
            continue
        findings.extend(_binding_findings(state, state_name, child, read))
        cycle = _cycle_through(child, path, read, [_loop_name(fsm.name, path), state.loop])
        if cycle is not None:
            message = f"sub-loop cycle: {' -> '.join(cycle)}"
            findings.append(ValidationError(message, key_path))
    return findings


def _read_or_none(path: Path, read: ReadResolved) -> dict[str, Any] | None:
    try:
        return read(path)
    except LoopError:
        return None


def _binding_findings(
    state: HeadStateConfig, state_name: str, child: Path, read: ReadResolved
) -> list[ValidationError]:
    data = _read_or_none(child, read)
    parameters = data.get("parameters") if data is not None else None
    if not isinstance(parameters, dict) or not parameters or state.context_passthrough:
        return []
    try:
        specs = parameters_from_dict(parameters)
    except (KeyError, TypeError, AttributeError):
        return []  # the child's own validation reports its parameters
    return binding_errors(state.with_ or {}, specs, f"states.{state_name}.with")


def _cycle_through(
    start: Path, origin: Path, read: ReadResolved, chain: list[str]
) -> list[str] | None:
    """The call chain from `origin` back to it (or around any loop) through `start`."""
    seen = {origin.resolve()}
    return _walk(start, read, chain, seen, [origin.resolve()])


def _walk(
    path: Path, read: ReadResolved, chain: list[str], seen: set[Path], stack: list[Path]
) -> list[str] | None:
    here = path.resolve()
    if here in stack:
        return chain
    if here in seen:
        return None
    seen.add(here)
    data = _read_or_none(path, read)
    if data is None:
        return None
    for _, name in static_loop_refs(data.get("states")):
        child = resolve_loop_ref(name, path.parent)
        if child is not None:
            found = _walk(child, read, [*chain, name], seen, [*stack, here])
            if found is not None:
                return found
    return None


def _loop_name(name: str, path: Path) -> str:
    return name or path.stem
