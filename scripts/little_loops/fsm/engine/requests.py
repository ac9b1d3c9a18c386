"""Every request of the run core (`core.RunCore`) by name, and their union `Request`.

The requests every run makes are in `run_requests`; those a run makes only when a
feature asks are in `judge_requests`, `wait_requests`, `workspace_requests`,
`handoff_requests`, `approval_requests` (a person's answer), `sub_loop_requests` (a
child's load, worktree and ending) and here (running a sub-loop's child, a fan-out's
branches).

A local run loads this module only at its first approval, sub-loop or fan-out; the run
core and its drivers name `Request` in annotations only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from little_loops.fsm.engine.approval_requests import AwaitApproval
from little_loops.fsm.engine.handoff_requests import HandOff
from little_loops.fsm.engine.judge_requests import EvaluateWithIO
from little_loops.fsm.engine.parallel_requests import AddBranchWorktree
from little_loops.fsm.engine.run_requests import Finish, RunAction, SaveSnapshot
from little_loops.fsm.engine.sub_loop_requests import (
    AttachWorktree,
    ChildEnded,
    ChildLoadFailed,
    ChildSpec,
    DetachWorktree,
    LoadChild,
    LoadedChild,
    WorktreeAttached,
)
from little_loops.fsm.engine.wait_requests import Sleep, WaitUntil
from little_loops.fsm.engine.workspace_requests import (
    Checkpoint,
    FingerprintPaths,
    InspectWorkspace,
)

__all__ = [
    "AddBranchWorktree",
    "AttachWorktree",
    "AwaitApproval",
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
    "RunBranches",
    "RunChild",
    "SaveSnapshot",
    "Sleep",
    "WaitUntil",
    "WorktreeAttached",
]


class ChildToRun(Protocol):
    """A sub-loop's child as its parent's core built it (`child_run.ChildRun`)."""

    def next_request(self) -> Request: ...

    def submit(self, result: Any = None) -> None: ...

    def ended(self, finish: Finish) -> ChildEnded: ...

    def relay(self, events: list[dict[str, Any]], records: list[dict[str, Any]]) -> None: ...

    def spec(self) -> ChildSpec: ...


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


class BranchToRun(Protocol):
    """One item of a fan-out (`parallel_branch.BranchRun`): a stream of requests like a
    core's, ending with its `Finish`."""

    index: int

    def next_request(self) -> Request: ...

    def submit(self, result: Any = None) -> None: ...

    def cancel(self) -> None: ...


class FanoutToRun(Protocol):
    """A `parallel:` state's items as its core hands them to the driver
    (`parallel.Fanout`)."""

    max_workers: int

    def next_branch(self) -> BranchToRun | None: ...

    def branch_ended(self, branch: BranchToRun) -> list[BranchToRun]: ...


@dataclass(frozen=True)
class RunBranches:
    """Run a `parallel:` state's items (issue 25); submit None when every branch ended.

    The driver asks `fanout.next_branch()` for a branch to start while fewer than
    `fanout.max_workers` run (None: no more to start now), serves each branch's requests
    (`next_request()`/`submit()`) until its `Finish`, then tells `fanout.branch_ended`,
    which answers the branches to cancel (`cancel()`; their running action stopped too).
    Calls into the fan-out and its branches are the core's: one at a time."""

    fanout: FanoutToRun


Request = (
    RunAction
    | EvaluateWithIO
    | Checkpoint
    | InspectWorkspace
    | FingerprintPaths
    | Sleep
    | WaitUntil
    | AwaitApproval
    | HandOff
    | LoadChild
    | RunChild
    | RunBranches
    | AddBranchWorktree
    | AttachWorktree
    | DetachWorktree
    | Finish
)
Result = Any
