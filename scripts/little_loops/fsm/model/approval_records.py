"""The records of a person's approval (issue 26 item 2): the question being waited on
(kept in the run's `HeadMemory.approval`, so a stopped or killed run waits for the same
question) and the answer a person gives. Apart from `approval` so that a run with no
approval state does not build them at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ANSWERS", "ApprovalAnswer", "PendingApproval"]

ANSWERS = ("yes", "no", "edit", "timeout")


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
