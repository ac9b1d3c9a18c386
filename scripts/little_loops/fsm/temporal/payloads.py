"""What travels between the client, the workflow and the activities (Temporal payloads).

Plain dataclasses of JSON values, so Temporal's default converter carries them and a
recorded history stays readable. `Carry` is a run's position and guards between two
workflow runs (continue-as-new, or a `resume` after the workflow closed); `cursor_to_dict`
and `cursor_from_dict` turn the run core's `RunCursor` into JSON and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.spending import RunSpending
from little_loops.fsm.engine.sub_loop_requests import ChildSpec
from little_loops.fsm.model.run_choices import RunChoices
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.signal_detector import DetectedSignal
from little_loops.fsm.temporal.timeouts import (
    DEFAULT_HEARTBEAT_SECONDS,
    DEFAULT_SCHEDULE_TO_START_SECONDS,
)

__all__ = [
    "DEFAULT_CONTINUE_AS_NEW_EVERY",
    "ActionInput",
    "ActionOutput",
    "Carry",
    "CheckpointInput",
    "EventsPage",
    "JudgeInput",
    "NotifyInput",
    "PathsInput",
    "ResumeSignal",
    "RunInput",
    "RunOutcome",
    "SpawnInput",
    "SpawnOutput",
    "WorkspaceInput",
    "WorktreeInput",
    "WorktreeOutput",
    "cursor_from_dict",
    "cursor_to_dict",
    "guards_from_dict",
    "guards_to_dict",
]


DEFAULT_CONTINUE_AS_NEW_EVERY = 200
"""States per workflow run before it continues as new (`RunInput.continue_as_new_every`)."""


@dataclass
class Carry:
    """Where a run stands, to go on from in a new workflow run.

    `status` and `phase` are the state file's; `event_offset` the number of events the
    earlier workflow runs emitted (event numbers go on across them), the last of which
    are `recent_events` (so a follower that fell behind misses none of them).
    """

    cursor: dict[str, Any]
    guards: dict[str, Any]
    status: str = "running"
    phase: str | None = None
    continuation_prompt: str | None = None
    terminated_by: str | None = None
    error: str | None = None
    resumed_at: str | None = None
    event_offset: int = 0
    recent_events: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ResumeSignal:
    """`resume` of a paused run: a new continuation prompt and limits, when given
    (`notify`: a new command, "" for none; None leaves each as it was)."""

    prompt: str | None = None
    max_continuations: int | None = None
    max_cost_usd: float | None = None
    notify: str | None = None


@dataclass
class RunInput:
    """One workflow run of a loop.

        `loop` is the validated loop (`FSMLoop.to_dict()`, overrides applied); `env` the
        values of the `${env.X}` the loop refers to, read by the client; `task_queue` where
        the activities run (the worker of the checkout); `carry` where to go on from (None:
        a new run); `resume`: the prompt and limit of a resume that starts this run (the
    earlier one had closed); `continue_as_new_every`: states per workflow run before the history is
        cut (continue-as-new).
    """

    loop: dict[str, Any]
    checkout: str
    loops_dir: str
    task_queue: str
    host: str
    env: dict[str, str] = field(default_factory=dict)
    context_overrides: dict[str, str] = field(default_factory=dict)
    carry: Carry | None = None
    resume: ResumeSignal | None = None
    continue_as_new_every: int = DEFAULT_CONTINUE_AS_NEW_EVERY
    schedule_to_start_seconds: float = DEFAULT_SCHEDULE_TO_START_SECONDS  # `timeouts`
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS
    keep_logs: bool = True
    # `run --max-cost` / `--notify` ("": none), kept in the state for a resume to keep, as
    # the local state file keeps them (None: not given; the loop file's hold).
    budget_override: float | None = None
    notify_override: str | None = None
    # The checkout's scope registry (`scope_registry`), told when a run with a `scope`
    # ends or pauses (None: the loop has no scope).
    scope_registry: str | None = None
    # The dialect `loop` was read in (`FSMLoop.dialect`): a HEAD loop is built again as one.
    dialect: str = "legacy"
    # `--no-llm`/`--llm-model` (already in `loop`), applied to the run's sub-loops (§4.6).
    choices: RunChoices = field(default_factory=RunChoices)


@dataclass
class EventsPage:
    """Events `first`, `first + 1`, ... of the run (numbered from 0 across workflow
    runs); `total`: how many there are so far."""

    first: int
    events: list[dict[str, Any]]
    total: int


@dataclass
class ActionInput:
    """Run one action in `checkout` on the worker's host."""

    action: str
    timeout: float
    slash: bool
    checkout: str
    log_path: str | None = None
    resume_session: str | None = None  # continue this claude session (a usage-limit wait)
    # `logs_keep`: after the action, keep the logs of the last this many actions (0: no
    # pruning); `logs_in_use`: the logs a capture or `${prev}` still names (never pruned).
    logs_keep: int = 0
    logs_in_use: list[str] = field(default_factory=list)
    # HEAD files: more flags for a prompt action's claude; stop an action silent that long.
    claude_flags: list[str] = field(default_factory=list)
    idle_timeout: float | None = None
    # A `worktree:` sub-loop's action runs in its worktree (None: in the checkout).
    cwd: str | None = None
    # Issue 24: the agent host of a prompt action (None: claude) and its model, run with
    # the same adapters (`process.hosts`) on the worker's host.
    host: str | None = None
    model: str | None = None


@dataclass
class ActionOutput:
    """The action's result (output and stderr are bounded tails; the whole stdout is in
    `result.log_path` on the host) and the lines that carried a signal marker, in order."""

    result: ActionResult
    signal_lines: list[str] = field(default_factory=list)


@dataclass
class JudgeInput:
    """Judge a state with host I/O: `ctx` is the `InterpolationContext` as a dict."""

    loop: dict[str, Any]
    state: str
    ctx: dict[str, Any]
    action: ActionResult | None
    slash: bool
    checkout: str
    dialect: str = "legacy"


@dataclass
class CheckpointInput:
    loop_name: str
    state: str
    iteration: int
    reason: str
    checkout: str
    loops_dir: str


@dataclass
class SpawnInput:
    """`on_handoff: spawn`: start the continuation claude session on the host."""

    loop_name: str
    continuation: str | None
    checkout: str
    running_dir: str


@dataclass
class WorkspaceInput:
    """Fingerprint the checkout's files for the stall guard (`InspectWorkspace`)."""

    checkout: str
    loops_dir: str
    progress_paths: list[str] = field(default_factory=list)


@dataclass
class PathsInput:
    """Fingerprint HEAD's `circuit` progress paths in the checkout (`FingerprintPaths`)."""

    checkout: str
    paths: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)


@dataclass
class ChildInput:
    """Load a HEAD sub-loop's file on the checkout's host (`LoadChild`, spec §4.1)."""

    name: str
    checkout: str
    loops_dir: str
    context_keys: list[str] = field(default_factory=list)


@dataclass
class ChildOutput:
    """The loaded sub-loop (`to_dict()` and its dialect, as `RunInput` carries a loop) and
    its file, or the one line saying why it could not be loaded."""

    loop: dict[str, Any] | None = None
    dialect: str = "legacy"
    path: str | None = None
    error: str | None = None


@dataclass
class WorktreeInput:
    """Attach a worktree of `branch` for a `worktree:` sub-loop (`label` names it), or
    detach the one at `path` (§4.6), in the checkout on its host."""

    checkout: str
    loops_dir: str
    branch: str = ""
    label: str = ""
    path: str | None = None
    fresh: bool = True  # a `parallel:` item's branch, made from HEAD (issue 25)


@dataclass
class WorktreeOutput:
    """The attached worktree (`path`, and the checkout it stands in for), or why not."""

    path: str | None = None
    origin: str | None = None
    error: str | None = None


@dataclass
class ChildRunInput:
    """A HEAD sub-loop's child as a child workflow (`RunChild`): `run` is the top-level
    run's input (its checkout, task queue, limits and loop, whose handoff and log
    settings the child keeps), `parent_id` the workflow its progress goes to, `spec` the
    child (`ChildSpec`: its prepared loop, its place, its depth and chain)."""

    run: RunInput
    parent_id: str
    spec: ChildSpec


@dataclass
class ChildProgress:
    """A child workflow's progress, told to its parent (signal `child_progress`): its
    new events (with `depth`) and its place and its descendants' (`records`: the run's
    `head.sub_loops` from its level on)."""

    child_id: str
    events: list[dict[str, Any]]
    records: list[dict[str, Any]]


@dataclass
class ChildRunOutput:
    """How a child workflow ended (`requests.ChildEnded` as JSON values: `ending` the
    `Ending`'s fields, `result` the `ExecutionResult.to_dict()`, with its captures), the
    run's rate-limit memory as it left it, and the progress not told yet (`events`,
    `records`)."""

    ending: dict[str, Any]
    result: dict[str, Any]
    spending: dict[str, Any]
    handoff_count: int = 0
    limit_wait: dict[str, Any] | None = None
    fatal: bool = False
    rate_limit: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class NotifyInput:
    """Call the loop's notify command on the host: for a usage-limit wait's `event`, or
    (no event) for the run's end or pause; `state` is the run's state file fields then."""

    command: str
    loop_name: str
    checkout: str
    loops_dir: str
    event: dict[str, Any] | None = None
    state: dict[str, Any] | None = None


@dataclass
class SpawnOutput:
    pid: int | None = None
    error: str | None = None


def cursor_to_dict(cursor: RunCursor) -> dict[str, Any]:
    """The cursor as JSON values (sets as sorted lists, the pending signal as a dict)."""
    pending = cursor.pending_handoff
    return {
        "current_state": cursor.current_state,
        "iteration": cursor.iteration,
        "captured": cursor.captured,
        "prev_result": cursor.prev_result,
        "last_result": cursor.last_result,
        "handoff_context": cursor.handoff_context,
        "handoff_count": cursor.handoff_count,
        "handoff_delivered": cursor.handoff_delivered,
        "pending_handoff": None
        if pending is None
        else {
            "signal_type": pending.signal_type,
            "payload": pending.payload,
            "raw_match": pending.raw_match,
        },
        "started_at": cursor.started_at,
        "start_time_ms": cursor.start_time_ms,
        "redirected": sorted(cursor.redirected),
        "spending": cursor.spending.to_dict(),
        "limit_wait": cursor.limit_wait,
        **({"head": cursor.head.to_dict()} if cursor.head.anything else {}),
    }


def cursor_from_dict(data: dict[str, Any]) -> RunCursor:
    pending = data.get("pending_handoff")
    return RunCursor(
        current_state=data["current_state"],
        iteration=data.get("iteration", 0),
        captured=dict(data.get("captured") or {}),
        prev_result=data.get("prev_result"),
        last_result=data.get("last_result"),
        handoff_context=data.get("handoff_context"),
        handoff_count=data.get("handoff_count", 0),
        handoff_delivered=data.get("handoff_delivered", False),
        pending_handoff=DetectedSignal(**pending) if pending else None,
        started_at=data.get("started_at", ""),
        start_time_ms=data.get("start_time_ms", 0),
        redirected=set(data.get("redirected") or ()),
        spending=RunSpending.from_dict(data.get("spending")),
        limit_wait=data.get("limit_wait"),
        head=HeadMemory.from_dict(data.get("head")),
    )


def guards_to_dict(guards: RunGuards) -> dict[str, Any]:
    return {
        "visits": guards.visits.to_dict(),
        "stall_streaks": guards.stall.to_dict(),
        "errors": guards.errors.to_list(),
    }


def guards_from_dict(guards: RunGuards, data: dict[str, Any]) -> RunGuards:
    """`guards` with the counts of `data` restored (as a resumed local run does)."""
    guards.visits.restore(data.get("visits") or {})
    guards.stall.restore(data.get("stall_streaks") or {})
    guards.errors.restore(data.get("errors") or [])
    return guards


@dataclass
class RunOutcome:
    """What a closed workflow run returns: its state file (`LoopState.to_dict()`), the
    run's result (`ExecutionResult.to_dict()`) and where to resume from."""

    state: dict[str, Any]
    result: dict[str, Any]
    carry: Carry
