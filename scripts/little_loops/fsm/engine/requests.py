"""What the run core asks its driver to do (`core.RunCore`), one request at a time.

Each request is a small frozen value; the driver does the I/O it names and submits the
result the request's docstring gives (None where there is nothing to return). `Finish` is
the last request of a run: it carries the run's result and asks for nothing back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from little_loops.fsm.engine.spending import RunSpending
from little_loops.fsm.engine.step_result import Ending, ExecutionResult, Step
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.schema import FSMLoop, LLMConfig, StateConfig
from little_loops.fsm.signal_detector import SignalScan

__all__ = [
    "AttachWorktree",
    "Checkpoint",
    "ChildEnded",
    "ChildLoadFailed",
    "ChildSpec",
    "ChildToRun",
    "DetachWorktree",
    "EvaluateWithIO",
    "FingerprintPaths",
    "Finish",
    "HandOff",
    "InspectWorkspace",
    "LoadChild",
    "LoadedChild",
    "Request",
    "RunAction",
    "RunChild",
    "Sleep",
    "WaitUntil",
    "WorktreeAttached",
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
class LoadChild:
    """Load the sub-loop `name` (a `loop:` state's, interpolated; spec §4.1: a file
    relative to the working directory, else `<loops dir>/<name>.fsm.yaml`, `<name>.yaml`,
    else a loop shipped with the package) with the whole loading pipeline; submit a
    `LoadedChild`, or a `ChildLoadFailed` saying why in one line. `context_keys`: keys
    the parent gives the child (bindings, passthrough), which its checks may count on."""

    name: str
    context_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadedChild:
    """A sub-loop the driver loaded: the built loop and the file it came from."""

    loop: FSMLoop
    path: str


@dataclass(frozen=True)
class ChildLoadFailed:
    """A sub-loop that could not be found, read or validated (a load failure, §4.3)."""

    message: str


@dataclass(frozen=True)
class AttachWorktree:
    """Add a fresh worktree of the existing `branch` for a sub-loop (`worktree:`, §4.6);
    `label` names it. Submit a `WorktreeAttached`, or a `ChildLoadFailed` saying why."""

    branch: str
    label: str


@dataclass(frozen=True)
class WorktreeAttached:
    """Where the worktree is (`path`) and the working directory it stands in for."""

    path: Path
    origin: Path


@dataclass(frozen=True)
class DetachWorktree:
    """Remove a sub-loop's worktree (its branch stays); submit None, or why it failed."""

    path: Path


@dataclass(frozen=True)
class ChildEnded:
    """How a sub-loop's child ended, wherever it ran: its `ending` and `result`, what it
    captured and spent, its handoffs and usage-limit wait (kept when it pauses),
    whether it ended on a `FATAL_ERROR` signal (which fails the whole run, §9f), and the
    run's rate-limit memory as a child run elsewhere left it (None: the run's own object
    was used, §7.6)."""

    ending: Ending
    result: ExecutionResult
    captured: dict[str, Any]
    spending: RunSpending
    handoff_count: int = 0
    limit_wait: dict[str, Any] | None = None
    fatal: bool = False
    rate_limit: dict[str, Any] | None = None


class ChildToRun(Protocol):
    """A sub-loop's child as its parent's core built it (`child_run.ChildRun`)."""

    def next_request(self) -> Request: ...

    def submit(self, result: Any = None) -> None: ...

    def ended(self, finish: Finish) -> ChildEnded: ...

    def relay(self, events: list[dict[str, Any]], records: list[dict[str, Any]]) -> None: ...

    def spec(self) -> ChildSpec: ...


@dataclass(frozen=True)
class ChildSpec:
    """What a child needs to run elsewhere, as JSON values: the prepared loop
    (`FSMLoop.to_dict()`: bound context, clamped clock and budget, the run's LLM choices)
    and its `dialect`; its name, file and the parent state that runs it; its `depth` and
    the loop names from the top (`chain`); `records`: its place and its descendants'
    (the run's `head.sub_loops` from its level on); the run's rate-limit memory (§7.6);
    `log_dir`: where its actions' logs go (None: none kept); `worktree`: the `branch` and
    `path` of the worktree it runs in (`worktree:`, §4.6; None: none)."""

    loop: dict[str, Any]
    dialect: str
    name: str
    path: str
    parent_state: str
    parent_iteration: int
    depth: int
    chain: tuple[str, ...]
    records: list[dict[str, Any]]
    rate_limit: dict[str, Any]
    log_dir: str | None
    worktree: dict[str, str] | None = None


@dataclass(frozen=True)
class RunChild:
    """Run a sub-loop's child to its end (spec §4); submit its `ChildEnded`.

    A driver runs it in this process by serving the child's own requests in turn
    (`child.next_request()` / `child.submit(...)`) until its `Finish`, then submits
    `child.ended(finish)`: the child's events and place reach the run as they happen.
    A driver that runs it elsewhere (a Temporal child workflow) starts it from
    `child.spec()` (a `ChildSpec`: the prepared loop, its saved place, ...), hands the
    child's progress to `child.relay(events, records)` as it comes, and submits the
    `ChildEnded` it sends back."""

    child: ChildToRun


@dataclass(frozen=True)
class Finish:
    """The run is over: `result` is what it returns (`loop_complete` was emitted)."""

    ending: Ending
    result: ExecutionResult


Request = (
    RunAction
    | EvaluateWithIO
    | Checkpoint
    | InspectWorkspace
    | FingerprintPaths
    | Sleep
    | WaitUntil
    | HandOff
    | LoadChild
    | RunChild
    | AttachWorktree
    | DetachWorktree
    | Finish
)
Result = Any
