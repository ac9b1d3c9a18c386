"""Progress lines of a `parallel:` fan-out (issue 25): one whole line per step of each
branch, prefixed with the fan-out's state, the item's number and the item
(`[go 2/3] b: work -> make b`), since the branches' steps interleave.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.events import (
    ACTION_START,
    LOOP_COMPLETE,
    PARALLEL_BRANCH_END,
    PARALLEL_END,
    PARALLEL_START,
    ROUTE,
    STATE_ENTER,
)

__all__ = ["BranchLines", "is_fanout_event"]

ITEM_WIDTH = 30
TEXT_WIDTH = 60
_FANOUT_EVENTS = frozenset({"parallel_start", "parallel_branch_end", "parallel_end"})


def is_fanout_event(event: dict[str, Any]) -> bool:
    """Events these lines show: a branch's own, or the fan-out's."""
    # (`parallel_state` marks a branch's events: a sub-loop's worktree events say `branch`)
    return "parallel_state" in event or event.get("event") in _FANOUT_EVENTS


def _short(text: object, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


class BranchLines:
    """Turns fan-out events into lines (None: the event shows nothing)."""

    def __init__(self) -> None:
        self._states: dict[int, str] = {}
        self._items: dict[tuple[str, int], str] = {}

    def line(self, event: dict[str, Any]) -> str | None:
        kind = event.get("event")
        if kind == PARALLEL_START:
            return (
                f"fan-out of '{event.get('loop')}' over {event.get('items')} items "
                f"({event.get('max_workers')} at once)"
            )
        if kind == PARALLEL_END:
            counts = ", ".join(f"{event.get(v, 0)} {v}" for v in ("yes", "no", "error"))
            return f"fan-out done: {counts} -> {event.get('verdict')}"
        if kind == PARALLEL_BRANCH_END:
            prefix = self._prefix(event, int(event.get("item_index", 0)))
            return f"{prefix}{event.get('verdict')} ({event.get('terminated_by')})"
        return self._branch_step(event)

    def _prefix(self, event: dict[str, Any], index: int) -> str:
        state = str(event.get("parallel_state") or event.get("state") or "?")
        item = event.get("branch_item")
        if item is not None:
            self._items[(state, index)] = _short(item, ITEM_WIDTH)
        shown = self._items.get((state, index), "?")
        return f"[{state} {index + 1}/{event.get('branches', '?')}] {shown}: "

    def _branch_step(self, event: dict[str, Any]) -> str | None:
        index = int(event.get("branch", 0))
        prefix = self._prefix(event, index)
        kind = event.get("event")
        if kind == STATE_ENTER:
            self._states[index] = str(event.get("state"))
            return None
        state = self._states.get(index, "?")
        if kind == ACTION_START:
            return f"{prefix}{state} -> {_short(event.get('action', ''), TEXT_WIDTH)}"
        if kind == ROUTE:
            verdict = event.get("verdict")
            said = f" ({verdict})" if verdict else ""
            return f"{prefix}{event.get('from')} -> {event.get('to')}{said}"
        if kind == LOOP_COMPLETE and event.get("terminated_by") not in ("terminal", None):
            return f"{prefix}stopped: {event.get('terminated_by')}"
        return None
