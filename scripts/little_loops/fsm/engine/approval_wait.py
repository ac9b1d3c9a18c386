"""How the local driver serves `AwaitApproval`: look for an answer in its inboxes (the
answer file `ll-loop approve`/`reject` writes, the terminal of a foreground run) every
`APPROVAL_POLL_SECONDS`, until one comes, the question times out, or a shutdown."""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Callable, Sequence
from typing import Protocol

from little_loops.fsm.engine.approval_requests import AwaitApproval
from little_loops.fsm.engine.context import Clock
from little_loops.fsm.model.approval_records import ApprovalAnswer

__all__ = ["APPROVAL_POLL_SECONDS", "ApprovalInbox", "wait_for_answer"]

APPROVAL_POLL_SECONDS = 0.2


class ApprovalInbox(Protocol):
    """Where answers to a run's question may come from."""

    def take(self, request: AwaitApproval) -> ApprovalAnswer | None:
        """The answer to `request`'s question, once (None: none yet)."""
        ...


def wait_for_answer(
    request: AwaitApproval,
    inboxes: Sequence[ApprovalInbox],
    clock: Clock,
    wake: queue.SimpleQueue[bool],
    stopped: Callable[[], bool],
) -> ApprovalAnswer | None:
    """The answer, `timeout` once `request.until` passed (wall clock: a machine that slept
    meanwhile times out as soon as it wakes), or None when `stopped()` (woken by `wake`)."""
    while not stopped():
        for inbox in inboxes:
            answer = inbox.take(request)
            if answer is not None:
                return answer
        wait = APPROVAL_POLL_SECONDS
        if request.until is not None:
            remaining = request.until - clock.wall()
            if remaining <= 0:
                return ApprovalAnswer("timeout")
            wait = min(wait, remaining)
        with contextlib.suppress(queue.Empty):
            wake.get(timeout=wait)
    return None
