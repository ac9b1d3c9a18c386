"""What one state produced (`Step`), how a run ends (`Ending`, `ExecutionResult`), and
the views of a step the rest of the run needs.

The steps fill a `Step` while they run a state's action and evaluate it, or return an
`Ending` when the run should end there; the executor turns an `Ending` into the run's
`ExecutionResult`. The guards read a step as a `StepEnding`, captures and `prev` read the
action's log path from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.engine.run_guards import StepEnding
from little_loops.fsm.handoff_handler import HandoffResult
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.signal_detector import DetectedSignal

__all__ = [
    "Ending",
    "ExecutionResult",
    "Step",
    "error_step",
    "full_output_log",
    "log_key",
    "step_ending",
]


@dataclass
class Step:
    """What one state produced: its verdict (None for `next` states) and details."""

    verdict: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    action: ActionResult | None = None
    slash: bool = False
    cut_by_loop_timeout: bool = False
    signal: DetectedSignal | None = None
    # An `error` the reference raised instead of judging (the action could not be
    # interpolated or started, or timed out): without a route it ends the run with its own
    # message, where an evaluator's `error` ends it "No valid transition".
    raised: bool = False

    def signal_of(self, signal_type: str) -> DetectedSignal | None:
        """The acted-on signal when it is of `signal_type` ("handoff", "stop", ...)."""
        signal = self.signal
        return signal if signal is not None and signal.signal_type == signal_type else None


@dataclass(frozen=True)
class Ending:
    """How the run ends, as a step found it; the executor finishes the run with it.

    `exhausted`: a handoff went past `max_continuations`; `handoff_result`: what the
    `HandoffHandler` did with a handoff that ends the run; `error_detail`: the message
    people read when `error` is the reference's bare text (see `ExecutionResult`).
    """

    terminated_by: str
    error: str | None = None
    continuation_prompt: str | None = None
    stop_reason: str | None = None
    exhausted: bool = False
    handoff_result: HandoffResult | None = None
    error_detail: str | None = None


@dataclass
class ExecutionResult:
    """How a run ended. `duration_ms` counts earlier runs of a resumed loop too.

    Additions: `stop_reason` is the payload of a `LOOP_STOP:` signal;
    `continuations_exhausted` says a handoff went past `max_continuations`, so it will not
    be continued (nothing was spawned; resume needs a higher limit). `error_detail`: when
    `error` is exactly the reference's text (`No valid transition`), the message people
    read instead (`No valid transition for verdict 'failure' in state 'check'`, or the
    error verdict's own message); shown by the summary, saved in the state file's `error`
    and sent in `loop_complete`. `read_error` gives whichever a person should see.
    """

    final_state: str
    iterations: int
    terminated_by: str
    duration_ms: int
    captured: dict[str, dict[str, Any]]
    error: str | None = None
    handoff: bool = False
    continuation_prompt: str | None = None
    stop_reason: str | None = None
    continuations_exhausted: bool = False
    # Addition: the last errors seen during the run (see `guards.ErrorLog`), oldest first.
    errors: list[dict[str, Any]] = field(default_factory=list)
    # Addition: what the run spent ({"cost_usd", "tokens"}, see `spending`); None: nothing.
    spending: dict[str, Any] | None = None
    error_detail: str | None = None

    @property
    def read_error(self) -> str | None:
        """The error as a person should read it: the detail when there is one."""
        return self.error_detail or self.error

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "final_state": self.final_state,
            "iterations": self.iterations,
            "terminated_by": self.terminated_by,
            "duration_ms": self.duration_ms,
            "captured": self.captured,
        }
        if self.error is not None:
            out["error"] = self.error
        if self.handoff:
            out["handoff"] = True
        if self.continuation_prompt is not None:
            out["continuation_prompt"] = self.continuation_prompt
        if self.stop_reason is not None:
            out["stop_reason"] = self.stop_reason
        if self.continuations_exhausted:
            out["continuations_exhausted"] = True
        if self.errors:
            out["errors"] = self.errors
        if self.spending is not None:
            out["spending"] = self.spending
        if self.error_detail is not None:
            out["error_detail"] = self.error_detail
        return out


def error_step(message: str) -> Step:
    """A state that failed before its action could run."""
    return Step(verdict="error", details={"error": message}, raised=True)


def full_output_log(result: ActionResult) -> str | None:
    """The log holding the whole stdout, when `result.output` holds only its tail."""
    return result.log_path if result.output_truncated else None


def log_key(result: ActionResult) -> dict[str, str]:
    """`{"log_path": ...}` for a capture or `prev` whose stdout was logged, else nothing."""
    return {"log_path": result.log_path} if result.log_path is not None else {}


def step_ending(step: Step) -> StepEnding:
    """What the guards need to know about how a state ended."""
    action = step.action
    error = step.details.get("error") if step.verdict == "error" else None
    handoff = step.signal_of("handoff")
    return StepEnding(
        verdict=step.verdict,
        output=action.output if action is not None else None,
        details=step.details,
        stderr=action.stderr if action is not None else "",
        exit_code=action.exit_code if action is not None else 0,
        ran_action=action is not None,
        error=None if error is None else str(error),
        handoff=handoff is not None,
        handoff_prompt=handoff.payload if handoff is not None else None,
    )
