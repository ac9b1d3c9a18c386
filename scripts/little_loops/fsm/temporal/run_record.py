"""The workflow's run record: the store's one record (`store.run_record`) plus what only
a Temporal run has.

The workflow has no `.loops/.running/<name>.state.json`; its `status` query answers with
the same `LoopState` a local run saves, built by the same record from the same events.
What is Temporal's own: the actions Temporal ran again after a worker or server failure
(`action_retries`: their `action_retry` events; a local run has none, so its state file
has no such key), a resume signal's overrides, and the `Carry` to the next workflow run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.engine.budget_routes import token_budget
from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.events import ACTION_RETRY
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.store import run_record
from little_loops.fsm.store.loop_state import LoopState
from little_loops.fsm.temporal.action_retry import RETRIES_SHOWN
from little_loops.fsm.temporal.payloads import (
    Carry,
    ResumeSignal,
    cursor_to_dict,
    guards_to_dict,
)

__all__ = ["FINAL_STATUS", "RunRecord"]

FINAL_STATUS = run_record.FINAL_STATUSES  # one map for both engines


@dataclass
class RunRecord(run_record.RunRecord):
    """The store's run record with the retries Temporal made (see the module doc)."""

    action_retries: list[dict[str, Any]] = field(default_factory=list)  # the last ones

    def note(self, event: dict[str, Any]) -> None:
        """Take in one event of the core (or an `action_retry` of the workflow)."""
        super().note(event)
        if event.get("event") == ACTION_RETRY:
            self.action_retries = [*self.action_retries, event][-RETRIES_SHOWN:]

    def recall_retries(self, events: list[dict[str, Any]]) -> None:
        """The retries among the events carried from an earlier workflow run."""
        for event in events:
            if event.get("event") == ACTION_RETRY:
                self.action_retries = [*self.action_retries, event][-RETRIES_SHOWN:]

    def state_dict(self, cursor: RunCursor, guards: RunGuards, elapsed_ms: int) -> dict[str, Any]:
        """`state(...)` as the `status` query answers it: with the retries, when any."""
        return self.with_retries(self.state(cursor, guards, elapsed_ms).to_dict())

    def with_retries(self, state: dict[str, Any]) -> dict[str, Any]:
        if self.action_retries:
            state["action_retries"] = list(self.action_retries)
        return state

    def state(
        self, cursor: RunCursor, guards: RunGuards, elapsed_ms: int, *, status: str | None = None
    ) -> LoopState:
        """The store record's state, saying the run's token budget (kept on resume)."""
        self.max_tokens = token_budget(self.fsm)
        return super().state(cursor, guards, elapsed_ms, status=status)

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
