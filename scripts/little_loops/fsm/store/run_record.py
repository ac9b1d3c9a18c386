"""The one run record: what a run's state file says, kept the same way by both engines.

The run core keeps its place in a `RunCursor` and its counters in `RunGuards`; the rest of
what `<name>.state.json` (and the Temporal `status` query) says is kept here, from the
core's events (`note`): the phase (a state entered, or routed to), the last evaluation,
a handoff's continuation prompt, whether a usage-limit wait is under way. `state(...)`
builds the `LoopState` snapshot from the record, the cursor and the guards; `ended(...)`
records how the run ended (`FINAL_STATUSES`); `resume(...)` decides where a resumed run
goes on from (the cursor, whether its state was cut off) and the `loop_resume` event;
`logs_in_use` names the action logs a run still points at (log pruning spares them).

`store/persistent_executor.py` (local runs) and `temporal/run_record.py` (the workflow)
both use this record, so a local and a Temporal run of the same loop say the same things.
Pure and deterministic, no I/O at import: the Temporal workflow sandbox imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from little_loops.fsm.engine import events
from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.cursor_records import HandoffContext, LastResult
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.spending import RunSpending
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.approval import AWAITING_APPROVAL
from little_loops.fsm.process.output_files import cap_text_bytes, stderr_log_path
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.loop_state import PHASE_ENTERED, PHASE_ROUTED, WAITING, LoopState

__all__ = [
    "FINAL_STATUSES",
    "QUESTION_EVENTS",
    "STATE_OUTPUT_CAP",
    "Resumed",
    "RunRecord",
    "cap_output",
    "capped_captured",
    "capped_result",
    "cursor_of_state",
    "final_status",
    "logs_in_use",
]

# Outputs kept in state files (the tail, behind a marker): a snapshot is rewritten at every
# state, so a chatty action must not make each write cost megabytes.
STATE_OUTPUT_CAP = 16 * 1024

# `terminated_by` -> the status saved (both engines).
FINAL_STATUSES = {
    "terminal": "completed",
    "max_iterations": "interrupted",
    "signal": "interrupted",
    "handoff": "awaiting_continuation",
    "error": "failed",
    "timeout": "failed",
    "signal_stop": "stopped",
    "stalled": "stalled",
    "budget_exhausted": "budget_exhausted",
    "usage_limited": "usage_limited",
    # HEAD loops (engine/head_endings.py): a failure terminal fails the run; the caps are
    # resumable like max_iterations; a cycle or a repeated failure stalls it.
    "failure_terminal": "failed",
    "max_steps": "interrupted",
    "max_iterations_reached": "interrupted",
    "cycle_detected": "stalled",
    "stall_detected": "stalled",
}
# Statuses whose current state finished its action: on resume it runs as a new iteration.
_STATE_FINISHED = ("awaiting_continuation", "stalled")
# A top-level event after which the state is `routed`: the next state is chosen.
_ROUTING = (events.LOOP_START, events.ROUTE, events.HANDOFF_CONTINUED)
# Events of a `human_approval` question being waited on (saved `awaiting_approval`).
QUESTION_EVENTS = (events.APPROVAL_NEEDED, events.APPROVAL_WAITING)


def final_status(terminated_by: str, *, handoff_terminates: bool) -> str:
    """The status a run that ended by `terminated_by` is saved with (`on_handoff:
    terminate` ends a handoff as `handoff_terminated`)."""
    if terminated_by == "handoff" and handoff_terminates:
        return "handoff_terminated"
    return FINAL_STATUSES.get(terminated_by, "failed")


def cap_output(text: str, cap: int = STATE_OUTPUT_CAP, log_path: str | None = None) -> str:
    """`text`, or its last `cap` bytes behind a marker saying how many bytes were cut (and,
    given `log_path`, which file holds the whole output)."""
    return cap_text_bytes(text, cap, log_path)


def capped_result(result: dict[str, Any]) -> dict[str, Any]:
    """A copy of an action result with long `output`/`stderr` cut for the state file."""
    copy = dict(result)
    log_path = copy.get("log_path")
    logs = {"output": log_path, "stderr": None}
    if isinstance(log_path, str):
        logs["stderr"] = str(stderr_log_path(Path(log_path)))
    for key in ("output", "stderr"):
        if isinstance(copy.get(key), str):
            copy[key] = cap_output(copy[key], log_path=logs[key])
    return copy


def capped_captured(captured: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    # A loaded reference state may hold non-object captured values: they are kept as they are.
    return {
        name: capped_result(value) if isinstance(value, dict) else value
        for name, value in captured.items()
    }


def _capped_head(head: dict[str, Any]) -> dict[str, Any]:
    """The HEAD record with the outputs of the sub-loops under way cut like the run's own
    (each child route rewrites the state file)."""
    places = head.get("sub_loops")
    if places:
        head["sub_loops"] = [_capped_place(place) for place in places]
    return head


def _capped_place(place: dict[str, Any]) -> dict[str, Any]:
    capped = dict(place)
    capped["captured"] = capped_captured(place.get("captured") or {})
    prev = place.get("prev_result")
    capped["prev_result"] = capped_result(prev) if isinstance(prev, dict) else prev
    return capped


def evaluation_record(event: dict[str, Any]) -> dict[str, Any]:
    """`last_result` from an `evaluate` event: the verdict and every detail key."""
    return LastResult.from_event(event).to_dict()


def logs_in_use(cursor: RunCursor) -> list[str]:
    """The action logs a capture or `${prev}` still names: pruning spares them."""
    results: list[Any] = [*cursor.captured.values(), cursor.prev_result]
    # A state file written by the reference may hold captures that are not mappings.
    paths = [result.get("log_path") for result in results if isinstance(result, dict)]
    return [path for path in paths if isinstance(path, str)]


def cursor_of_state(state: LoopState, start_time_ms: int) -> RunCursor:
    """The cursor a saved state file describes (`start_time_ms`: the loop clock's start,
    so that the time already spent counts)."""
    return RunCursor(
        current_state=state.current_state,
        iteration=state.iteration,
        captured=dict(state.captured),
        prev_result=state.prev_result,
        last_result=state.last_result,
        handoff_count=state.handoff_count,
        started_at=state.started_at,
        start_time_ms=start_time_ms,
        spending=RunSpending.from_dict(state.spending),
        limit_wait=state.limit_wait,
        head=HeadMemory.from_dict(state.head),
    )


@dataclass(frozen=True)
class Resumed:
    """Where a resumed run goes on from: its `cursor`, whether its state was cut off
    before its action finished (`cut_off`: it runs again under the same iteration
    number, so its visit is not counted twice), and its `loop_resume` event."""

    cursor: RunCursor
    cut_off: bool
    event: dict[str, Any]


@dataclass
class RunRecord:
    """What the state file says beyond the cursor and guards (see the module doc)."""

    fsm: FSMLoop
    host: str | None
    context_overrides: dict[str, str] = field(default_factory=dict)
    status: str = "running"
    phase: str | None = None
    last_result: dict[str, Any] | None = None
    continuation_prompt: str | None = None  # a handoff's, until a route leaves its state
    terminated_by: str | None = None
    error: str | None = None
    resumed_at: str | None = None
    updated_at: str = ""
    budget_override: float | None = None  # `--max-cost`, kept on resume
    notify_override: str | None = None  # `--notify` ("": none), kept on resume
    max_tokens: int | None = None  # the run's token budget as the state file keeps it

    def __post_init__(self) -> None:
        # Whether any state limits its visits: decided once, not at every snapshot (a
        # snapshot is written at every transition; the loop's states do not change).
        self._counts_visits = any(state.max_visits for state in self.fsm.states.values())

    def note(self, event: dict[str, Any]) -> None:
        """Take in one event of the core. A sub-loop's event (`depth`) leaves the phase
        and the last evaluation alone: the parent's state is still under way."""
        kind = event.get("event")
        self.updated_at = str(event.get("ts", self.updated_at))
        if kind == events.HANDOFF_DETECTED:
            self.continuation_prompt = event.get("continuation")
        elif kind == events.LIMIT_WAIT:
            self.status = WAITING
        elif kind == events.LIMIT_WAIT_END:
            self.status = "running"
        elif kind in QUESTION_EVENTS:
            self.status = AWAITING_APPROVAL
        elif kind == events.APPROVAL_ANSWERED:
            self.status = "running"
        elif not event.get("depth"):
            self._note_own(kind, event)

    def _note_own(self, kind: object, event: dict[str, Any]) -> None:
        if kind in _ROUTING:
            self.phase = PHASE_ROUTED
            if kind == events.ROUTE:
                self.continuation_prompt = None  # a handoff's prompt goes with its state
        elif kind == events.STATE_ENTER:
            self.phase = PHASE_ENTERED
        elif kind == events.EVALUATE:
            self.last_result = evaluation_record(event)

    def state(
        self, cursor: RunCursor, guards: RunGuards, elapsed_ms: int, *, status: str | None = None
    ) -> LoopState:
        """The state file of the run as it stands (`status`: instead of the record's)."""
        prev = cursor.prev_result
        return LoopState(
            loop_name=self.fsm.name,
            current_state=cursor.current_state,
            iteration=cursor.iteration,
            captured=capped_captured(cursor.captured),
            prev_result=capped_result(prev) if prev is not None else None,
            last_result=self.last_result,
            started_at=cursor.started_at,
            updated_at=self.updated_at,
            status=self.status if status is None else status,
            continuation_prompt=self.continuation_prompt,
            host=self.host,
            terminated_by=self.terminated_by,
            error=self.error,
            elapsed_ms=elapsed_ms,
            handoff_count=cursor.handoff_count,
            resumed_at=self.resumed_at,
            phase=self.phase,
            # Visits are saved only for loops that limit them: other state files stay short.
            visits=guards.visits.to_dict() if self._counts_visits else {},
            stall_streaks=guards.stall.to_dict(),
            errors=guards.errors.to_list(),
            context_overrides=self.context_overrides,
            spending=cursor.spending.to_dict() if cursor.spending.anything else {},
            limit_wait=cursor.limit_wait,
            max_cost_usd=self.budget_override,
            notify=self.notify_override,
            head=_capped_head(cursor.head.to_dict()),
            max_tokens=self.max_tokens,
        )

    def ended(self, result: ExecutionResult, *, handoff_terminates: bool) -> None:
        """The run ended (or paused) with `result`."""
        by = result.terminated_by
        self.status = final_status(by, handoff_terminates=handoff_terminates)
        self.terminated_by, self.error = by, result.read_error

    def final_state(
        self, result: ExecutionResult, cursor: RunCursor, guards: RunGuards
    ) -> LoopState:
        """The state file of the run that ended with `result` (after `ended`)."""
        state = self.state(cursor, guards, result.duration_ms)
        state.current_state, state.iteration = result.final_state, result.iterations
        return state

    def resume(
        self, cursor: RunCursor, *, now_ms: int, elapsed_ms: int, now: str, prompt: str | None
    ) -> Resumed:
        """Go on from the run saved as `cursor` and this record: where it goes on from and
        the `loop_resume` event (stamped `now`). `prompt` replaces a handoff's prompt. The
        record is running again from here."""
        status = self.status
        cut_off = self.phase == PHASE_ENTERED and status not in _STATE_FINISHED
        continued = status in ("running", "interrupted") and self.continuation_prompt is not None
        handoff = status == "awaiting_continuation" or continued
        self.continuation_prompt = (prompt or self.continuation_prompt) if handoff else None
        event = self._resume_event(cursor, now, from_handoff=status == "awaiting_continuation")
        resumed = cursor.copy()
        resumed.iteration = max(cursor.iteration - 1, 0) if cut_off else cursor.iteration
        resumed.handoff_context = self._handoff_context(cursor) if handoff else None
        resumed.handoff_delivered, resumed.pending_handoff = False, None
        resumed.redirected = set()
        resumed.start_time_ms = now_ms - elapsed_ms  # the loop clock goes on
        self.status, self.terminated_by, self.error, self.resumed_at = "running", None, None, now
        return Resumed(resumed, cut_off, event)

    def _handoff_context(self, cursor: RunCursor) -> dict[str, Any]:
        prompt = self.continuation_prompt or ""
        return HandoffContext(prompt, cursor.handoff_count, cursor.current_state).to_dict()

    def _resume_event(self, cursor: RunCursor, now: str, *, from_handoff: bool) -> dict[str, Any]:
        event: dict[str, Any] = {
            "event": events.LOOP_RESUME,
            "ts": now,
            "loop": self.fsm.name,
            "from_state": cursor.current_state,
            "iteration": cursor.iteration,
        }
        if from_handoff and self.continuation_prompt:
            event["from_handoff"] = True
            event["continuation_prompt"] = self.continuation_prompt
        return event
