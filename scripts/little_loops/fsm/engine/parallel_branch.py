"""One item of a `parallel:` fan-out (issue 25): a child run with its own saved place.

A `BranchRun` is a stream of requests like a core's (`next_request`/`submit`, ending
with a `Finish`): with `isolation: worktree` it first asks for its worktree
(`AddBranchWorktree`; a resumed item's old one removed first), then hands its child (a
nested core, `child_run.ChildRun`; actions placed in the worktree) to the driver as a
sub-loop's (`RunChild`: served here, or a child workflow on Temporal), then removes the
worktree unless the run pauses. Its child's place is kept in a records list
of its own (`records`, the fan-out's memory), refreshed at each of the child's routes,
so a resumed fan-out goes on inside each unfinished item.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.child_run import AttachedWorktree, ChildRun
from little_loops.fsm.engine.context import EventCallback
from little_loops.fsm.engine.events import PARALLEL_WORKTREE_ADDED, PARALLEL_WORKTREE_REMOVED
from little_loops.fsm.engine.parallel_requests import AddBranchWorktree
from little_loops.fsm.engine.requests import RunChild
from little_loops.fsm.engine.run_requests import Finish
from little_loops.fsm.engine.step_result import Ending, ExecutionResult
from little_loops.fsm.engine.sub_loop_requests import ChildEnded, DetachWorktree, WorktreeAttached

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["ALL_PAUSES", "STOP_PAUSES", "BranchPlan", "BranchRun"]

# Child endings that pause the whole run, the item's place kept: the run's stop, and (from
# `revisions.BRANCH_PAUSES`) a handoff or a usage limit, as inside a sub-loop. Before that
# change a handoff or a usage limit ended the item, its verdict `no`.
STOP_PAUSES = frozenset({"signal"})
ALL_PAUSES = frozenset({"signal", "handoff", "usage_limited"})


@dataclass(frozen=True)
class BranchPlan:
    """What one branch needs: its item and index, the child built for it (`build`:
    a `ChildRun` whose core is started, given the worktree it runs in and the project
    directory that worktree stands in for), its saved
    worktree (a resumed item's), and the git branch it runs on (None: no worktree)."""

    index: int
    item: Any
    build: Callable[[AttachedWorktree | None, Path | None], ChildRun]
    git_branch: str | None = None
    label: str = ""
    left_worktree: str | None = None
    fresh: bool = True
    pausing: frozenset[str] = STOP_PAUSES  # the child endings that pause the run


class BranchRun:
    """One branch as the driver runs it (see the module docstring)."""

    def __init__(self, plan: BranchPlan, emit: EventCallback) -> None:
        self.plan, self.index, self._emit = plan, plan.index, emit
        self.cancelled = False
        self.child: ChildRun | None = None
        self.ended: ChildEnded | None = None
        self.failure: str | None = None  # the worktree could not be had
        self.worktree: AttachedWorktree | None = None
        self._steps = self._run()
        self._request: Request | None = None

    # -- the driver's side ----------------------------------------------------------------

    def next_request(self) -> Request:
        if self._request is None:
            self._request = next(self._steps)
        return self._request

    def submit(self, result: Any = None) -> None:
        self._request = self._steps.send(result)

    def cancel(self) -> None:
        """Stop this branch (`fail_fast`): its child stops before its next state."""
        self.cancelled = True
        if self.child is not None:
            core: Any = self.child.core
            core.request_shutdown()

    @property
    def paused(self) -> bool:
        """Whether the branch stopped with the run (its place kept for a resume)."""
        ended = self.ended
        return (
            not self.cancelled
            and ended is not None
            and ended.ending.terminated_by in self.plan.pausing
        )

    # -- the branch ---------------------------------------------------------------------

    def _run(self) -> Generator[Request, Any, None]:
        plan = self.plan
        origin: Path | None = None
        if plan.git_branch is not None:
            attached = yield from self._attach(plan.git_branch)
            if attached is None:
                yield _failed_finish(self.failure or "")
                return
            self.worktree = AttachedWorktree(plan.git_branch, str(attached.path))
            origin = attached.origin
        child = self.child = plan.build(self.worktree, origin)
        if self.cancelled:  # cancelled while its worktree was being made
            self.cancel()
        # Run here (the local driver) or as a child workflow (Temporal), as a sub-loop.
        self.ended = yield RunChild(child)
        if self.worktree is not None and not self.paused:
            failure = yield DetachWorktree(Path(self.worktree.path))
            self._emit_worktree(PARALLEL_WORKTREE_REMOVED, failure)
        yield Finish(self.ended.ending, self.ended.result)

    def _attach(self, branch: str) -> Generator[Request, Any, WorktreeAttached | None]:
        plan = self.plan
        if plan.left_worktree:
            yield DetachWorktree(Path(plan.left_worktree))
        attached = yield AddBranchWorktree(branch, plan.label, fresh=plan.fresh)
        if not isinstance(attached, WorktreeAttached):
            self.failure = f"worktree of branch '{branch}': {attached.message}"
            return None
        self._emit(
            {
                "event": PARALLEL_WORKTREE_ADDED,
                "git_branch": branch,
                "path": str(attached.path),
                "item_index": self.index,
            }
        )
        return attached

    def _emit_worktree(self, name: str, failure: str | None) -> None:
        assert self.worktree is not None
        event: dict[str, Any] = {
            "event": name,
            "git_branch": self.worktree.branch,
            "path": self.worktree.path,
            "item_index": self.index,
        }
        if failure:
            event["error"] = failure
        self._emit(event)


def _failed_finish(message: str) -> Finish:
    """The last request of a branch that could not start."""
    result = ExecutionResult("", 0, "error", 0, {}, error=message)
    return Finish(Ending("error", message), result)
