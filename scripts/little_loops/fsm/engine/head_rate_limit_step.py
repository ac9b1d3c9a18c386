"""HEAD's rate-limit ladder as steps of the run core (spec/ll-head-dialect.md §7.6, §9i).

The decisions are `head_rate_limits`; here they become requests and events: a wait in
place is several `Sleep`s of at most a minute, each announced by `rate_limit_waiting`
(so a watcher sees the wait move and a stopped run loses at most a minute of what it
counted), and an exhausted budget becomes `rate_limit_exhausted`, maybe
`rate_limit_storm`, and a route to `on_rate_limit_exhausted`, else `on_error`, else the
end of the run as `usage_limited` (resumable; HEAD would end "No valid transition").
Waits in place happen inside one pass of the state, so `max_retries` (§7.1) and the
throttle (§7.5) never see them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.context import StepContext, iso_time
from little_loops.fsm.engine.events import (
    RATE_LIMIT_EXHAUSTED,
    RATE_LIMIT_STORM,
    RATE_LIMIT_WAITING,
)
from little_loops.fsm.engine.head_rate_limits import (
    STORM_COUNT,
    HeadExhausted,
    HeadLimits,
    HeadWait,
    exhausted_keys,
    note_exhausted,
)
from little_loops.fsm.engine.head_routing import HeadRoute
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.engine.wait_requests import Sleep

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["RATE_LIMIT_EXHAUSTED", "WAIT_CHUNK_SECONDS", "leave_rate_limited", "wait_in_place"]

WAIT_CHUNK_SECONDS = 60.0
"""The longest single `Sleep` of a wait: `rate_limit_waiting` comes about once a minute."""

# `RATE_LIMIT_EXHAUSTED` (events) is also the `reason` of the route an exhausted rate-limit
# budget takes.

_USAGE_LIMITED = "usage_limited"  # = core.USAGE_LIMITED (core imports this module)


def wait_in_place(
    sc: StepContext,
    limits: HeadLimits,
    entry: dict[str, Any],
    wait: HeadWait,
    *,
    now: Callable[[], float],
    stopped: Callable[[], bool],
    until: float | None = None,
) -> Generator[Request, Any, bool]:
    """Wait `wait.seconds` (up to `until` when given: a resumed wait keeps its end),
    counting into the state's `total_wait_seconds` as it goes; False when a shutdown cut
    it short (`until` stays in `entry` for the resumed run)."""
    name = sc.cursor.current_state
    until = now() + wait.seconds if until is None else until
    entry["until"], entry["tier"] = until, wait.tier
    before = float(entry.get("total_wait_seconds", 0))
    done = 0.0
    while done < wait.seconds:
        sc.emit(
            RATE_LIMIT_WAITING,
            state=name,
            elapsed_seconds=round(done),
            next_attempt_at=iso_time(until),
            total_waited_seconds=round(before + done),
            budget_seconds=round(limits.budget),
            tier=wait.tier,
        )
        chunk = min(WAIT_CHUNK_SECONDS, wait.seconds - done)
        yield Sleep(chunk)
        done += chunk
        entry["total_wait_seconds"] = before + done
        if stopped():
            return False
    for key in ("until", "tier", "session_id"):
        entry.pop(key, None)
    return True


def leave_rate_limited(
    sc: StepContext, limits: HeadLimits, entry: dict[str, Any], exhausted: HeadExhausted
) -> Ending | HeadRoute:
    """The budget is spent: events, then the route out (or the `usage_limited` end)."""
    name = sc.cursor.current_state
    state = sc.fsm.states[name]
    target = limits.on_exhausted or state.on_error
    sc.emit(RATE_LIMIT_EXHAUSTED, **exhausted_keys(name, entry, target))
    count = note_exhausted(entry)
    if count >= STORM_COUNT:
        sc.emit(RATE_LIMIT_STORM, state=name, count=count)
    sc.cursor.head.session_summary = None  # §7.8: an exhaustion clears the summary
    if target is None:
        return Ending(_USAGE_LIMITED, exhausted.message)
    return HeadRoute(target, RATE_LIMIT_EXHAUSTED)
