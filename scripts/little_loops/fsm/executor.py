"""The face of the run engine: `FSMExecutor` and the names the reference's executor had.

The run loop lives in `engine.run_loop` and the steps of a state in `engine/`; this module
only gathers the public names (and the reference's module-level helpers) so that
`little_loops.fsm.executor` stays the one import for them.

The reference called `subprocess.run` and `time.time` through this module's `subprocess`
and `time`; tests that replace them (`mock.patch("little_loops.fsm.executor.subprocess.run")`,
`...executor.time.time`) reach the runner and the loop clock (`process.reference_seams`).
"""

from __future__ import annotations

import subprocess  # noqa: F401 (the reference's seam: tests patch `executor.subprocess.run`)
import time

from little_loops.fsm.engine.action_step import DEFAULT_ACTION_TIMEOUT as DEFAULT_ACTION_TIMEOUT
from little_loops.fsm.engine.context import ActionRunner as ActionRunner
from little_loops.fsm.engine.context import Checkpointer as Checkpointer
from little_loops.fsm.engine.context import EventCallback as EventCallback
from little_loops.fsm.engine.context import RunCursor as RunCursor
from little_loops.fsm.engine.run_events import EventCallbackError as EventCallbackError
from little_loops.fsm.engine.run_loop import ExecutionResult as ExecutionResult
from little_loops.fsm.engine.run_loop import FSMExecutor as FSMExecutor
from little_loops.fsm.evaluators import EvaluationResult as EvaluationResult
from little_loops.fsm.evaluators import evaluate as evaluate
from little_loops.fsm.evaluators import evaluate_exit_code as evaluate_exit_code
from little_loops.fsm.evaluators import evaluate_llm_structured as evaluate_llm_structured
from little_loops.fsm.interpolation import interpolate as interpolate
from little_loops.fsm.process.runner import ActionResult as ActionResult
from little_loops.fsm.process.runner import DefaultActionRunner as DefaultActionRunner
from little_loops.fsm.store.state_files import now_iso

__all__ = [
    "ActionResult",
    "ActionRunner",
    "Checkpointer",
    "DefaultActionRunner",
    "EventCallback",
    "ExecutionResult",
    "FSMExecutor",
]

# The reference's private clock helpers (scripts that patched or called them keep working).
_iso_now = now_iso


def _now_ms() -> int:
    """Wall-clock milliseconds since the epoch (the clock of `start_time_ms`)."""
    return int(time.time() * 1000)
