"""The records a run's cursor holds, each with ONE serialisation.

`RunCursor.handoff_context` and `RunCursor.last_result` stay plain JSON objects in the
cursor: they are reference executor attributes (`FSMExecutor.handoff_context`,
`last_result`, fsm-api.md §8.3) that code written for the reference reads and sets as
dicts, and they go as they are into the state file (`LoopState`), the Temporal carry
(`temporal.payloads.cursor_to_dict`) and a sub-loop's saved place (`sub_loop_record`).
What they hold is built and read here only, so those places cannot drift apart: every
writer builds the record and stores `to_dict()`, every reader takes `from_dict(...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HandoffContext", "LastResult", "LimitWaitRecord"]

# Keys of an `evaluate` event that are not details of the evaluation.
_NOT_DETAILS = ("event", "ts", "type", "verdict")


@dataclass(frozen=True)
class HandoffContext:
    """The handoff being continued: its continuation `prompt` (`${handoff.prompt}`), how
    many handoffs the run has made (`count`) and the `state` that runs with the prompt."""

    prompt: str
    count: int
    state: str

    def to_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "count": self.count, "state": self.state}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> HandoffContext | None:
        """The record of a saved `handoff_context` (None: no handoff being continued).
        A file written by hand may leave keys out: they read as empty."""
        if not data:
            return None
        count = data.get("count")
        return cls(
            str(data.get("prompt") or ""),
            count if isinstance(count, int) else 0,
            str(data.get("state") or ""),
        )


@dataclass(frozen=True)
class LimitWaitRecord:
    """A usage-limit wait under way or cut short (`RunCursor.limit_wait`): the `state`
    whose action met the limit, `until` when it resets (epoch seconds), claude's
    `message`, whether `until` is the stream's exact epoch (`exact_reset`), the reset
    and limit type claude gave, the session to continue, and `since`: when the wait
    began (kept, so a run resumed after a stop says how long the limit held it up in all).
    """

    state: str
    until: float
    message: str
    exact_reset: bool = False
    resets_at: float | None = None
    limit_type: str | None = None
    session_id: str | None = None
    since: float | None = None
    host: str | None = None  # the agent host it waits for (issue 24; None: claude)

    def to_dict(self) -> dict[str, Any]:
        """The record as the state file, the carry and a sub-loop's place keep it."""
        out: dict[str, Any] = {
            "state": self.state,
            "until": self.until,
            "message": self.message,
            "exact_reset": self.exact_reset,
        }
        for key in ("resets_at", "limit_type", "session_id", "since", "host"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> LimitWaitRecord | None:
        """The record of a saved wait (None: none). The state file's checks let only a
        numeric `until` through; what a hand-made file leaves out reads as empty."""
        if not data:
            return None
        return cls(
            state=str(data.get("state") or ""),
            until=data["until"],  # as saved (an int stays one in the file)
            message=str(data.get("message") or ""),
            exact_reset=bool(data.get("exact_reset", False)),
            resets_at=data.get("resets_at"),
            limit_type=data.get("limit_type"),
            session_id=data.get("session_id"),
            since=data.get("since"),
            host=data.get("host"),
        )


@dataclass(frozen=True)
class LastResult:
    """The last evaluation (`${result.*}`, `last_result` in the state file): its
    `verdict` and every detail the evaluator gave."""

    verdict: Any
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "details": self.details}

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> LastResult:
        """The evaluation an `evaluate` event reports (its keys but the event's own)."""
        details = {key: value for key, value in event.items() if key not in _NOT_DETAILS}
        return cls(event.get("verdict"), details)
