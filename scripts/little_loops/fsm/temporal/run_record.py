"""A run's state-file fields, kept by the workflow from the run core's events.

The workflow has no `.loops/.running/<name>.state.json`; its `status` query answers with
the same record (`LoopState`), built here from the core's cursor and guards and from what
the events said (the phase, the last evaluation, a handoff's prompt), as
`PersistentExecutor` builds its snapshots, plus the actions Temporal ran again after a
worker or server failure (`action_retries`: their `action_retry` events; a local run has
none, so its state file has no such key). `resumed_cursor` is where a resumed run goes
on from, as `PersistentExecutor._restore` decides it for a local resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.engine.budget_routes import token_budget
from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.model.approval import AWAITING_APPROVAL
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.persistent_executor import (
    FINAL_STATUSES,
    capped_captured,
    capped_result,
)
from little_loops.fsm.store.run_history import WAITING
from little_loops.fsm.store.state_files import PHASE_ENTERED, PHASE_ROUTED, LoopState
from little_loops.fsm.temporal.action_retry import ACTION_RETRY_EVENT, RETRIES_SHOWN
from little_loops.fsm.temporal.payloads import (
    Carry,
    ResumeSignal,
    cursor_to_dict,
    guards_to_dict,
)

__all__ = ["FINAL_STATUS", "RunRecord", "resumed_cursor"]

FINAL_STATUS = FINAL_STATUSES  # one map for both engines (`persistent_executor`)
# Statuses whose current state finished its action: on resume it runs as a new iteration.
_STATE_FINISHED = ("awaiting_continuation", "stalled")
_NOT_DETAILS = ("event", "ts", "type", "verdict")


@dataclass
class RunRecord:
    """What the state file says beyond the cursor and guards (see the module doc)."""

    fsm: FSMLoop
    host: str
    context_overrides: dict[str, str] = field(default_factory=dict)
    status: str = "running"
    phase: str | None = None
    last_result: dict[str, Any] | None = None
    continuation_prompt: str | None = None
    terminated_by: str | None = None
    error: str | None = None
    resumed_at: str | None = None
    updated_at: str = ""
    budget_override: float | None = None  # `--max-cost`, kept on resume
    notify_override: str | None = None  # `--notify`, kept on resume
    action_retries: list[dict[str, Any]] = field(default_factory=list)  # the last ones

    def note(self, event: dict[str, Any]) -> None:
        """Take in one event of the core (as `PersistentExecutor._record_event` does)."""
        kind = event.get("event")
        self.updated_at = str(event.get("ts", self.updated_at))
        if kind in ("loop_start", "route", "handoff_continued"):
            self.phase = PHASE_ROUTED
            if kind == "route":
                self.continuation_prompt = None  # a handoff's prompt goes with its state
        elif kind == "state_enter":
            self.phase = PHASE_ENTERED
        elif kind == "evaluate":
            details = {k: v for k, v in event.items() if k not in _NOT_DETAILS}
            self.last_result = {"verdict": event.get("verdict"), "details": details}
        elif kind == "handoff_detected":
            self.continuation_prompt = event.get("continuation")
        elif kind == "limit_wait":
            self.status = WAITING
        elif kind == "limit_wait_end":
            self.status = "running"
        elif kind in ("approval_needed", "approval_waiting"):
            self.status = AWAITING_APPROVAL
        elif kind == "approval_answered":
            self.status = "running"
        elif kind == ACTION_RETRY_EVENT:
            self.action_retries = [*self.action_retries, event][-RETRIES_SHOWN:]

    def recall_retries(self, events: list[dict[str, Any]]) -> None:
        """The retries among the events carried from an earlier workflow run."""
        for event in events:
            if event.get("event") == ACTION_RETRY_EVENT:
                self.action_retries = [*self.action_retries, event][-RETRIES_SHOWN:]

    def state_dict(self, cursor: RunCursor, guards: RunGuards, elapsed_ms: int) -> dict[str, Any]:
        """`state(...)` as the `status` query answers it: with the retries, when any."""
        return self.with_retries(self.state(cursor, guards, elapsed_ms).to_dict())

    def with_retries(self, state: dict[str, Any]) -> dict[str, Any]:
        if self.action_retries:
            state["action_retries"] = list(self.action_retries)
        return state

    def state(self, cursor: RunCursor, guards: RunGuards, elapsed_ms: int) -> LoopState:
        """The state file of the run as it stands."""
        prev = cursor.prev_result
        counts_visits = any(state.max_visits for state in self.fsm.states.values())
        return LoopState(
            loop_name=self.fsm.name,
            current_state=cursor.current_state,
            iteration=cursor.iteration,
            captured=capped_captured(cursor.captured),
            prev_result=capped_result(prev) if prev is not None else None,
            last_result=self.last_result,
            started_at=cursor.started_at,
            updated_at=self.updated_at,
            status=self.status,
            continuation_prompt=self.continuation_prompt,
            host=self.host,
            terminated_by=self.terminated_by,
            error=self.error,
            elapsed_ms=elapsed_ms,
            handoff_count=cursor.handoff_count,
            resumed_at=self.resumed_at,
            phase=self.phase,
            visits=guards.visits.to_dict() if counts_visits else {},
            stall_streaks=guards.stall.to_dict(),
            errors=guards.errors.to_list(),
            context_overrides=self.context_overrides,
            spending=cursor.spending.to_dict() if cursor.spending.anything else {},
            limit_wait=cursor.limit_wait,
            max_cost_usd=self.budget_override,
            notify=self.notify_override,
            head=cursor.head.to_dict(),
            max_tokens=token_budget(self.fsm),  # the run's, kept on resume
        )

    def take_resume(self, signal: ResumeSignal) -> None:
        """A resume's `--max-cost` and `--notify` hold from now on (and on resume)."""
        fsm = self.fsm
        if signal.max_continuations is not None:
            fsm.max_continuations = signal.max_continuations
        if signal.max_cost_usd is not None:
            self.budget_override = fsm.max_cost_usd = signal.max_cost_usd
        if signal.notify is not None:
            self.notify_override = signal.notify
            fsm.notify = signal.notify or None

    def carry(self, cursor: RunCursor, guards: RunGuards, event_offset: int) -> Carry:
        return Carry(
            cursor=cursor_to_dict(cursor),
            guards=guards_to_dict(guards),
            status=self.status,
            phase=self.phase,
            continuation_prompt=self.continuation_prompt,
            terminated_by=self.terminated_by,
            error=self.error,
            resumed_at=self.resumed_at,
            event_offset=event_offset,
        )

    def take_carry(self, carry: Carry) -> None:
        self.status, self.phase = carry.status, carry.phase
        self.continuation_prompt = carry.continuation_prompt
        self.terminated_by, self.error = carry.terminated_by, carry.error
        self.resumed_at = carry.resumed_at
        self.last_result = carry.cursor.get("last_result")


def resumed_cursor(
    cursor: RunCursor, record: RunRecord, now_ms: int, elapsed_ms: int, prompt: str | None
) -> tuple[RunCursor, bool]:
    """Where a resumed run goes on from, and whether its state was cut off (it then runs
    again under the same iteration number). `prompt` replaces a handoff's prompt."""
    status = record.status
    cut_off = record.phase == PHASE_ENTERED and status not in _STATE_FINISHED
    continued = status in ("running", "interrupted") and record.continuation_prompt is not None
    handoff: dict[str, Any] | None = None
    if status == "awaiting_continuation" or continued:
        handoff = {
            "prompt": prompt or record.continuation_prompt or "",
            "count": cursor.handoff_count,
            "state": cursor.current_state,
        }
    resumed = RunCursor(
        current_state=cursor.current_state,
        iteration=max(cursor.iteration - 1, 0) if cut_off else cursor.iteration,
        captured=dict(cursor.captured),
        prev_result=cursor.prev_result,
        last_result=cursor.last_result,
        handoff_context=handoff,
        handoff_count=cursor.handoff_count,
        started_at=cursor.started_at,
        start_time_ms=now_ms - elapsed_ms,
        spending=cursor.spending.copy(),
        limit_wait=cursor.limit_wait,
        head=cursor.head.copy(),
    )
    return resumed, cut_off
