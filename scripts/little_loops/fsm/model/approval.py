"""A person's approval as a state (`action_type: human_approval`, issue 26 item 2).

The words both dialects share: the action type, the answers a person gives, the verdicts
an approval state routes by, and the record of a question being waited on (kept in the
run's `HeadMemory.approval`, so a stopped or killed run waits for the same question).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "APPROVAL_ROUTE_KEYS",
    "AWAITING_APPROVAL",
    "HUMAN_APPROVAL",
    "ApprovalAnswer",
    "PendingApproval",
    "asks_a_person",
    "is_approval",
]

HUMAN_APPROVAL = "human_approval"
"""The `action_type` of a state that asks a person and waits for the answer."""

AWAITING_APPROVAL = "awaiting_approval"
"""The status of a run waiting for a person's answer (its process is alive)."""

# The routes of an approval state, by the verdict each answer gives.
APPROVAL_ROUTE_KEYS = {"on_yes": "yes", "on_no": "no", "on_edit": "edit", "on_timeout": "timeout"}

ANSWERS = ("yes", "no", "edit", "timeout")


def is_approval(state: Any) -> bool:
    """Whether a built state asks a person (`action_type: human_approval`)."""
    return getattr(state, "action_type", None) == HUMAN_APPROVAL


def asks_a_person(loop: Any) -> bool:
    """Whether a built loop has a `human_approval` state."""
    return any(is_approval(state) for state in loop.states.values())


@dataclass(frozen=True)
class ApprovalAnswer:
    """A person's answer: `yes`, `no`, `edit` (approve with changes: `text`), or
    `timeout` (nobody answered in time). `reason`: why a `no` was given."""

    answer: str
    text: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"answer": self.answer}
        if self.text is not None:
            out["text"] = self.text
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ApprovalAnswer | None:
        """An answer read back (None: not one)."""
        answer = data.get("answer")
        if answer not in ANSWERS:
            return None
        text, reason = data.get("text"), data.get("reason")
        return cls(
            str(answer),
            text if isinstance(text, str) else None,
            reason if isinstance(reason, str) else None,
        )


@dataclass(frozen=True)
class PendingApproval:
    """The question a run waits on: its state, the question as asked, when it was first
    asked (epoch seconds) and when it times out (None: never)."""

    state: str
    question: str
    asked_at: float
    until: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "state": self.state,
            "question": self.question,
            "asked_at": self.asked_at,
        }
        if self.until is not None:
            out["until"] = self.until
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> PendingApproval | None:
        if not isinstance(data, dict) or not isinstance(data.get("state"), str):
            return None
        until = data.get("until")
        return cls(
            state=data["state"],
            question=str(data.get("question", "")),
            asked_at=float(data.get("asked_at", 0.0)),
            until=float(until) if isinstance(until, int | float) else None,
        )

    def answers(self, answer_record: dict[str, Any]) -> bool:
        """Whether a saved answer was given to this question (not to an earlier one)."""
        return (
            answer_record.get("state") == self.state
            and answer_record.get("asked_at") == self.asked_at
        )
