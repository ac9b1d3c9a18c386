"""A state's action meeting one of Claude's limits, as steps of the run core.

`limit_of` reads a finished action's result for a limit (`process.claude_limits`): for a
slash command, what claude's stream said; for a shell action (which may run claude
itself), only a failure whose last line is one of claude's messages. The run core then
asks `limit_policy.plan_after_limit` what to do, and these helpers give the events and
the record of a wait that the state file keeps (`RunCursor.limit_wait`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.context import StepContext, iso_time
from little_loops.fsm.engine.cursor_records import LimitWaitRecord
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.process.claude_limits import (
    LimitHit,
    classify_claude_result,
    classify_shell_failure,
)

if TYPE_CHECKING:
    from little_loops.fsm.engine.limit_policy import LimitBackoff, LimitWait

__all__ = [
    "CONTINUE_PROMPT",
    "backoff_keys",
    "limit_of",
    "wait_keys",
    "wait_record",
]

CONTINUE_PROMPT = (
    "Continue where you left off. You were stopped by a usage limit, which has now reset: "
    "finish the task you were given."
)
"""What a state whose claude session was cut by a usage limit is told when it continues
that session (`--resume <id>`) after the reset."""


def limit_of(result: ActionResult, slash: bool, now: float) -> LimitHit | None:
    """The limit `result` met, or None (also for a cancelled or timed-out action)."""
    if result.cancelled or result.timed_out:
        return None
    claude = result.claude
    if not slash or claude is None:
        return classify_shell_failure(result.exit_code, result.output, now)
    if claude.host is not None:  # another agent CLI: its adapter classified the ending
        return result.host_ending.as_limit() if result.host_ending is not None else None
    if result.exit_code == 0 and not claude.is_error:
        return None  # it got through: a warning on the way is not a limit
    rejected = claude.rate_limit
    if rejected is not None and rejected.status != "rejected":
        rejected = None
    return classify_claude_result(
        result_text=claude.result_text,
        output=result.output,
        is_error=claude.is_error,
        api_error_status=claude.api_error_status,
        rejected_resets_at=rejected.resets_at if rejected is not None else None,
        rejected_type=rejected.limit_type if rejected is not None else None,
        now=now,
    )


def wait_record(
    sc: StepContext, plan: LimitWait, session: str | None, host: str | None = None
) -> LimitWaitRecord:
    """What the state file keeps of a usage-limit wait (`RunCursor.limit_wait`); `host`:
    the agent host it waits for (issue 24; None: claude, not written)."""
    hit = plan.hit
    return LimitWaitRecord(
        state=sc.cursor.current_state,
        until=plan.until,
        message=hit.message,
        exact_reset=hit.exact_reset,
        resets_at=hit.resets_at,
        limit_type=hit.limit_type,
        session_id=session,
        host=host,
    )


def wait_keys(record: LimitWaitRecord, now: float) -> dict[str, Any]:
    """The payload of `limit_wait` for the wait `record` as of `now`."""
    keys: dict[str, Any] = {
        "state": record.state,
        "kind": "usage_limit",
        "message": record.message,
        "until": iso_time(record.until),
        "wait_seconds": max(round(record.until - now), 0),
    }
    if record.resets_at is not None:
        keys["resets_at"] = iso_time(record.resets_at)
    if record.limit_type is not None:
        keys["limit_type"] = record.limit_type
    if record.host is not None:
        keys["host"] = record.host
    return keys


def backoff_keys(state: str, plan: LimitBackoff, retries: int) -> dict[str, Any]:
    """The payload of `rate_limit_backoff`."""
    return {
        "state": state,
        "kind": plan.hit.kind,
        "message": plan.hit.message,
        "attempt": plan.attempt,
        "retries": retries,
        "seconds": plan.seconds,
    }
