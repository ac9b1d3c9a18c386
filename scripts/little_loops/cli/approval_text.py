"""What `status` and the progress display say about a `human_approval` question."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from little_loops.cli.spending_text import reset_phrase
from little_loops.fsm.store.approval_inbox import pending_question
from little_loops.fsm.store.loop_state import LoopState

if TYPE_CHECKING:
    from little_loops.fsm.model.approval_records import PendingApproval

__all__ = ["answer_hint", "approval_json", "approval_lines", "timeout_phrase"]


def approval_lines(state: LoopState, loop_arg: str) -> list[str]:
    """`Awaiting approval: <question>` and how to answer, while a question waits."""
    pending = pending_question(state.head)
    if pending is None:
        return []
    lines = [f"Awaiting approval: {one_line(pending.question)}"]
    if pending.until is not None:
        lines.append(f"Approval timeout: {timeout_phrase(pending)}")
    return [*lines, f"Answer: {answer_hint(loop_arg)}"]


def one_line(text: str) -> str:
    return " ".join(text.split())


def answer_hint(loop_arg: str) -> str:
    return f"ll-loop approve {loop_arg} [--edit TEXT]  |  ll-loop reject {loop_arg} [--reason TEXT]"


def timeout_phrase(pending: PendingApproval, now: float | None = None) -> str:
    """When the question times out (`in 3h12m (at 11:21pm)`)."""
    assert pending.until is not None
    return reset_phrase(pending.until, time.time() if now is None else now)


def approval_json(state: LoopState) -> dict[str, Any]:
    """`status --json`'s `approval` key, while a question waits."""
    pending = pending_question(state.head)
    return {} if pending is None else {"approval": pending.to_dict()}
