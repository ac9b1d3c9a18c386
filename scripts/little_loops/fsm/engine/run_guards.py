"""The loop guards of one run, as the executor consults them after every step.

`RunGuards` bundles the three records of `guards` (stall streaks, visits, errors) with
the loop's settings, and turns what a state did into their updates: which errors to keep,
whether the state has now ended the same way `stall_threshold` times in a row with nothing
else changed (and whether to go to `on_stall` or stop), whether a state may be entered
again (`max_visits`). The executor only asks and acts on the answer; persistence saves and
restores the records.

Costs: with the guard off, nothing is hashed or looked at. With it on, an ending is
hashed only when it can count or when another state's streak needs it, and the workspace
is fingerprinted only for an ending that can build a streak (`needs_workspace`: the core
then asks its driver, `InspectWorkspace`, for a `git status` of the work tree), so a
healthy run costs nothing. This module does no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.guards import (
    HEAD_STALL_EXEMPT_VERDICTS,
    STALL_EXEMPT_VERDICTS,
    ErrorLog,
    StallGuard,
    VisitCounter,
    fingerprint,
    first_lines,
    stall_message,
)
from little_loops.fsm.model.head_parts import DIALECT_HEAD
from little_loops.fsm.schema import FSMLoop, StateConfig

__all__ = ["RunGuards", "Stall", "StepEnding", "visit_limit_message"]


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


@dataclass
class Stall:
    """A state ended the same way `stall_threshold` times with nothing changed: `message`
    says how; `recover_to` is the `on_stall` state to go to, or None to stop the run."""

    message: str
    recover_to: str | None = None


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
        head = fsm.dialect == DIALECT_HEAD
        exempt = HEAD_STALL_EXEMPT_VERDICTS if head else STALL_EXEMPT_VERDICTS
        self.stall = StallGuard(fsm.effective_stall_threshold(), exempt)
        self.visits = VisitCounter()
        self.errors = ErrorLog()
        self.on_stall = fsm.on_stall
        self.progress_paths = list(fsm.progress_paths)
        # Where the loop's runtime folders are (left out of the workspace fingerprint);
        # persistence sets it to its own `loops_dir`.
        self.loops_dir: Path | None = None

    def may_enter(self, name: str, state: StateConfig) -> bool:
        """False when `state` has used up its `max_visits`."""
        return state.max_visits is None or self.visits.count(name) < state.max_visits

    def note_fatal_error(self, name: str, iteration: int, message: str, stderr: str) -> None:
        self.errors.record(name, iteration, "fatal_error", message, stderr)

    def needs_workspace(self, ending: StepEnding) -> bool:
        """Whether `note_ending` compares the work tree for `ending`: only an ending that
        can build a streak is worth a `git status` (the run core asks its driver for the
        fingerprint then, with `InspectWorkspace`)."""
        verdict, _ = _judged(ending)
        return verdict is not None and self.stall.counts(verdict)

    def note_ending(
        self,
        name: str,
        iteration: int,
        ending: StepEnding,
        workspace: str | None = None,
    ) -> Stall | None:
        """Keep the errors of this ending; a `Stall` when the state is stalled.

        `workspace` is the work tree's fingerprint when `needs_workspace(ending)` (None:
        nothing is watched), which the driver takes (`InspectWorkspace`).
        """
        self._keep_errors(name, iteration, ending)
        stall = self.stall
        if stall.threshold <= 0:
            return None  # the guard is off: nothing is hashed
        verdict, payload = _judged(ending)
        if verdict is None or not stall.counts(verdict):
            if verdict is not None:  # `next` states are not judged: they keep a streak
                stall.forget(name)
            if stall.watches_others(name):  # `next` states too: their output is seen
                stall.pass_by(name, verdict, _digest(ending, verdict, payload))
            return None  # the healthy path: with no streak anywhere, nothing is hashed
        output = _judged_output(ending)
        digest = fingerprint(output, verdict, payload)
        preview = first_lines(payload or output)
        streak = stall.observe(name, verdict, digest, preview, workspace=workspace)
        if streak is None:
            return None
        # The next round of this state follows a recovery state or a resume, not the
        # round it was compared with.
        streak.rebase()
        if self.on_stall is None or streak.recovered:
            return Stall(stall_message(name, streak))
        streak.recovered = True
        return Stall(stall_message(name, streak), self.on_stall)

    def _keep_errors(self, name: str, iteration: int, ending: StepEnding) -> None:
        if ending.verdict == "error":
            message = ending.error or _unexplained_error(ending)
            self.errors.record(name, iteration, "verdict", message, ending.stderr)
        elif ending.ran_action and ending.exit_code != 0 and ending.stderr.strip():
            # A failing check that says nothing is loop control; one that explains
            # itself on stderr is worth reporting.
            message = f"exit code {ending.exit_code}"
            self.errors.record(name, iteration, "action", message, ending.stderr)


def _judged(ending: StepEnding) -> tuple[str | None, str | None]:
    """The verdict the guard judges (`handoff` for a handoff) and the payload that decides
    instead of the output (a continuation prompt, an error message), if any."""
    if ending.handoff:
        return "handoff", ending.handoff_prompt
    payload = ending.error if ending.verdict == "error" else None
    return ending.verdict, payload


def _judged_output(ending: StepEnding) -> str:
    return ending.output if ending.output is not None else ending_text(ending.details)


def _digest(ending: StepEnding, verdict: str | None, payload: str | None) -> str:
    return fingerprint(_judged_output(ending), verdict, payload)


def _unexplained_error(ending: StepEnding) -> str:
    """An `error` verdict without a message: the exit code is all there is (e.g. 2, 127)."""
    if ending.ran_action:
        return f"exit code {ending.exit_code}"
    return "the state ended with the verdict 'error'"
