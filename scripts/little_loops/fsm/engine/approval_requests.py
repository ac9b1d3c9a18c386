"""The request of a `human_approval` state (issue 26): wait for a person's answer.

Apart from `run_requests` so that a run without approval states does not build it at start-up;
`requests` exports it too."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AwaitApproval"]


@dataclass(frozen=True)
class AwaitApproval:
    """Wait for a person's answer to `question`, asked by the `human_approval` state
    `state` at `asked_at` (epoch seconds), until the wall-clock time `until` (None: for
    ever); submit the `ApprovalAnswer` (`timeout` when `until` passed first), or None when
    a shutdown cut the wait short (the question stays asked: a resume waits again)."""

    state: str
    question: str
    asked_at: float
    until: float | None = None
