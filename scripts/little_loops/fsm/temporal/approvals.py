"""A `human_approval` question on Temporal (issue 26 item 2): a signal and a durable timer.

The workflow serves the core's `AwaitApproval` by waiting for the `approval` signal that
answers that question (its state and when it was asked), with the question's deadline as
a durable timer (days are fine: the worker may come and go meanwhile). `ll-loop approve`
/ `reject --engine temporal` send the signal. Behind `workflow.patched(APPROVALS)`: a
history recorded before approvals existed never reached this code and replays as it ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.engine.approval_requests import AwaitApproval
    from little_loops.fsm.model.approval_records import ApprovalAnswer, PendingApproval

__all__ = ["APPROVALS", "APPROVAL_SIGNAL", "ApprovalSignal", "ApprovalWaits"]

APPROVALS = "ll-loop:2026-11:human-approval"
"""`workflow.patched` name: a `human_approval` state waits for the `approval` signal."""

APPROVAL_SIGNAL = "approval"


@dataclass(frozen=True)
class ApprovalSignal:
    """An answer to the question of `state` asked at `asked_at` (`answer`: yes, no, edit)."""

    state: str
    asked_at: float
    answer: str
    text: str | None = None
    reason: str | None = None

    @classmethod
    def of(cls, pending: PendingApproval, answer: ApprovalAnswer) -> ApprovalSignal:
        return cls(pending.state, pending.asked_at, answer.answer, answer.text, answer.reason)

    def to_answer(self) -> ApprovalAnswer | None:
        return ApprovalAnswer.from_dict(
            {"answer": self.answer, "text": self.text, "reason": self.reason}
        )


class ApprovalWaits:
    """The answers a workflow received, and its wait for the one a question needs."""

    def __init__(self) -> None:
        self._answers: list[ApprovalSignal] = []

    def receive(self, signal: ApprovalSignal) -> None:
        self._answers.append(signal)

    async def wait(
        self, request: AwaitApproval, stopped: Callable[[], bool]
    ) -> ApprovalAnswer | None:
        """The answer to `request`, `timeout` when its deadline passed first (a durable
        timer), or None when the run was stopped (cancelled) meanwhile."""
        timeout = None
        if request.until is not None:
            left = max(request.until - workflow.now().timestamp(), 0.0)
            timeout = timedelta(seconds=left)
        try:
            await workflow.wait_condition(
                lambda: self._answer_to(request) is not None or stopped(), timeout=timeout
            )
        except TimeoutError:
            return ApprovalAnswer("timeout")
        except asyncio.CancelledError:
            return None
        signal = self._answer_to(request)
        if signal is None:
            return None
        self._answers = []  # taken; answers to other questions are stale
        return signal.to_answer()

    def _answer_to(self, request: AwaitApproval) -> ApprovalSignal | None:
        for signal in self._answers:
            if signal.state == request.state and signal.asked_at == request.asked_at:
                return signal
        return None
