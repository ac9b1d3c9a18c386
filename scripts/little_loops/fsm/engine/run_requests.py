"""The requests every run makes of its driver (`core.RunCore`), one request at a time.

Each request is a small frozen value; the driver does the I/O it names and submits the
result the request's docstring gives (None where there is nothing to return). `Finish` is
the last request of a run: it carries the run's result and asks for nothing back.

The requests of features a plain loop never reaches (approvals, sub-loops, `parallel:`)
are in `approval_requests`, `sub_loop_requests` and `requests`, which a run loads only
when it reaches one; `requests` names them all, these too, and their union `Request`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.step_result import Ending, ExecutionResult, Step
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.schema import LLMConfig, StateConfig
from little_loops.fsm.signal_detector import SignalScan

__all__ = [
    "Checkpoint",
    "EvaluateWithIO",
    "FingerprintPaths",
    "Finish",
    "HandOff",
    "InspectWorkspace",
    "RunAction",
    "SaveSnapshot",
    "Sleep",
    "WaitUntil",
]


@dataclass(frozen=True)
class RunAction:
    """Run one action; submit its `ActionResult`.

    `scan` (when signals are watched) may be fed with the output as it streams; what it
    did not see the core scans from the result. `log_path`: where a runner that keeps
    logs writes the whole stdout. `resume_session`: the claude session a slash command
    continues (`--resume`), for runners that can (`supports_resume_session`).
    HEAD files: `claude_flags` go on a prompt action's claude command line
    (`--agent`, `--tools`, `--model`); `idle_timeout` kills the action after that many
    seconds without output (both for runners that set `supports_head_options`).
    """

    action: str
    timeout: float
    slash: bool
    scan: SignalScan | None = None
    log_path: Path | None = None
    resume_session: str | None = None  # continue this claude session (`--resume <id>`)
    claude_flags: tuple[str, ...] = ()
    idle_timeout: float | None = None
    cwd: Path | None = None  # run it here (a sub-loop's worktree); None: the runner's own
    # Issue 24: the agent host a prompt action runs on (None: claude, as before hosts) and
    # the model it is asked for (hosts other than claude; claude gets `--model` in
    # `claude_flags`), for runners that set `supports_hosts`.
    host: str | None = None
    model: str | None = None


@dataclass(frozen=True)
class EvaluateWithIO:
    """Judge a state whose evaluator needs the host (the LLM judge, a file, a log);
    submit the `Judgement` from `evaluation_step.judge(state, ctx, step, llm)`."""

    state: StateConfig
    ctx: InterpolationContext
    step: Step
    llm: LLMConfig


@dataclass(frozen=True)
class Checkpoint:
    """Save the project's work (`checkpoint: git`); submit the `CheckpointResult`."""

    state: str
    iteration: int
    reason: str


@dataclass(frozen=True)
class Sleep:
    """Wait `seconds` (backoff) unless a shutdown cuts it short; submit None."""

    seconds: float


@dataclass(frozen=True)
class WaitUntil:
    """Wait until the wall-clock time `until` (epoch seconds; a usage limit's reset)
    unless a shutdown cuts it short; submit None. Measured against the wall clock, so a
    machine that slept through part of the wait does not wait that part again."""

    until: float


@dataclass(frozen=True)
class InspectWorkspace:
    """Fingerprint the project's files for the stall guard, on the host that has them;
    submit `process.workspace.WorkspaceWatcher(...).fingerprint()` there (a str, or None:
    nothing watched). Asked only for an ending that can build a stall streak."""


@dataclass(frozen=True)
class FingerprintPaths:
    """HEAD's `circuit.repeated_failure.progress_paths` (§7.7): the (mtime, size)
    fingerprint of `paths` minus `exclude` (interpolated, relative to the project), on the
    host that has them; submit `process.path_fingerprint.paths_fingerprint(...)` (a str)."""

    paths: tuple[str, ...]
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class HandOff:
    """Give a handoff to the `HandoffHandler` (pause or spawn); submit its `HandoffResult`."""

    loop_name: str
    continuation: str | None


@dataclass(frozen=True)
class SaveSnapshot:
    """Save the run's snapshot with the event `after` (the run has reached a place a
    resume can go on from: the start, a route, a continued handoff, a usage-limit wait or
    a minute of one, a handoff about to spawn a session).

    Not yielded like the requests above: the save belongs with its event, which a step
    emits in the middle of its work, before the cursor changes again. The core hands it
    to its driver's `save` callback just before it delivers the event; a driver that keeps
    a state file (`store.persistent_executor`) writes it once it has recorded that event.
    `cursor` and `guards` are the run's own (read at once, never kept); `current_state`
    the state the snapshot names (a route's target); `nested`: a sub-loop's event (the
    cursor is still the top run's, whose state is under way)."""

    after: str
    cursor: RunCursor
    guards: RunGuards
    current_state: str
    elapsed_ms: int
    nested: bool = False


@dataclass(frozen=True)
class Finish:
    """The run is over: `result` is what it returns (`loop_complete` was emitted)."""

    ending: Ending
    result: ExecutionResult
