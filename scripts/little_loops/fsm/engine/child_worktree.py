"""A sub-loop run in a worktree of another branch (`worktree:`, spec §4.6).

On every entry of the `loop:` state a fresh worktree of the (interpolated, trimmed)
branch is attached through the driver (`AttachWorktree`); the child's actions run there
(`RunAction.cwd`), a relative `run_dir` is made absolute, and the worktree is removed
afterwards (`DetachWorktree`) whatever the child's ending, except a pause (stop, handoff,
usage limit), whose resume removes it and attaches a fresh one. An empty branch is no
worktree; a failed attach is the state's outcome `error` (§4.3).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.child_outcome import ChildOutcome
from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.events import (
    SUB_LOOP_WORKTREE_ATTACHED,
    SUB_LOOP_WORKTREE_DETACHED,
    SUB_LOOP_WORKTREE_ERROR,
)
from little_loops.fsm.engine.run_requests import RunAction
from little_loops.fsm.engine.sub_loop_requests import (
    AttachWorktree,
    DetachWorktree,
    WorktreeAttached,
)
from little_loops.fsm.interpolation import InterpolationError, interpolate
from little_loops.fsm.model.head_loop import HeadStateConfig

if TYPE_CHECKING:
    from little_loops.fsm.engine.requests import Request

__all__ = ["ChildWorktree", "absolute_run_dir"]


class ChildWorktree:
    """The worktree of one child run (none until `attach` adds one)."""

    def __init__(self, sc: StepContext, state: HeadStateConfig, label: str) -> None:
        self.sc, self.state, self.label = sc, state, label
        self.attached: WorktreeAttached | None = None
        self.branch = ""

    def attach(
        self, saved: dict[str, Any] | None, context: dict[str, Any]
    ) -> Generator[Request, Any, ChildOutcome | None]:
        """Attach a fresh worktree (the one a paused run left is removed first); None, or
        the outcome of a failed attach. `context`: the child's, whose run_dir it fixes."""
        left = (saved or {}).get("worktree")
        if isinstance(left, dict) and left.get("path"):
            yield DetachWorktree(Path(left["path"]))
        template = self.state.worktree or ""
        try:
            branch = interpolate(template, self.sc.interpolation()).strip()
        except InterpolationError as exc:
            return self._failed(template, str(exc))
        if not branch:
            return None
        attached = yield AttachWorktree(branch, self.label)
        if not isinstance(attached, WorktreeAttached):
            return self._failed(branch, attached.message)
        self.attached, self.branch = attached, branch
        absolute_run_dir(context, attached.origin)
        self.sc.emit(SUB_LOOP_WORKTREE_ATTACHED, branch=branch, path=str(attached.path))
        return None

    def place(self, request: Request) -> Request:
        """A child's action runs in the worktree (a deeper child's own worktree wins)."""
        if self.attached is None or not isinstance(request, RunAction) or request.cwd:
            return request
        return dataclasses.replace(request, cwd=self.attached.path)

    def detach(self) -> Generator[Request, Any, None]:
        """Remove the worktree, if any (the branch stays)."""
        if self.attached is None:
            return
        path, self.attached = self.attached.path, None
        failure = yield DetachWorktree(path)
        keys: dict[str, Any] = {"branch": self.branch, "path": str(path)}
        if failure:
            keys["error"] = failure
        self.sc.emit(SUB_LOOP_WORKTREE_DETACHED, **keys)

    def record(self) -> dict[str, str] | None:
        """What the child's saved place says of the worktree (None: there is none)."""
        if self.attached is None:
            return None
        return {"branch": self.branch, "path": str(self.attached.path)}

    def _failed(self, branch: str, message: str) -> ChildOutcome:
        self.sc.emit(SUB_LOOP_WORKTREE_ERROR, branch=branch, error=message)
        return ChildOutcome("error", "error", error=message)


def absolute_run_dir(context: dict[str, Any], origin: Path) -> None:
    """A relative `run_dir` names the project's directory, not one in the worktree."""
    run_dir = context.get("run_dir")
    if isinstance(run_dir, str) and run_dir and not Path(run_dir).is_absolute():
        absolute = str(origin / run_dir)
        context["run_dir"] = absolute + "/" if run_dir.endswith("/") else absolute
