"""`ll-loop approve` / `ll-loop reject` (local engine): answer the question a run's
`human_approval` state waits on, from any terminal (issue 26 item 2).

The answer is kept in the run's answer file (`store.approval_inbox`): a live runner takes
it within a moment; a run that was stopped or killed while waiting takes it when it is
resumed. Nothing waiting for an answer is exit 1 with one line.
"""

from __future__ import annotations

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.liveness import Owner, owner_of
from little_loops.cli.output import Logger
from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
from little_loops.fsm.model.approval_records import ApprovalAnswer, PendingApproval
from little_loops.fsm.persistence import StatePersistence
from little_loops.fsm.store.approval_inbox import answer_path, pending_question, write_answer
from little_loops.fsm.store.run_history import LIVE_STATUSES

__all__ = ["answer_command", "answered_line", "nothing_waits"]


def answer_command(loop_arg: str, answer: ApprovalAnswer) -> int:
    """Keep `answer` for the run of `loop_arg` that waits for one."""
    name = loop_name_for(loop_arg)
    persistence = StatePersistence(name, LOOPS_DIR)
    state = persistence.load_state_checked()
    pending = pending_question(state.head) if state is not None else None
    if state is None or pending is None:
        Logger().error(nothing_waits(name))
        return FAILED
    write_answer(answer_path(persistence.running_dir, name), pending, answer)
    live = state.status in LIVE_STATUSES and owner_of(state) is Owner.ALIVE
    later = "" if live else f" (kept for: ll-loop resume {loop_arg})"
    Logger().success(answered_line(answer, pending) + later)
    return OK


def nothing_waits(name: str) -> str:
    return f"Nothing waits for approval in loop '{name}'"


def answered_line(answer: ApprovalAnswer, pending: PendingApproval) -> str:
    """`Approved: Ship it?` / `Rejected (too risky): Ship it?` / `Approved with changes`."""
    question = " ".join(pending.question.split())
    if answer.answer == "no":
        why = f" ({answer.reason})" if answer.reason else ""
        return f"Rejected{why}: {question}"
    word = "Approved with changes" if answer.answer == "edit" else "Approved"
    return f"{word}: {question}"
