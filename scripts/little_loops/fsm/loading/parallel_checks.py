"""Checks of `parallel:` states (issue 25), in both dialects.

Shape: the block's keys and types (`check_parallel`, a field check of either dialect's
state table) and the rules between a state's keys (`parallel_state_errors`): `parallel:`
stands instead of `action:`/`loop:`/`next:`, and a legacy state's `on_partial` needs it.
On the built loop (`parallel_child_findings`): a child loop named in the file must exist
and must not fan out itself (nested `parallel:`), and a written list of items must not
be longer than `max_items`. Every finding names its key path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from little_loops.fsm.errors import LoopError
from little_loops.fsm.loading.loop_refs import resolve_loop_ref
from little_loops.fsm.loading.value_checks import (
    FieldCheck,
    check_mapping,
    check_non_empty_string,
    check_positive_int,
    describe_value,
    join_path,
    mapping_of,
    nullable,
    one_of,
    scalar,
)
from little_loops.fsm.model.findings import ValidationError
from little_loops.fsm.model.parallel_config import FAIL_MODES, ISOLATIONS, parallel_of
from little_loops.fsm.schema import FSMLoop

__all__ = ["check_parallel", "parallel_child_findings", "parallel_state_errors"]

# Reads a loop file into its mapping (the pipeline's reader).
ReadMapping = Callable[[Path], dict[str, Any]]

# Keys a `parallel:` state cannot have beside it: it runs no action of its own, and it
# leaves on its verdict routes only.
_INSTEAD_OF = ("action", "loop", "next")


def _check_items(value: Any, path: str) -> list[ValidationError]:
    if isinstance(value, str | list):
        return []
    message = f"must be a string or a list, got {describe_value(value)}"
    return [ValidationError(message, path)]


_PARALLEL_CHECKS: dict[str, FieldCheck] = {
    "items": _check_items,
    "loop": scalar(check_non_empty_string),
    "with": scalar(nullable(check_mapping)),
    "max_workers": scalar(check_positive_int),
    "isolation": scalar(one_of("isolation", ISOLATIONS)),
    "fail_mode": scalar(one_of("fail_mode", FAIL_MODES)),
    "timeout_seconds": scalar(nullable(check_positive_int)),
    "max_items": scalar(nullable(check_positive_int)),
}

check_parallel: FieldCheck = mapping_of(_PARALLEL_CHECKS, required=("items", "loop"))
"""The `parallel:` block of a state: its keys, their types, `items` and `loop` required."""


def parallel_state_errors(state: dict[str, Any], path: str, *, head: bool) -> list[ValidationError]:
    """The rules between a well-typed state's keys (`head`: a HEAD state, where
    `on_partial` is a verdict route like any other)."""
    if state.get("parallel") is None:
        if not head and state.get("on_partial") is not None:
            message = "on_partial is only for a parallel: state"
            return [ValidationError(message, join_path(path, "on_partial"))]
        return []
    return [
        ValidationError(
            f"a parallel: state runs a child loop per item, it cannot also have {key}",
            join_path(path, "parallel"),
        )
        for key in _INSTEAD_OF
        if state.get(key) is not None
    ]


def parallel_child_findings(fsm: FSMLoop, path: Path, read: ReadMapping) -> list[ValidationError]:
    """The child of each `parallel:` state named in the file: found, and no fan-out of
    its own; a written item list within `max_items`."""
    findings: list[ValidationError] = []
    for name, state in fsm.states.items():
        block = parallel_of(state)
        if block is None:
            continue
        key_path = f"states.{name}.parallel"
        limit = block.max_items
        if isinstance(block.items, list) and limit is not None and len(block.items) > limit:
            message = f"{len(block.items)} items, more than max_items ({limit})"
            findings.append(ValidationError(message, join_path(key_path, "items")))
        if "${" not in block.loop:
            findings.extend(_child_findings(block.loop, path, read, join_path(key_path, "loop")))
    return findings


def _child_findings(
    loop_name: str, path: Path, read: ReadMapping, key_path: str
) -> list[ValidationError]:
    child = resolve_loop_ref(loop_name, path.parent)
    if child is None:
        message = f"child loop '{loop_name}' not found next to this file or in .loops/"
        return [ValidationError(message, key_path)]
    try:
        data = read(child)
    except LoopError:
        return []  # the child's own validation reports it
    states = data.get("states")
    for state_name, state in (states if isinstance(states, dict) else {}).items():
        if isinstance(state, dict) and state.get("parallel") is not None:
            message = (
                f"child loop '{loop_name}' fans out itself (states.{state_name}.parallel); "
                "nested parallel: is not allowed"
            )
            return [ValidationError(message, key_path)]
    return []
