"""What one state produced (`Step`), and the views of it the rest of the run needs.

The executor fills a `Step` while it runs a state's action and evaluates it; the guards
read it as a `StepEnding`, captures and `prev` read the action's log path from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.engine.run_guards import StepEnding
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.signal_detector import DetectedSignal

__all__ = ["Step", "error_step", "full_output_log", "log_key", "step_ending"]


@dataclass
class Step:
    """What one state produced: its verdict (None for `next` states) and details."""

    verdict: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    action: ActionResult | None = None
    slash: bool = False
    cut_by_loop_timeout: bool = False
    signal: DetectedSignal | None = None

    def signal_of(self, signal_type: str) -> DetectedSignal | None:
        """The acted-on signal when it is of `signal_type` ("handoff", "stop", ...)."""
        signal = self.signal
        return signal if signal is not None and signal.signal_type == signal_type else None


def error_step(message: str) -> Step:
    """A state that failed before its action could run."""
    return Step(verdict="error", details={"error": message})


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
