"""The parent's side of a HEAD sub-loop run as a Temporal child workflow (spec §4).

A workflow serves `RunChild` by starting the child workflow (`child_workflow`) on its
own task queue, with an id made of its own id, the calling state, its iteration and its
run (the same on a replay, another on each visit or resume). The child closes with its
parent (`ParentClosePolicy.REQUEST_CANCEL`), and a `stop` of the parent while it waits
is passed to the child (the SDK asks it to cancel and waits for its end): the child's
running action is cancelled, its run ends interrupted, and so does the parent's, the
child's place kept in the parent's record for `resume`.

While the child runs, its progress comes as `child_progress` signals (its events, its
place): `ChildWorkflows.relay` passes them to the child's run as the parent's core built
it, which emits them into the parent's events and keeps the place in its record.

Runs started before this change ran their children inside their own workflow: the
`CHILD_WORKFLOWS` patch keeps them doing so when their histories replay.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, TemporalError

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.engine.requests import ChildToRun, RunChild
    from little_loops.fsm.engine.spending import RunSpending
    from little_loops.fsm.engine.step_result import Ending, ExecutionResult
    from little_loops.fsm.engine.sub_loop_requests import ChildEnded, ChildSpec
    from little_loops.fsm.temporal.payloads import (
        ChildProgress,
        ChildRunInput,
        ChildRunOutput,
        RunInput,
    )

__all__ = [
    "CHILD_WORKFLOWS",
    "CHILD_WORKFLOW_NAME",
    "PROGRESS_SIGNAL",
    "ChildWorkflows",
    "child_ended",
    "child_output",
    "ended_unrun",
]

CHILD_WORKFLOWS = "ll-loop:2026-11:child-workflows"
"""`workflow.patched` name: a sub-loop runs as a child workflow (before it, its states ran
in the parent's workflow, their activities in the parent's history)."""

CHILD_WORKFLOW_NAME = "ll-loop.child"
PROGRESS_SIGNAL = "child_progress"

_ENDING_FIELDS = (
    "terminated_by",
    "error",
    "continuation_prompt",
    "stop_reason",
    "exhausted",
    "error_detail",
)


class ChildWorkflows:
    """The child workflows a workflow waits for, by id (to pass their progress on)."""

    def __init__(self) -> None:
        self._running: dict[str, ChildToRun] = {}

    async def forward(self, signal_name: str, arg: Any) -> None:
        """Pass a signal on to the child workflows under way (an answer to a question
        a sub-loop asked: `approvals`); a child that ended meanwhile is skipped."""
        for child_id in list(self._running):
            handle = workflow.get_external_workflow_handle(child_id)
            with contextlib.suppress(TemporalError, asyncio.CancelledError):
                await handle.signal(signal_name, arg)

    def relay(self, progress: ChildProgress) -> None:
        child = self._running.get(progress.child_id)
        if child is not None:  # (a child that ended is told nothing more)
            child.relay(progress.events, progress.records)

    async def run(
        self, run: RunInput, request: RunChild, stopped: Callable[[], None]
    ) -> ChildEnded:
        """Run `request`'s child as a child workflow to its end. `run`: the top-level
        run's input; `stopped()` tells the parent's core a stop came (before the child
        could start, or as it ended)."""
        child = request.child
        spec = child.spec()
        info = workflow.info()
        child_id = f"{info.workflow_id}/{spec.parent_state}@{spec.parent_iteration}"
        child_id += f"/{info.run_id[:8]}"
        self._running[child_id] = child
        try:
            return await self._started(run, child, spec, child_id, stopped)
        finally:
            del self._running[child_id]

    async def _started(
        self,
        run: RunInput,
        child: ChildToRun,
        spec: ChildSpec,
        child_id: str,
        stopped: Callable[[], None],
    ) -> ChildEnded:
        child_input = ChildRunInput(run, workflow.info().workflow_id, spec)
        try:
            handle = await workflow.start_child_workflow(
                CHILD_WORKFLOW_NAME,
                child_input,
                id=child_id,
                task_queue=run.task_queue,
                result_type=ChildRunOutput,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
            )
        except asyncio.CancelledError:
            stopped()
            return ended_unrun(spec, Ending("signal"))
        try:
            output: ChildRunOutput = await handle
        except ChildWorkflowError as exc:
            message = f"the sub-loop's workflow {child_id} failed: {exc.cause or exc}"
            return ended_unrun(spec, Ending("error", message))
        child.relay(output.events, output.records)
        if workflow.cancellation_reason() is not None:
            stopped()  # a stop that came as the child ended normally stops the parent too
        return child_ended(output)


def child_ended(output: ChildRunOutput) -> ChildEnded:
    """The `ChildEnded` a child workflow sent back."""
    result = ExecutionResult(**output.result)
    return ChildEnded(
        ending=Ending(**output.ending),
        result=result,
        captured=result.captured,
        spending=RunSpending.from_dict(output.spending),
        handoff_count=output.handoff_count,
        limit_wait=output.limit_wait,
        fatal=output.fatal,
        rate_limit=output.rate_limit,
    )


def child_output(
    ended: ChildEnded,
    *,
    rate_limit: dict[str, Any],
    events: list[dict[str, Any]],
    records: list[dict[str, Any]],
) -> ChildRunOutput:
    """What a child workflow sends back (see `ChildRunOutput`)."""
    return ChildRunOutput(
        ending={name: getattr(ended.ending, name) for name in _ENDING_FIELDS},
        result=ended.result.to_dict(),
        spending=ended.spending.to_dict(),
        handoff_count=ended.handoff_count,
        limit_wait=ended.limit_wait,
        fatal=ended.fatal,
        rate_limit=rate_limit,
        events=events,
        records=records,
    )


def ended_unrun(spec: ChildSpec, ending: Ending) -> ChildEnded:
    """A child that did not run (stopped before it started, or its workflow failed): it
    ends where its record stands."""
    record = spec.records[0]
    captured: dict[str, Any] = record.get("captured") or {}
    result = ExecutionResult(
        final_state=str(record["current_state"]),
        iterations=int(record.get("iteration") or 0),
        terminated_by=ending.terminated_by,
        duration_ms=int(record.get("elapsed_ms") or 0),
        captured=captured,
        error=ending.error,
    )
    return ChildEnded(ending, result, captured, RunSpending(), limit_wait=record.get("limit_wait"))
