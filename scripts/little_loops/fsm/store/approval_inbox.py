"""Answers to a run's `human_approval` question, kept on disk (issue 26 item 2).

`ll-loop approve` / `reject` write the answer to `.loops/.running/<loop>.approval.json`
(atomically: a runner reads the old file or the new one, never half of it), together
with the question it answers (its state and when it was asked). A live runner polls the
file (`FileApprovalInbox`) and takes the answer once; a runner that is gone finds it when
the run is resumed. An answer to an earlier question (the run has moved on) is dropped.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from little_loops.fsm.store.file_writes import write_file_atomically

if TYPE_CHECKING:
    from little_loops.fsm.engine.approval_requests import AwaitApproval
    from little_loops.fsm.model.approval_records import ApprovalAnswer, PendingApproval

__all__ = [
    "APPROVAL_SUFFIX",
    "FileApprovalInbox",
    "answer_path",
    "pending_question",
    "write_answer",
]

APPROVAL_SUFFIX = ".approval.json"


def answer_path(running_dir: Path, loop_name: str) -> Path:
    """Where answers to `loop_name`'s question are kept."""
    return running_dir / f"{loop_name}{APPROVAL_SUFFIX}"


def pending_question(head: dict[str, Any] | None) -> PendingApproval | None:
    """The question a saved run waits on (its state file's `head.approval`, or that of
    the deepest sub-loop under way that asked one), or None."""
    from little_loops.fsm.model.approval_records import PendingApproval  # see `take`

    head = head or {}
    for place in reversed(head.get("sub_loops") or []):
        counters = place.get("counters") if isinstance(place, dict) else None
        inner = (counters or {}).get("head") or {}
        pending = PendingApproval.from_dict(inner.get("approval"))
        if pending is not None:
            return pending
    return PendingApproval.from_dict(head.get("approval"))


def write_answer(path: Path, pending: PendingApproval, answer: ApprovalAnswer) -> None:
    """Keep `answer` to `pending` for the runner (replacing an answer not taken yet)."""
    record = {"state": pending.state, "asked_at": pending.asked_at, **answer.to_dict()}
    write_file_atomically(path, json.dumps(record) + "\n")


class FileApprovalInbox:
    """The answer file of one run, as an `ApprovalInbox` for the local driver."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def take(self, request: AwaitApproval) -> ApprovalAnswer | None:
        record = self._read()
        if record is None:
            return None
        # Imported here: every local run has this inbox, few ever ask a person.
        from little_loops.fsm.model.approval_records import ApprovalAnswer, PendingApproval

        asked = PendingApproval(request.state, request.question, request.asked_at)
        answer = ApprovalAnswer.from_dict(record) if asked.answers(record) else None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # taken, or an answer to another question
        return answer

    def _read(self) -> dict[str, Any] | None:
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        return record if isinstance(record, dict) else None
