"""A foreground run on a terminal also takes the answer to its `human_approval` question
typed there: `y` approves, `n` rejects, `e` approves with changes (the text is asked
next). An `ApprovalInbox` the run's driver polls beside the answer file."""

from __future__ import annotations

import select
from typing import TextIO

from little_loops.cli.output import write_line
from little_loops.fsm.engine.approval_requests import AwaitApproval
from little_loops.fsm.model.approval_records import ApprovalAnswer

__all__ = ["TerminalApprovals"]

_WORDS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "e": "edit", "edit": "edit"}


class TerminalApprovals:
    """Answers typed on `stream` (a terminal), read without blocking the wait."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._asked: tuple[str, float] | None = None
        self._closed = False

    def take(self, request: AwaitApproval) -> ApprovalAnswer | None:
        if self._closed:
            return None
        if self._asked != (request.state, request.asked_at):
            self._asked = (request.state, request.asked_at)
            write_line("  type y (approve), n (reject) or e (approve with changes), then Enter")
        if not select.select([self.stream], [], [], 0)[0]:
            return None
        line = self.stream.readline()
        if not line:  # end of input: answers come from approve/reject only
            self._closed = True
            return None
        return self._answer(line.strip().lower())

    def _answer(self, word: str) -> ApprovalAnswer | None:
        answer = _WORDS.get(word)
        if answer is None:
            write_line("  type y, n or e")
            return None
        if answer != "edit":
            return ApprovalAnswer(answer)
        write_line("  your changes (one line):")
        return ApprovalAnswer("edit", text=self.stream.readline().rstrip("\n"))
