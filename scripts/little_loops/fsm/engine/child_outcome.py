"""How a finished sub-loop comes back to its parent: the route it takes (spec §4.3) and
what it writes into the parent's `captured` (§4.4).

`outcome_of` reads the child's result as one of five outcomes: `yes` (a clean terminal),
`no` (a failure terminal, or an ending that is neither an error nor a budget), `error`,
`timeout` (a budget: wall clock or step cap) and `load_error` (the child could not be
loaded, bound or nested). `route_target` picks the parent's route for it, with HEAD's
fallbacks; `write_back` applies the five write-backs in order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.head_parts import FAILURE_TERMINAL_NAMES
from little_loops.fsm.schema import FSMLoop

__all__ = [
    "BUDGET_ENDINGS",
    "ChildOutcome",
    "load_failure",
    "outcome_of",
    "route_target",
    "write_back",
]

BUDGET_ENDINGS = frozenset({"timeout", "max_steps", "max_iterations", "max_iterations_reached"})
"""A child's `terminated_by` values that mean it ran out of time or steps (`on_timeout`)."""

# A terminal reached; a HEAD run ending at a failure terminal says `failure_terminal`.
_TERMINAL_ENDINGS = frozenset({"terminal", "failure_terminal"})


@dataclass(frozen=True)
class ChildOutcome:
    """`kind`: yes / no / error / timeout / load_error; `terminated_by`: the child's
    reason (`captured[<state>].terminated_by`)."""

    kind: str
    terminated_by: str
    failure_terminal: bool = False
    error: str | None = None

    @property
    def verdict(self) -> str:
        """The verdict of the parent state (its `route` event, `captured[X].verdict`)."""
        if self.kind == "load_error":
            return "error"
        return self.kind

    @property
    def capture_verdict(self) -> str:
        """§4.4 step 5: yes for a clean terminal, error for a child `error` (or a child
        that could not run), else no."""
        return self.verdict if self.verdict in ("yes", "error") else "no"


def load_failure(message: str) -> ChildOutcome:
    """The child could not be loaded, bound or nested (§4.3, §9c, §9d)."""
    return ChildOutcome("load_error", "error", error=message)


def outcome_of(result: ExecutionResult, child: FSMLoop) -> ChildOutcome:
    """What the child's ending means to the parent."""
    ended, error = result.terminated_by, result.read_error  # the detail, for people
    if ended in _TERMINAL_ENDINGS:
        if _failure_terminal(child, result.final_state):
            return ChildOutcome("no", ended, failure_terminal=True, error=error)
        return ChildOutcome("yes", ended, error=error)
    if ended == "error":
        return ChildOutcome("error", ended, error=error)
    if ended in BUDGET_ENDINGS:
        return ChildOutcome("timeout", ended, error=error)
    return ChildOutcome("no", ended, error=error)


def _failure_terminal(child: FSMLoop, name: str) -> bool:
    """Explicit `failure: true`, or a failure name, whatever the child's dialect."""
    state = child.states.get(name)
    return bool(getattr(state, "failure", False)) or name in FAILURE_TERMINAL_NAMES


def route_target(state: HeadStateConfig, outcome: ChildOutcome) -> str | None:
    """The parent's unresolved target for `outcome`, with HEAD's fallbacks (None: none)."""
    kind = outcome.kind
    if kind == "yes":
        return state.on_success
    if kind == "error":
        return state.on_error or state.on_failure
    if kind == "timeout":
        return state.on_verdicts.get("timeout") or state.on_failure
    if kind == "load_error":
        return state.on_error
    return state.on_failure


def write_back(
    captured: dict[str, Any],
    state_name: str,
    state: HeadStateConfig,
    outcome: ChildOutcome,
    *,
    child_captured: dict[str, Any],
    child_events: list[dict[str, Any]],
) -> None:
    """§4.4, in its order: events into `capture`, the child's captures, its reason, its
    error, the capture's verdict."""
    if state.capture and child_events:
        lines = "\n".join(json.dumps(event, default=str) for event in child_events)
        captured[state.capture] = {"output": lines, "exit_code": None}
    if (state.with_ or state.context_passthrough) and child_captured:
        captured[state_name] = dict(child_captured)
    entry = captured.setdefault(state_name, {})
    entry["terminated_by"] = outcome.terminated_by
    if outcome.failure_terminal:
        entry["failure_terminal"] = True
    if outcome.kind in ("error", "load_error") and outcome.error:
        entry["error"] = outcome.error
    if state.capture:
        captured.setdefault(state.capture, {})["verdict"] = outcome.capture_verdict
