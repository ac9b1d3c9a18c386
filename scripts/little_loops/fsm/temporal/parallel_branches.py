"""A `parallel:` fan-out on the Temporal engine (issue 25).

A workflow serves `RunBranches` here: up to `max_workers` branches at once, each an
asyncio task of the workflow (deterministic on replay) that serves its branch's requests
as the workflow serves any: its worktree by an activity on the checkout's host, its item's
child (`RunChild`) as a child workflow (`sub_loop_children`), so the items spread over the
workers. Ended branches are handed to the fan-out in item order, whatever order they
ended in. `fail_fast` starts no further item and cancels the running ones' tasks (their
child workflows with them).

The whole fan-out goes behind the `PARALLEL_BRANCHES` patch (histories recorded before it
never served a fan-out).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.engine.requests import (
        BranchToRun,
        FanoutToRun,
        Request,
        RunBranches,
        RunChild,
    )
    from little_loops.fsm.engine.run_requests import Finish
    from little_loops.fsm.engine.step_result import Ending
    from little_loops.fsm.temporal.sub_loop_children import ended_unrun

__all__ = ["PARALLEL_BRANCHES", "run_branches"]

PARALLEL_BRANCHES = "ll-loop:2026-11:parallel-branches"
"""`workflow.patched` name: a `parallel:` state's items run as child workflows."""

Serve = Callable[[Request], Awaitable[Any]]


async def run_branches(request: RunBranches, serve: Serve, stopped: Callable[[], None]) -> None:
    """Run the fan-out's branches to their end (see the module docstring). A `stop`
    (the workflow's cancellation) cancels every running branch's task, whose child
    workflow then stops with its place kept; `stopped()` tells the core."""
    workflow.patched(PARALLEL_BRANCHES)
    fanout = request.fanout
    running: dict[int, asyncio.Task[BranchToRun]] = {}
    cut: set[int] = set()  # cancelled by `fail_fast` (not a stop of the run)
    _start_more(fanout, running, serve)
    while running:
        try:
            await workflow.wait_condition(lambda: any(task.done() for task in running.values()))
        except asyncio.CancelledError:
            stopped()
            for task in running.values():
                task.cancel()
            await workflow.wait_condition(lambda: all(task.done() for task in running.values()))
        for index in sorted(index for index, task in running.items() if task.done()):
            task = running.pop(index)
            if task.cancelled() or task.exception() is not None:
                if index not in cut:  # the run stops; the item's place is its last saved
                    stopped()
                continue  # (an item cut short before its child started: `cancelled`)
            for other in fanout.branch_ended(task.result()):
                other.cancel()
                cut.add(other.index)
                running[other.index].cancel()
        _start_more(fanout, running, serve)


def _start_more(
    fanout: FanoutToRun, running: dict[int, asyncio.Task[BranchToRun]], serve: Serve
) -> None:
    while len(running) < fanout.max_workers:
        branch = fanout.next_branch()
        if branch is None:
            return
        running[branch.index] = asyncio.create_task(_drive(branch, serve))


async def _drive(branch: BranchToRun, serve: Serve) -> BranchToRun:
    """One branch's requests served until its `Finish`; a branch cancelled while its
    child workflow ran ends where that child's place stands (ending `signal`)."""
    request = branch.next_request()
    while not isinstance(request, Finish):
        try:
            result = await serve(request)
        except asyncio.CancelledError:
            if not isinstance(request, RunChild):
                raise
            result = ended_unrun(request.child.spec(), Ending("signal"))
        branch.submit(result)
        request = branch.next_request()
    return branch
