"""A `parallel:` state's items and what its branches come back with (issue 25).

`fanout_items` reads the items: a template is interpolated and split into lines (blank
lines dropped), a YAML list keeps its elements (strings interpolated); more than
`max_items` is refused before anything starts. `branch_result` is one item's entry in
`captured.<state>.results`; `fanout_verdict` reads the entries as the state's verdict:
`yes` when every item is yes (no items: yes), `no` when none is (or a `fail_fast`
fan-out was cut short), else `partial`.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.child_outcome import ChildOutcome
from little_loops.fsm.interpolation import InterpolationContext, interpolate
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.parallel_config import ParallelConfig
from little_loops.fsm.schema import StateConfig

__all__ = [
    "CANCELLED",
    "FanoutItemsError",
    "branch_result",
    "fanout_items",
    "fanout_route",
    "fanout_verdict",
]

CANCELLED = "cancelled"
"""The verdict of an item a `fail_fast` fan-out stopped (or never started)."""


class FanoutItemsError(Exception):
    """The items cannot be read, or there are too many (the state's `error`)."""


def fanout_items(block: ParallelConfig, ctx: InterpolationContext) -> list[Any]:
    """The items, in order (raises `InterpolationError` for a template that fails)."""
    if isinstance(block.items, list):
        items = [interpolate(item, ctx) if isinstance(item, str) else item for item in block.items]
    else:
        text = interpolate(block.items, ctx)
        items = [line.strip() for line in text.splitlines() if line.strip()]
    if block.max_items is not None and len(items) > block.max_items:
        raise FanoutItemsError(
            f"parallel: {len(items)} items, more than max_items ({block.max_items})"
        )
    return items


def branch_verdict(outcome: ChildOutcome) -> str:
    """yes / no / error of one finished item (a child's timeout is a no)."""
    if outcome.kind == "yes":
        return "yes"
    if outcome.kind in ("error", "load_error"):
        return "error"
    return "no"


def branch_result(
    item: Any,
    index: int,
    *,
    verdict: str,
    terminated_by: str,
    captured: dict[str, Any] | None = None,
    error: str | None = None,
    worktree: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One entry of `captured.<state>.results` (JSON values)."""
    entry: dict[str, Any] = {
        "item": item,
        "item_index": index,
        "verdict": verdict,
        "terminated_by": terminated_by,
        "captured": captured or {},
        "error": error,
    }
    if worktree is not None:
        entry["branch"], entry["worktree"] = worktree["branch"], worktree["path"]
    return entry


def fanout_verdict(results: list[dict[str, Any]], *, cut_short: bool) -> str:
    """The state's verdict from its items' (see the module docstring)."""
    yes = sum(1 for entry in results if entry["verdict"] == "yes")
    if cut_short or (results and yes == 0):
        return "no"
    return "yes" if yes == len(results) else "partial"


def fanout_route(state: StateConfig, verdict: str) -> str | None:
    """The state's target for `verdict` (a mixed outcome without `on_partial` goes the
    `no` way); None: no route."""
    if verdict == "yes":
        return state.on_success
    if verdict == "partial":
        partial = (
            state.on_verdicts.get("partial")
            if isinstance(state, HeadStateConfig)
            else getattr(state, "on_partial", None)  # a legacy `ParallelStateConfig`
        )
        return partial or state.on_failure
    return state.on_failure
