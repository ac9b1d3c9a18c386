"""The loop guards of one run, as the executor consults them after every step.

`RunGuards` bundles the three records of `guards` (stall streaks, visits, errors) with
the loop's settings, and turns what a state did into their updates: which errors to keep,
whether the state has now ended the same way `stall_threshold` times in a row, whether a
state may be entered again (`max_visits`). The executor only asks and acts on the answer;
persistence saves and restores the records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.guards import ErrorLog, StallGuard, VisitCounter, stall_message
from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = ["RunGuards", "StepEnding", "visit_limit_message"]


@dataclass
class StepEnding:
    """How one state ended, as far as the guards care.

    `verdict` is None for `next` states (not evaluated). The error message decides for an
    error, the continuation prompt for a handoff; otherwise the action's stdout
    (`output`), or for a decision state (no action, `output` None) its evaluation
    `details`.
    """

    verdict: str | None
    output: str | None
    details: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""
    exit_code: int = 0
    ran_action: bool = False
    error: str | None = None
    handoff: bool = False
    handoff_prompt: str | None = None


def ending_text(details: dict[str, Any]) -> str:
    """What a decision state "said": its evaluation details, in a stable order."""
    return json.dumps(details, sort_keys=True, default=str)


def visit_limit_message(state: str, count: int, limit: int, *, cycled: bool = False) -> str:
    """Why a run stops at a state that used up its `max_visits`."""
    message = f"state '{state}' was entered {count} times (max_visits: {limit})"
    return message + ", and on_max_visits led back to it" if cycled else message


class RunGuards:
    """Stall streaks, visit counts and the error log of one run (resumes included)."""

    def __init__(self, fsm: FSMLoop) -> None:
        self.stall = StallGuard(fsm.stall_threshold)
        self.visits = VisitCounter()
        self.errors = ErrorLog()

    def may_enter(self, name: str, state: StateConfig) -> bool:
        """False when `state` has used up its `max_visits`."""
        return state.max_visits is None or self.visits.count(name) < state.max_visits

    def note_fatal_error(self, name: str, iteration: int, message: str, stderr: str) -> None:
        self.errors.record(name, iteration, "fatal_error", message, stderr)

    def note_ending(self, name: str, iteration: int, ending: StepEnding) -> str | None:
        """Keep the errors of this ending; the stall message when the run must stop."""
        self._keep_errors(name, iteration, ending)
        if ending.handoff:
            verdict: str | None = "handoff"
            payload = ending.handoff_prompt
        else:
            verdict = ending.verdict
            payload = ending.error if verdict == "error" else None
        if verdict is None:
            return None  # `next` states are not judged, so they neither stall nor reset
        if not self.stall.counts(verdict):
            self.stall.forget(name)  # the healthy path: nothing is hashed
            return None
        output = ending.output if ending.output is not None else ending_text(ending.details)
        streak = self.stall.observe_ending(name, verdict, output, payload)
        return None if streak is None else stall_message(name, streak)

    def _keep_errors(self, name: str, iteration: int, ending: StepEnding) -> None:
        if ending.verdict == "error":
            message = ending.error or _unexplained_error(ending)
            self.errors.record(name, iteration, "verdict", message, ending.stderr)
        elif ending.ran_action and ending.exit_code != 0 and ending.stderr.strip():
            # A failing check that says nothing is loop control; one that explains
            # itself on stderr is worth reporting.
            message = f"exit code {ending.exit_code}"
            self.errors.record(name, iteration, "action", message, ending.stderr)


def _unexplained_error(ending: StepEnding) -> str:
    """An `error` verdict without a message: the exit code is all there is (e.g. 2, 127)."""
    if ending.ran_action:
        return f"exit code {ending.exit_code}"
    return "the state ended with the verdict 'error'"
