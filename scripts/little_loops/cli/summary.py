"""The lines that end a run: what happened, where it stopped, and what to do next.

The reference printed `Loop completed:` for every outcome; we keep that prefix for a
terminal state only and say the real outcome otherwise. Failures and interruptions go to
stderr (never hidden by `--quiet`); the rest goes to stdout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from little_loops.cli.error_list import error_lines
from little_loops.cli.output import NO_PROMPT, format_duration, plural
from little_loops.cli.spending_text import spent_text
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.schema import FSMLoop


@dataclass
class Summary:
    """Lines to print after a run, and whether they describe a problem (stderr)."""

    lines: list[str] = field(default_factory=list)
    is_problem: bool = False
    # The lines of `lines` that `--quiet` still prints: how to go on after a pause.
    essential: list[str] = field(default_factory=list)


# Errors the end of a run lists (`ll-loop status` shows more), with their stderr tails.
SUMMARY_ERRORS = 5
SUMMARY_STDERR_LINES = 3


def summarize(result: ExecutionResult, fsm: FSMLoop, loop_arg: str) -> Summary:
    """The end-of-run lines for `result`, then the errors seen during the run."""
    summary = _outcome(result, fsm, loop_arg)
    errors = result.errors
    if errors and errors[-1].get("message") == result.read_error:
        errors = errors[:-1]  # the first line already says it (e.g. a FATAL_ERROR)
    summary.lines.extend(
        error_lines(errors, loop_arg, last=SUMMARY_ERRORS, stderr_lines=SUMMARY_STDERR_LINES)
    )
    return summary


def _outcome(result: ExecutionResult, fsm: FSMLoop, loop_arg: str) -> Summary:
    """What happened; `loop_arg` is what the user typed for the loop."""
    where = (
        f"{result.final_state} ({plural(result.iterations, 'iteration')}, "
        f"{format_duration(result.duration_ms)}{spent_text(result.spending)})"
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
        go_on = f"{resume} -n {more}"
        return Summary(
            [f"Loop stopped: {where} - max_iterations reached", go_on], essential=[go_on]
        )
    if outcome == "handoff":
        return _handoff_summary(result, fsm, where, loop_arg)
    head = _head_outcome(result, fsm, where, loop_arg)
    if head is not None:
        return head
    if outcome == "signal":
        return Summary([f"Loop interrupted: {where}", resume], is_problem=True)
    if outcome == "budget_exhausted":
        flag = "--max-tokens" if (result.error or "").startswith("token budget") else "--max-cost"
        raise_it = f"Resume with a higher budget: ll-loop resume {loop_arg} {flag} N"
        stopped = f"Loop stopped: {where} - {result.error}"
        return Summary([stopped, raise_it], is_problem=True, essential=[raise_it])
    if outcome == "usage_limited":
        after = f"Resume after the reset: ll-loop resume {loop_arg}"
        paused = f"Loop paused for Claude's usage limit: {where} - {result.error}"
        return Summary([paused, after], is_problem=True, essential=[after])
    if outcome == "stalled":
        # Resumable once a person has looked: the guard's counters are kept.
        stalled = f"Loop stalled: {where} - {_reason(result, fsm)}"
        return Summary([stalled, *_after_stall(result, loop_arg)], is_problem=True)
    return Summary([f"Loop failed: {where} - {_reason(result, fsm)}"], is_problem=True)


def _head_outcome(
    result: ExecutionResult, fsm: FSMLoop, where: str, loop_arg: str
) -> Summary | None:
    """The endings only a HEAD loop has (fsm/engine/head_endings.py); None for the others."""
    outcome = result.terminated_by
    resume = f"ll-loop resume {loop_arg}"
    if outcome == "failure_terminal":
        return Summary(
            [f"Loop failed: {where} - ended at failure terminal '{result.final_state}'"],
            is_problem=True,
        )
    if outcome == "max_steps":
        # `--max-steps`: HEAD's step cap (`-n` is HEAD's max_iterations, maybe the pass cap)
        go_on = f"Resume with: {resume} --max-steps {result.iterations + fsm.max_iterations}"
        return Summary(
            [f"Loop stopped: {where} - max_steps ({fsm.max_iterations}) reached", go_on],
            essential=[go_on],
        )
    if outcome == "max_iterations_reached":
        passes = getattr(fsm, "max_passes", None) or 0
        raise_it = f"Resume with: {resume} -n {2 * passes}"
        stopped = f"Loop stopped: {where} - max_iterations ({passes} passes) reached"
        return Summary([stopped, raise_it], essential=[raise_it])
    if outcome in ("cycle_detected", "stall_detected"):
        cycle = outcome == "cycle_detected"
        key = "max_edge_revisits" if cycle else "circuit.repeated_failure.window"
        after = f"Resume with: {resume} (once what repeats is fixed, or after raising {key})"
        return Summary([f"Loop stalled: {where} - {_reason(result, fsm)}", after], is_problem=True)
    return None


def _after_stall(result: ExecutionResult, loop_arg: str) -> list[str]:
    """How to go on after a stall: the guard's counts survive a resume, so a plain resume
    stalls again at once unless what repeats was fixed."""
    resume = f"ll-loop resume {loop_arg}"
    if "max_visits" in (result.error or ""):
        state = result.final_state
        return [f"Resume with: {resume} (after raising max_visits of '{state}' in the loop file)"]
    return [
        f"Resume with: {resume} (once what repeats is fixed; otherwise it stalls again at once)",
        f"Or without the stall guard: {resume} --stall-threshold 0"
        " (or raise stall_threshold in the loop file)",
    ]


def _reason(result: ExecutionResult, fsm: FSMLoop) -> str:
    if result.read_error:
        return result.read_error
    if result.terminated_by == "timeout" and fsm.timeout:
        return f"loop timeout ({fsm.timeout}s) reached"
    return f"ended by {result.terminated_by}"


def _handoff_summary(result: ExecutionResult, fsm: FSMLoop, where: str, loop_arg: str) -> Summary:
    paused = f"Loop paused for handoff: {where}"
    if result.continuations_exhausted:
        limit = fsm.max_continuations
        return Summary(
            [
                f"{paused} - max_continuations ({limit}) reached, so it is not continued",
                f"Continue anyway with: ll-loop resume {loop_arg} --max-continuations {limit + 1}",
            ],
            is_problem=True,
        )
    if result.error:
        # The spawn could not start (e.g. claude missing): one line, and the way out.
        line = (
            f"{paused} - the continuation could not be started ({result.error}); "
            f"resume by hand: ll-loop resume {loop_arg}"
        )
        return Summary([line], is_problem=True)
    prompt_line = f"Continuation: {result.continuation_prompt or NO_PROMPT}"
    if fsm.on_handoff == "terminate":
        return Summary([f"Loop ended by handoff: {where}", prompt_line])
    if fsm.on_handoff == "spawn":
        handed = f"Loop handed off to a new Claude session: {where}"
        log = f"Session log: .loops/.running/{fsm.name}.handoff.log"
        follow = f"Follow with: ll-loop status {loop_arg}"
        return Summary([handed, prompt_line, log, follow], essential=[follow])
    resume = f"Resume with: ll-loop resume {loop_arg}"
    return Summary([paused, prompt_line, resume], essential=[resume])
