"""Every event a run writes, named once: its name as a constant and its payload as a type.

An event is one JSON object: `event` (its name), `ts` (ISO 8601, UTC) and the payload keys
below, in the order the core emits them (the events file is byte-compatible with the
reference's for the reference's events, so the order of a payload's keys is part of it).
The `TypedDict`s say which keys an event may have; `total=False` marks keys written only
when set. A sub-loop's events carry `depth` (and its loop names) besides (`sub_loop`).

To add an event: one constant here and one line in `_PAYLOADS` (its payload type, or
`EventPayload` while it has none of its own). `EVENT_NAMES` is the vocabulary `ll-loop
history --event` checks names against. No I/O, no imports beyond `typing`: the Temporal
workflow sandbox imports this module.
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

__all__ = [
    "ACTION_COMPLETE",
    "ACTION_ERROR",
    "ACTION_RETRY",
    "ACTION_START",
    "APPEND_TO_MESSAGES_FAILED",
    "APPROVAL_ANSWERED",
    "APPROVAL_NEEDED",
    "APPROVAL_WAITING",
    "BACKOFF",
    "BUDGET_WRAP_UP",
    "CHECKPOINT",
    "CYCLE_DETECTED",
    "EVALUATE",
    "EVENT_NAMES",
    "HANDOFF_CONTINUED",
    "HANDOFF_DETECTED",
    "HANDOFF_SPAWNED",
    "HOST_RETURN",
    "HOST_SWITCH",
    "LIMIT_WAIT",
    "LIMIT_WAIT_END",
    "LOOP_COMPLETE",
    "LOOP_RESUME",
    "LOOP_START",
    "MAX_ITERATIONS_REACHED_SUMMARY",
    "MAX_STEPS_SUMMARY",
    "PARALLEL_BRANCH_END",
    "PARALLEL_BRANCH_START",
    "PARALLEL_END",
    "PARALLEL_START",
    "PARALLEL_WORKTREE_ADDED",
    "PARALLEL_WORKTREE_REMOVED",
    "RATE_LIMIT_BACKOFF",
    "RATE_LIMIT_EXHAUSTED",
    "RATE_LIMIT_STORM",
    "RATE_LIMIT_WAITING",
    "RETRY_EXHAUSTED",
    "ROUTE",
    "SIGNAL_IGNORED",
    "STALL_DETECTED",
    "STATE_BUDGET_EXHAUSTED",
    "STATE_ENTER",
    "SUB_LOOP_WORKTREE_ATTACHED",
    "SUB_LOOP_WORKTREE_DETACHED",
    "SUB_LOOP_WORKTREE_ERROR",
    "THROTTLE_HARD",
    "THROTTLE_STOP",
    "THROTTLE_WARN",
    "ActionCompletePayload",
    "ActionStartPayload",
    "EvaluatePayload",
    "EventPayload",
    "HandoffContinuedPayload",
    "HandoffDetectedPayload",
    "HandoffSpawnedPayload",
    "LimitWaitEndPayload",
    "LoopCompletePayload",
    "LoopResumePayload",
    "LoopStartPayload",
    "RoutePayload",
    "StateEnterPayload",
    "payload_type",
]

# --- the reference's events (fsm-api.md §8.11) -------------------------------------------
LOOP_START: Final = "loop_start"
STATE_ENTER: Final = "state_enter"
ACTION_START: Final = "action_start"
ACTION_COMPLETE: Final = "action_complete"
EVALUATE: Final = "evaluate"
ROUTE: Final = "route"
LOOP_COMPLETE: Final = "loop_complete"
LOOP_RESUME: Final = "loop_resume"
HANDOFF_DETECTED: Final = "handoff_detected"
HANDOFF_SPAWNED: Final = "handoff_spawned"

# --- additions of ours ------------------------------------------------------------------
HANDOFF_CONTINUED: Final = "handoff_continued"  # `on_handoff: continue`
CHECKPOINT: Final = "checkpoint"  # `checkpoint: git`
BACKOFF: Final = "backoff"
LIMIT_WAIT: Final = "limit_wait"  # a usage limit's wait starts (saved first)
LIMIT_WAIT_END: Final = "limit_wait_end"
SIGNAL_IGNORED: Final = "signal_ignored"  # a marker seen on stderr
ACTION_RETRY: Final = "action_retry"  # Temporal ran an action again (`temporal.action_retry`)
SUB_LOOP_WORKTREE_ATTACHED: Final = "sub_loop_worktree_attached"
SUB_LOOP_WORKTREE_DETACHED: Final = "sub_loop_worktree_detached"
SUB_LOOP_WORKTREE_ERROR: Final = "sub_loop_worktree_error"

# --- the HEAD dialect's (ll-head-dialect.md) -----------------------------------------------
ACTION_ERROR: Final = "action_error"
APPEND_TO_MESSAGES_FAILED: Final = "append_to_messages_failed"
THROTTLE_WARN: Final = "throttle_warn"
THROTTLE_STOP: Final = "throttle_stop"
THROTTLE_HARD: Final = "throttle_hard"
RETRY_EXHAUSTED: Final = "retry_exhausted"
STALL_DETECTED: Final = "stall_detected"
CYCLE_DETECTED: Final = "cycle_detected"
MAX_STEPS_SUMMARY: Final = "max_steps_summary"
MAX_ITERATIONS_REACHED_SUMMARY: Final = "max_iterations_reached_summary"
RATE_LIMIT_BACKOFF: Final = "rate_limit_backoff"
RATE_LIMIT_WAITING: Final = "rate_limit_waiting"
RATE_LIMIT_EXHAUSTED: Final = "rate_limit_exhausted"
RATE_LIMIT_STORM: Final = "rate_limit_storm"


# --- payloads ----------------------------------------------------------------------------
#
# `EventPayload` is what every event may hold beyond its own keys: a sub-loop's `depth`.
# Keys that are Python keywords (`from`) use the functional form.


class EventPayload(TypedDict, total=False):
    """Keys any event may carry: a sub-loop's events say how deep the child is."""

    depth: int


class LoopStartPayload(EventPayload):
    loop: str


class StateEnterPayload(EventPayload):
    state: str
    iteration: int


class ActionStartPayload(EventPayload):
    action: str


class ActionCompletePayload(EventPayload, total=False):
    """`exit_code` and `duration_ms` always; the rest when they say something
    (`action_step.completed_keys`; claude's cost, tokens, turns and session besides)."""

    exit_code: int
    duration_ms: int
    error: str
    stderr_tail: str
    log_path: str
    limit: str
    cost_usd: float


class EvaluatePayload(EventPayload, total=False):
    """`type` and `verdict`, then every detail of the evaluation (kept in `last_result`)."""

    type: str
    verdict: str
    reason: str
    error: str


RoutePayload = TypedDict(
    "RoutePayload",
    {"from": str, "to": str, "reason": str, "verdict": str, "depth": int},
    total=False,
)


class LoopCompletePayload(EventPayload, total=False):
    """`final_state`, `iterations`, `terminated_by`; the rest when set (`run_events`)."""

    final_state: str
    iterations: int
    terminated_by: str
    error: str
    error_detail: str
    stop_reason: str
    spending: dict[str, Any]


class LoopResumePayload(EventPayload, total=False):
    """`loop`, `from_state`, `iteration`; after a handoff the prompt it resumes with."""

    loop: str
    from_state: str
    iteration: int
    from_handoff: bool
    continuation_prompt: str


class HandoffDetectedPayload(EventPayload):
    state: str
    iteration: int
    continuation: str | None


class HandoffContinuedPayload(HandoffDetectedPayload):
    count: int


class HandoffSpawnedPayload(EventPayload):
    pid: int
    log: str


class LimitWaitEndPayload(EventPayload):
    state: str
    waited_seconds: int


# --- our additions: approvals (issue 26), budgets that route (issue 26) ------------------
APPROVAL_NEEDED: Final = "approval_needed"  # a question was asked (once per question)
APPROVAL_WAITING: Final = "approval_waiting"  # a resumed run waits again for its question
APPROVAL_ANSWERED: Final = "approval_answered"  # the answer (or timeout) it goes on with
BUDGET_WRAP_UP: Final = "budget_wrap_up"  # a loop budget is reached: `on_budget` runs once
STATE_BUDGET_EXHAUSTED: Final = "state_budget_exhausted"  # a state's budget routes on_budget

# --- our additions: agent hosts (issue 24) ------------------------------------------------
HOST_SWITCH: Final = "host_switch"  # a state moves to the next host of its list
HOST_RETURN: Final = "host_return"  # back on the first host after its reset

# --- our additions: `parallel:` fan-outs (issue 25) --------------------------------------
PARALLEL_START: Final = "parallel_start"
PARALLEL_BRANCH_START: Final = "parallel_branch_start"
PARALLEL_BRANCH_END: Final = "parallel_branch_end"  # an item finished: saved, never rerun
PARALLEL_END: Final = "parallel_end"
PARALLEL_WORKTREE_ADDED: Final = "parallel_worktree_added"
PARALLEL_WORKTREE_REMOVED: Final = "parallel_worktree_removed"

# name -> its payload type. Every event is listed (one line per event).
_PAYLOADS: dict[str, type] = {
    LOOP_START: LoopStartPayload,
    STATE_ENTER: StateEnterPayload,
    ACTION_START: ActionStartPayload,
    ACTION_COMPLETE: ActionCompletePayload,
    EVALUATE: EvaluatePayload,
    ROUTE: RoutePayload,
    LOOP_COMPLETE: LoopCompletePayload,
    LOOP_RESUME: LoopResumePayload,
    HANDOFF_DETECTED: HandoffDetectedPayload,
    HANDOFF_SPAWNED: HandoffSpawnedPayload,
    HANDOFF_CONTINUED: HandoffContinuedPayload,
    CHECKPOINT: EventPayload,
    BACKOFF: EventPayload,
    LIMIT_WAIT: EventPayload,
    LIMIT_WAIT_END: LimitWaitEndPayload,
    SIGNAL_IGNORED: EventPayload,
    ACTION_RETRY: EventPayload,
    SUB_LOOP_WORKTREE_ATTACHED: EventPayload,
    SUB_LOOP_WORKTREE_DETACHED: EventPayload,
    SUB_LOOP_WORKTREE_ERROR: EventPayload,
    ACTION_ERROR: EventPayload,
    APPEND_TO_MESSAGES_FAILED: EventPayload,
    THROTTLE_WARN: EventPayload,
    THROTTLE_STOP: EventPayload,
    THROTTLE_HARD: EventPayload,
    RETRY_EXHAUSTED: EventPayload,
    STALL_DETECTED: EventPayload,
    CYCLE_DETECTED: EventPayload,
    MAX_STEPS_SUMMARY: EventPayload,
    MAX_ITERATIONS_REACHED_SUMMARY: EventPayload,
    RATE_LIMIT_BACKOFF: EventPayload,
    RATE_LIMIT_WAITING: EventPayload,
    RATE_LIMIT_EXHAUSTED: EventPayload,
    RATE_LIMIT_STORM: EventPayload,
    APPROVAL_NEEDED: EventPayload,
    APPROVAL_WAITING: EventPayload,
    APPROVAL_ANSWERED: EventPayload,
    BUDGET_WRAP_UP: EventPayload,
    STATE_BUDGET_EXHAUSTED: EventPayload,
    HOST_SWITCH: EventPayload,
    HOST_RETURN: EventPayload,
    PARALLEL_START: EventPayload,
    PARALLEL_BRANCH_START: EventPayload,
    PARALLEL_BRANCH_END: EventPayload,
    PARALLEL_END: EventPayload,
    PARALLEL_WORKTREE_ADDED: EventPayload,
    PARALLEL_WORKTREE_REMOVED: EventPayload,
}

EVENT_NAMES: frozenset[str] = frozenset(_PAYLOADS)
"""Every event name the product writes."""


def payload_type(name: str) -> type:
    """The payload type of the event `name` (`KeyError` for a name not listed above)."""
    return _PAYLOADS[name]
