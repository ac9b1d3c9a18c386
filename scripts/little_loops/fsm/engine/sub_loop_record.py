"""A sub-loop's place in its parent's run record (spec §9b).

While a child runs, the top-level cursor's `head.sub_loops` holds one record per level,
outermost first. A record is the child's cursor and counters as of its last route (the
state it runs next and the iterations it finished), with what it was given: its bound
context and clamped wall clock. A parent stopped, interrupted or killed meanwhile is
saved with these records, and its resume rebuilds the child from them, so the child goes
on at its own state: an action cut off runs again, a routed state never does.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.cursor_records import HandoffContext
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.spending import RunSpending

if TYPE_CHECKING:
    from little_loops.fsm.engine.sub_loop_requests import ChildEnded

__all__ = [
    "child_record",
    "keep_paused_place",
    "matching_record",
    "restore_guards",
    "restored_cursor",
]


def child_record(
    *,
    parent_state: str,
    loop_name: str,
    loop_path: str,
    cursor: RunCursor,
    guards: RunGuards,
    context: dict[str, Any],
    timeout: int | None,
    elapsed_ms: int,
    next_state: str | None = None,
) -> dict[str, Any]:
    """The child's place, to run `next_state` (default: the cursor's state) next."""
    head = cursor.head.to_dict()
    head.pop("sub_loops", None)  # deeper levels have records of their own
    head.pop("rate_limit", None)  # the run's own (shared with its sub-loops, §7.6)
    return {
        "parent_state": parent_state,
        "loop_name": loop_name,
        "loop_path": loop_path,
        "current_state": next_state or cursor.current_state,
        "iteration": cursor.iteration,
        "captured": copy.deepcopy(cursor.captured),
        "prev_result": copy.deepcopy(cursor.prev_result),
        "last_result": copy.deepcopy(cursor.last_result),
        "counters": {
            "handoff_count": cursor.handoff_count,
            "visits": guards.visits.to_dict(),
            "stall_streaks": guards.stall.to_dict(),
            "errors": guards.errors.to_list(),
            "head": head,
        },
        "context": copy.deepcopy(context),
        "timeout": timeout,
        "elapsed_ms": elapsed_ms,
        "started_at": cursor.started_at,
        "spending": cursor.spending.to_dict() if cursor.spending.anything else {},
        "limit_wait": copy.deepcopy(cursor.limit_wait),
        "handoff_context": copy.deepcopy(cursor.handoff_context),
    }


_KEPT_OVER_A_PAUSE = ("states", "wrapped_up")
"""The parts of a paused child's spending that are its own, not rolled up into the parent."""


def keep_paused_place(
    record: dict[str, Any], ended: ChildEnded, *, keep_state_budgets: bool = True
) -> None:
    """A child that paused the run (a handoff, a usage limit, a stop) keeps its place in
    `record`: a handoff's state runs again with its prompt, a usage limit's wait goes on,
    an interruption's place is the last route's. What it spent so far is rolled up into the
    parent's by the caller, so the resumed child's totals count from nothing; what its own
    states with a budget spent (`states`) and the wrap-ups it ran (`wrapped_up`) are kept,
    so a state budget inside the child goes on counting over the pause
    (`keep_state_budgets`: `revisions.BUDGETS_OVER_PAUSES`; without it, nothing is kept)."""
    ending = ended.ending
    if ending.terminated_by == "handoff":
        prompt = ending.continuation_prompt or ""
        handoff = HandoffContext(prompt, ended.handoff_count, ended.result.final_state)
        record["handoff_context"] = handoff.to_dict()
        record["counters"]["handoff_count"] = ended.handoff_count
    record["limit_wait"] = ended.limit_wait
    spent = ended.spending.to_dict() if keep_state_budgets else {}
    record["spending"] = {key: spent[key] for key in _KEPT_OVER_A_PAUSE if key in spent}


def matching_record(
    records: list[dict[str, Any]], index: int, parent_state: str
) -> dict[str, Any] | None:
    """The saved record of the child of `parent_state` at `index`, if the run has one."""
    if index < len(records) and records[index].get("parent_state") == parent_state:
        return records[index]
    return None


def restored_cursor(record: dict[str, Any], now_ms: int) -> RunCursor:
    """The child's cursor as the record left it; its clock counts the time already spent."""
    counters = record.get("counters") or {}
    return RunCursor(
        current_state=str(record["current_state"]),
        iteration=int(record.get("iteration") or 0),
        captured=copy.deepcopy(record.get("captured") or {}),
        prev_result=copy.deepcopy(record.get("prev_result")),
        last_result=copy.deepcopy(record.get("last_result")),
        handoff_context=copy.deepcopy(record.get("handoff_context")),
        handoff_count=int(counters.get("handoff_count") or 0),
        started_at=str(record.get("started_at") or ""),
        start_time_ms=max(now_ms - int(record.get("elapsed_ms") or 0), 1),
        spending=RunSpending.from_dict(record.get("spending")),
        limit_wait=copy.deepcopy(record.get("limit_wait")),
        head=HeadMemory.from_dict(counters.get("head")),
    )


def restore_guards(guards: RunGuards, record: dict[str, Any]) -> None:
    """The child's visit counts, stall streaks and error log go on from the record."""
    counters = record.get("counters") or {}
    guards.visits.restore(counters.get("visits") or {})
    guards.stall.restore(counters.get("stall_streaks") or {})
    guards.errors.restore(counters.get("errors") or [])
