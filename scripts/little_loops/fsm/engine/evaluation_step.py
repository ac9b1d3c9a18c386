"""Evaluation of one state: its verdict, `${prev.*}` and `${result.*}`, the `evaluate` event.

`evaluate_step` fills in the verdict of a `Step` whose action did not already fail:
`next` states are not evaluated, a decision state with nothing to judge succeeds, a state
without `evaluate` is judged by its exit code (or, for a slash command with the LLM
enabled, by the structured LLM check), and any other state by its evaluator. An evaluator
that raises gives the `error` verdict. It sets the cursor's `prev_result` and
`last_result`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.cursor_records import LastResult
from little_loops.fsm.engine.events import EVALUATE
from little_loops.fsm.engine.head_capture import note_head_evaluation
from little_loops.fsm.engine.head_judging import (
    head_judge,
    head_needs_host_io,
    runs_nothing,
    settle,
)
from little_loops.fsm.engine.step_result import Step, full_output_log, log_key
from little_loops.fsm.evaluators import evaluate, evaluate_exit_code, evaluate_llm_structured
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.judging.host_io import needs_host_io
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.head_loop import HeadStateConfig, is_head
from little_loops.fsm.schema import LLMConfig, StateConfig

__all__ = [
    "Judgement",
    "evaluate_step",
    "judge",
    "judging_needs_host_io",
    "needs_judgement",
    "prev_result_of",
]

# Event keys an evaluator's details may not overwrite in the `evaluate` event.
_RESERVED_EVENT_KEYS = ("event", "ts", "type", "verdict")


def needs_judgement(state: StateConfig, step: Step) -> bool:
    """Whether `evaluate_step` will call an evaluator for `step`."""
    if step.verdict is not None or state.next:
        return False
    return state.evaluate is not None or step.action is not None


def judging_needs_host_io(state: StateConfig, step: Step, llm: LLMConfig) -> bool:
    """Whether judging `step` needs host I/O (see `judging.host_io`)."""
    action = step.action
    truncated = action is not None and full_output_log(action) is not None
    if isinstance(state, HeadStateConfig):
        return head_needs_host_io(state, step.slash, truncated, llm)
    return needs_host_io(state.evaluate, truncated, llm_by_default=step.slash and llm.enabled)


def evaluate_step(
    sc: StepContext,
    state: StateConfig,
    ctx: InterpolationContext,
    step: Step,
    judgement: Judgement | tuple[str, dict[str, Any]] | None = None,
) -> Step:
    """Fill in the verdict (unless the action already failed); update prev and result.

    `judgement`: the verdict and details already judged by the driver (host I/O); None:
    judge here.
    """
    cursor = sc.cursor
    if step.verdict is None and isinstance(state, HeadStateConfig) and not state.next:
        step = runs_nothing(state, step)
    if step.verdict is None:
        if state.next:
            return step  # `next` states are not evaluated
        if state.evaluate is None and step.action is None:
            cursor.prev_result = prev_result_of(step, cursor.current_state)
            # A decision state with nothing to judge (HEAD names it `yes`).
            step.verdict = "yes" if isinstance(state, HeadStateConfig) else "success"
            if is_head(sc.fsm):
                note_head_evaluation(cursor.captured, cursor.prev_result, state, step)
            return step
        if judgement is None:
            judgement = judge(state, ctx, step, sc.fsm.llm)
        step.verdict, step.details = judgement[0], judgement[1]
        if isinstance(state, HeadStateConfig):
            judged = (step.verdict, step.details)
            step.verdict, step.details = settle(state, cursor.current_state, cursor.head, judged)
    if not state.next:
        cursor.prev_result = prev_result_of(step, cursor.current_state)
    cursor.last_result = LastResult(step.verdict, step.details).to_dict()
    if is_head(sc.fsm):  # HEAD §2.5: the capture's verdict, prev.timeout_kind
        prev = None if state.next else cursor.prev_result
        note_head_evaluation(cursor.captured, prev, state, step)
    details = {k: v for k, v in step.details.items() if k not in _RESERVED_EVENT_KEYS}
    kind = state.evaluate.type if state.evaluate else "default"
    sc.emit(EVALUATE, type=kind, verdict=step.verdict, **details)
    return step


def prev_result_of(step: Step, state_name: str) -> dict[str, Any]:
    """What the next state sees as `${prev.*}`."""
    action = step.action
    return {
        "output": action.output if action else "",
        "exit_code": action.exit_code if action else 0,
        "state": state_name,
        **(log_key(action) if action else {}),
    }


class Judgement(NamedTuple):
    """A state's verdict and details, and what judging it cost (an LLM evaluation's
    `{"cost_usd", "tokens"}`; None: nothing)."""

    verdict: str
    details: dict[str, Any]
    spending: dict[str, Any] | None = None


def judge(state: StateConfig, ctx: InterpolationContext, step: Step, llm: LLMConfig) -> Judgement:
    """The verdict and details of `step`; an evaluator that raises gives `error`."""
    action = step.action
    try:
        if isinstance(state, HeadStateConfig):
            log_path = full_output_log(action) if action else None
            result = head_judge(state, ctx, action, step.slash, llm, log_path)
            return Judgement(result.verdict, result.details, result.spending)
        if state.evaluate is None:
            assert action is not None
            return _default_judgement(action, step.slash, llm)
        output, exit_code = (action.output, action.exit_code) if action else ("", 0)
        log_path = full_output_log(action) if action else None
        result = evaluate(state.evaluate, output, exit_code, ctx, llm=llm, log_path=log_path)
    except Exception as exc:  # evaluators report expected failures; this is a backstop
        return Judgement("error", {"error": f"Evaluation failed: {type(exc).__name__}: {exc}"})
    return Judgement(result.verdict, result.details, result.spending)


def _default_judgement(action: ActionResult, slash: bool, llm: LLMConfig) -> Judgement:
    """No `evaluate`: the LLM check for a slash command when enabled, else the exit code."""
    if slash and llm.enabled:
        result = evaluate_llm_structured(
            action.output, model=llm.model, max_tokens=llm.max_tokens, timeout=llm.timeout
        )
    else:
        result = evaluate_exit_code(action.exit_code)
    return Judgement(result.verdict, result.details, result.spending)
