"""The activities of a `worktree:` sub-loop on the Temporal engine (spec §4.6): attach a
fresh worktree of the branch before its child workflow runs, and remove it afterwards,
on the checkout's host (where the repository is), as the local engine does in its own
process (`engine.child_loader`). The child's actions then run in the worktree
(`ActionInput.cwd`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity

from little_loops.fsm.engine.child_loader import add_branch_worktree as add_here
from little_loops.fsm.engine.child_loader import attach_worktree as attach_here
from little_loops.fsm.engine.child_loader import detach_worktree as detach_here
from little_loops.fsm.engine.sub_loop_requests import WorktreeAttached
from little_loops.fsm.temporal.payloads import WorktreeInput, WorktreeOutput

__all__ = ["WORKTREE_ACTIVITIES", "add_branch_worktree", "attach_worktree", "detach_worktree"]


@activity.defn(name="ll-loop.attach_worktree")
async def attach_worktree(request: WorktreeInput) -> WorktreeOutput:
    """A fresh worktree of `request.branch` under the checkout's loops dir, or why not."""
    checkout = Path(request.checkout)
    loops_dir = Path(request.loops_dir)
    attached = await asyncio.to_thread(
        attach_here, request.branch, loops_dir, request.label, checkout
    )
    if not isinstance(attached, WorktreeAttached):
        return WorktreeOutput(error=attached.message)
    return WorktreeOutput(path=str(attached.path), origin=str(attached.origin))


@activity.defn(name="ll-loop.detach_worktree")
async def detach_worktree(request: WorktreeInput) -> str | None:
    """Remove the worktree at `request.path` (its branch stays); None, or why not."""
    assert request.path is not None
    return await asyncio.to_thread(detach_here, Path(request.path), Path(request.checkout))


@activity.defn(name="ll-loop.add_branch_worktree")
async def add_branch_worktree(request: WorktreeInput) -> WorktreeOutput:
    """A `parallel:` item's worktree on its own branch (issue 25), or why not."""
    attached = await asyncio.to_thread(
        add_here,
        request.branch,
        Path(request.loops_dir),
        request.label,
        request.fresh,
        Path(request.checkout),
    )
    if not isinstance(attached, WorktreeAttached):
        return WorktreeOutput(error=attached.message)
    return WorktreeOutput(path=str(attached.path), origin=str(attached.origin))


WORKTREE_ACTIVITIES: list[Callable[..., Any]] = [
    attach_worktree,
    detach_worktree,
    add_branch_worktree,
]
