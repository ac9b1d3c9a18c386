"""A `human_approval` state (issue 26 item 2): ask a person, wait, route by the answer.

The question is the state's `action`, interpolated. The first time the state asks, the
question is kept in the run's memory (`HeadMemory.approval`, saved with the run) and
`approval_needed` is emitted; a run that stopped or died while waiting and is resumed
finds the question there, emits `approval_waiting` instead (so nobody is asked twice)
and waits until the same deadline: the timeout counts from when it was first asked.
Waiting is the driver's `AwaitApproval` request; nothing here does I/O.

Routes: `yes` (`on_yes`), `no` (`on_no`), `edit` (`on_edit`; the text is in
`${captured.<state>.edit}`; without `on_edit` an edit approves), `timeout`
(`on_timeout`; without it a timeout routes `on_no`). A legacy file's routes are the
state's route table (`yes`/`no`/`edit`/`timeout`, folded in by the loader); a HEAD
file's its `on_yes`/`on_no` and `on_verdicts`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.approval_requests import AwaitApproval
from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.events import APPROVAL_ANSWERED, APPROVAL_NEEDED, APPROVAL_WAITING
from little_loops.fsm.engine.routing_step import route_after_step
from little_loops.fsm.engine.step_result import Ending, Step
from little_loops.fsm.interpolation import InterpolationContext, InterpolationError, interpolate
from little_loops.fsm.model.approval_records import ApprovalAnswer, PendingApproval
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import StateConfig

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["APPROVAL_ANSWERED", "APPROVAL_NEEDED", "APPROVAL_WAITING", "ask_approval"]


def ask_approval(
    sc: StepContext, state: StateConfig, ctx: InterpolationContext, now: Callable[[], float]
) -> Generator[Request, Any, Ending | None]:
    """Ask (or keep waiting for) the question of `state`, then route by the answer; the
    `Ending` when the run ends here (a stop during the wait: `signal`, resumable)."""
    pending = _pending_question(sc, state, ctx, now)
    if isinstance(pending, Ending):
        return pending
    answer = yield AwaitApproval(pending.state, pending.question, pending.asked_at, pending.until)
    if answer is None:
        return Ending("signal")  # the question stays asked; resume waits for it again
    assert isinstance(answer, ApprovalAnswer)
    sc.cursor.head.approval = None
    step = _answered_step(sc, state, pending, answer)
    return route_after_step(sc, state, ctx, step)


def _pending_question(
    sc: StepContext, state: StateConfig, ctx: InterpolationContext, now: Callable[[], float]
) -> PendingApproval | Ending:
    """The question already asked by this state (a resumed wait), or a new one."""
    name = sc.cursor.current_state
    kept = PendingApproval.from_dict(sc.cursor.head.approval)
    if kept is not None and kept.state == name:
        sc.emit(APPROVAL_WAITING, **_question_keys(kept))
        return kept
    try:
        question = interpolate(state.action or "", ctx)
    except InterpolationError as exc:
        return Ending("error", f"Cannot interpolate the question of state '{name}': {exc}")
    asked = now()
    until = asked + state.timeout if state.timeout else None
    pending = PendingApproval(name, question, asked, until)
    sc.cursor.head.approval = pending.to_dict()
    sc.emit(APPROVAL_NEEDED, **_question_keys(pending))
    return pending


def _question_keys(pending: PendingApproval) -> dict[str, Any]:
    keys: dict[str, Any] = {"state": pending.state, "question": pending.question}
    if pending.until is not None:
        keys["timeout_at"] = pending.until
    return keys


def _answered_step(
    sc: StepContext, state: StateConfig, pending: PendingApproval, answer: ApprovalAnswer
) -> Step:
    """The step the answer makes: its verdict, the capture `${captured.<state>.*}`, the
    `approval_answered` event and `${result.*}`."""
    verdict = approval_verdict(state, answer.answer)
    details: dict[str, Any] = {"answer": answer.answer, "question": pending.question}
    if answer.text is not None:
        details["edit"] = answer.text
    if answer.reason is not None:
        details["reason"] = answer.reason
    sc.cursor.captured[pending.state] = {
        "output": answer.text if answer.text is not None else answer.answer,
        "stderr": "",
        "exit_code": 0,
        "answer": answer.answer,
        "edit": answer.text or "",
        "reason": answer.reason or "",
        "question": pending.question,
    }
    sc.cursor.last_result = {"verdict": verdict, "details": details}
    sc.emit(APPROVAL_ANSWERED, state=pending.state, verdict=verdict, **details)
    return Step(verdict=verdict, details=details)


def approval_verdict(state: StateConfig, answer: str) -> str:
    """The verdict `answer` routes by: `edit` without its own route approves, `timeout`
    without its own route rejects."""
    if answer == "edit" and not _has_route(state, "edit"):
        return "yes"
    if answer == "timeout" and not _has_route(state, "timeout"):
        return "no"
    return answer


def _has_route(state: StateConfig, verdict: str) -> bool:
    if state.route is not None and verdict in state.route.routes:
        return True
    return isinstance(state, HeadStateConfig) and verdict in state.on_verdicts
