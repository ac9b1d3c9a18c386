"""The lines that end a run: what happened, where it stopped, and what to do next.

The reference printed `Loop completed:` for every outcome; we keep that prefix for a
terminal state only and say the real outcome otherwise. Failures and interruptions go to
stderr (never hidden by `--quiet`); the rest goes to stdout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from little_loops.cli.output import format_duration, plural
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.schema import FSMLoop


@dataclass
class Summary:
    """Lines to print after a run, and whether they describe a problem (stderr)."""

    lines: list[str] = field(default_factory=list)
    is_problem: bool = False


def summarize(result: ExecutionResult, fsm: FSMLoop, loop_arg: str) -> Summary:
    """The end-of-run lines for `result`; `loop_arg` is what the user typed for the loop."""
    where = (
        f"{result.final_state} ({plural(result.iterations, 'iteration')}, "
        f"{format_duration(result.duration_ms)})"
    )
    outcome = result.terminated_by
    resume = f"Resume with: ll-loop resume {loop_arg}"
    if outcome == "terminal":
        return Summary([f"Loop completed: {where}"])
    if outcome == "signal_stop":
        stop = f"Loop stopped by LOOP_STOP: {where}"
        return Summary([f"{stop} - {result.stop_reason}" if result.stop_reason else stop])
    if outcome == "max_iterations":
        more = result.iterations + fsm.max_iterations
        return Summary([f"Loop stopped: {where} - max_iterations reached", f"{resume} -n {more}"])
    if outcome == "handoff":
        return _handoff_summary(result, fsm, where, loop_arg)
    if outcome == "signal":
        return Summary([f"Loop interrupted: {where}", resume], is_problem=True)
    return Summary([f"Loop {_failure_word(outcome)}: {where} - {_reason(result, fsm)}"], True)


def _failure_word(outcome: str) -> str:
    return "stalled" if outcome == "stalled" else "failed"


def _reason(result: ExecutionResult, fsm: FSMLoop) -> str:
    if result.error:
        return result.error
    if result.terminated_by == "timeout" and fsm.timeout:
        return f"loop timeout ({fsm.timeout}s) reached"
    return f"ended by {result.terminated_by}"


def _handoff_summary(result: ExecutionResult, fsm: FSMLoop, where: str, loop_arg: str) -> Summary:
    prompt_line = f"Continuation: {result.continuation_prompt or '(no prompt)'}"
    if result.error:
        # The handoff could not be carried out (e.g. claude missing for `spawn`).
        return Summary([f"Loop failed: {where} - {result.error}", prompt_line], is_problem=True)
    if fsm.on_handoff == "terminate":
        return Summary([f"Loop ended by handoff: {where}", prompt_line])
    if fsm.on_handoff == "spawn":
        follow = f"Follow with: ll-loop status {loop_arg}"
        return Summary([f"Loop handed off to a new Claude session: {where}", prompt_line, follow])
    resume = f"Resume with: ll-loop resume {loop_arg}"
    return Summary([f"Loop paused for handoff: {where}", prompt_line, resume])
