"""What the steps of a state work with: the run's position (`RunCursor`) and the rest of
the run they may read or use (`StepContext`).

The steps (`action_step`, `evaluation_step`, `handoff_flow`, `routing_step`) take a
`StepContext`, move the cursor, and return what happened (a `Step`, or an `Ending` when
the run should end); the executor decides what to do with it. None of them knows the
executor, so the engine has no import circle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from little_loops.fsm.engine.head_context import fill_head_fields
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.spending import RunSpending
from little_loops.fsm.handoff_handler import HandoffHandler
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import DetectedSignal, SignalDetector

if TYPE_CHECKING:
    from little_loops.fsm.model.checkpoint_result import CheckpointResult

__all__ = [
    "ActionRunner",
    "Checkpointer",
    "Clock",
    "EventCallback",
    "RunCursor",
    "StepContext",
]

EventCallback = Callable[[dict[str, Any]], None]


class ActionRunner(Protocol):
    """Runs one action. Runners may also offer `cancel()` and `supports_streaming = True`."""

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult: ...


class Checkpointer(Protocol):
    """Saves the project's work (`checkpoint.GitCheckpointer`); never raises for its own
    failures, which it reports in the result."""

    def checkpoint(
        self, state: str, iteration: int, *, reason: str = "iteration"
    ) -> CheckpointResult: ...


class Clock(Protocol):
    """The clocks the engine reads (seconds): `monotonic` for durations, `wall` for
    timestamps (`process.clock.SystemClock` is the machine's)."""

    def monotonic(self) -> float: ...

    def wall(self) -> float: ...


@dataclass
class RunCursor:
    """Where a run stands: everything a resumed run needs to go on from here.

    `handoff_context` is the handoff being continued ({"prompt", "count", "state"}),
    `handoff_delivered` whether its prompt already reached the state's action,
    `pending_handoff` the handoff signal of the last action, `redirected` the states left
    by `on_max_visits` since a state last ran (a cycle of them stalls the run).
    Additions: `spending`, what the run has spent so far (the budget's measure), and
    `limit_wait`, the usage-limit wait under way or cut short ({"state", "until",
    "message", "limit_type", "resets_at", "session_id"}), so a resumed run waits only
    what is left and continues claude's session. `head`: what a HEAD-dialect loop's run
    keeps besides (`head_memory`; empty for a legacy loop).
    """

    current_state: str
    iteration: int = 0
    captured: dict[str, dict[str, Any]] = field(default_factory=dict)
    prev_result: dict[str, Any] | None = None
    last_result: dict[str, Any] | None = None
    handoff_context: dict[str, Any] | None = None
    handoff_count: int = 0
    handoff_delivered: bool = False
    pending_handoff: DetectedSignal | None = None
    started_at: str = ""
    start_time_ms: int = 0
    redirected: set[str] = field(default_factory=set)
    spending: RunSpending = field(default_factory=RunSpending)
    limit_wait: dict[str, Any] | None = None
    head: HeadMemory = field(default_factory=HeadMemory)

    def copy(self) -> RunCursor:
        """A copy that shares no mutable part with this cursor."""
        return replace(
            self,
            captured=dict(self.captured),
            redirected=set(self.redirected),
            handoff_context=dict(self.handoff_context) if self.handoff_context else None,
            spending=self.spending.copy(),
            limit_wait=dict(self.limit_wait) if self.limit_wait else None,
            head=self.head.copy(),
        )


@dataclass
class StepContext:
    """The run as the steps of a state see it (built by the run core for each run)."""

    fsm: FSMLoop
    cursor: RunCursor
    guards: RunGuards
    emit: Callable[..., None]  # emit(name, **payload): one event
    elapsed_ms: Callable[[], int]  # time spent on the loop (resumed runs included)
    env: Mapping[str, str] | None = None  # `${env.X}`; None: the process environment
    signal_detector: SignalDetector | None = None
    handoff_handler: HandoffHandler | None = None
    output_callback: Callable[[str], None] | None = None
    log_dir: Path | None = None
    # Issue 24: the agent host the core picked for this state's prompt action (failover,
    # pacing); None: the first of the state's hosts.
    host: str | None = None

    def interpolation(self) -> InterpolationContext:
        """What `${...}` in this state's templates sees, as of now.

        A HEAD loop's also has its injected context keys, `${messages}` and the state's
        `${param.*}` (`head_context`; raises `FragmentParameterError` for an unbound
        required parameter).
        """
        cursor = self.cursor
        ctx = InterpolationContext(
            context=self.fsm.context,
            captured=cursor.captured,
            prev=cursor.prev_result,
            result=cursor.last_result,
            state_name=cursor.current_state,
            iteration=cursor.iteration,
            loop_name=self.fsm.name,
            started_at=cursor.started_at,
            elapsed_ms=self.elapsed_ms(),
            handoff=cursor.handoff_context,
            env=self.env,
        )
        if isinstance(self.fsm, HeadLoop):
            state = self.fsm.states.get(cursor.current_state)
            return fill_head_fields(ctx, self.fsm, cursor.head, state)
        return ctx


def iso_time(seconds: float) -> str:
    """A wall-clock time (seconds since the epoch) as ISO 8601, UTC, like event stamps."""
    return datetime.fromtimestamp(seconds, UTC).isoformat()
