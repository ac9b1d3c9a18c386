"""`ChildLoopWorkflow`: a HEAD sub-loop's child run as a Temporal child workflow (§4).

Its parent's workflow starts it for a `RunChild` request (`sub_loop_children`). It is a
`LoopWorkflow` that drives the child's core instead of a top-level one, built again from
the `ChildSpec` (the prepared loop, the place it starts or resumes at, its depth and
chain): its actions, judging, checkpoints and waits are activities and timers of its own
history, served as the loop workflow serves them, and a grandchild is a child workflow of
its own. The top-level run's settings (handoff, logs, checkout, task queue) stay its
parent's. A `worktree:` child's actions run in the worktree its parent attached (by an
activity on the checkout's host, `worktree_activities`), named in its spec.

Its events (with `depth`) and its place go to the parent as `child_progress` signals, in
order, sent by a task of their own while the child goes on; the last ones come back with
its end (`ChildRunOutput`). A `stop` of the parent cancels it: the running action is
cancelled, its core stops, and it returns ending `signal` with its place, which its
parent keeps. It never continues as new and never pauses on its own: a handoff or a usage
limit ends it, and the parent's run pauses with its place.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
from typing import Any

from temporalio import workflow
from temporalio.exceptions import TemporalError

with workflow.unsafe.imports_passed_through():
    from pathlib import Path

    from little_loops.fsm.engine.child_run import AttachedWorktree, ChildRun, SubLoopFrame
    from little_loops.fsm.engine.core import RunCore
    from little_loops.fsm.engine.run_guards import RunGuards
    from little_loops.fsm.engine.run_requests import Finish
    from little_loops.fsm.engine.sub_loop_record import restore_guards, restored_cursor
    from little_loops.fsm.engine.sub_loop_requests import ChildSpec
    from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
    from little_loops.fsm.model.head_loop import loop_from_dict
    from little_loops.fsm.signal_detector import SignalDetector
    from little_loops.fsm.temporal.payloads import (
        ChildProgress,
        ChildRunInput,
        ChildRunOutput,
        ResumeSignal,
        RunInput,
        RunOutcome,
    )
    from little_loops.fsm.temporal.sub_loop_children import (
        CHILD_WORKFLOW_NAME,
        PROGRESS_SIGNAL,
        child_output,
    )
    from little_loops.fsm.temporal.workflow import LoopWorkflow, WorkflowClock

__all__ = ["ChildLoopWorkflow"]


@workflow.defn(name=CHILD_WORKFLOW_NAME)
class ChildLoopWorkflow(LoopWorkflow):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__()
        self._unsent: list[dict[str, Any]] = []  # events not told to the parent yet
        self._sending: asyncio.Task[None] | None = None  # tells them, in order
        self._closing = False  # the end carries what is left
        self._parent_id = ""
        self._spec: ChildSpec | None = None
        self._records: list[dict[str, Any]] = []
        self._run_input: RunInput | None = None

    # -- signals and queries (`events` and `child_progress` are the loop workflow's) ----

    @workflow.signal
    def resume(self, signal: ResumeSignal) -> None:
        """A child does not pause on its own (its parent's run does): nothing to do."""

    @workflow.query
    def status(self) -> dict[str, Any] | None:
        """The child's place (a `head.sub_loops` record; the run's status is its parent's)."""
        spec = self._spec
        return self._records[spec.depth - 1] if spec is not None and self._records else None

    @workflow.query
    def outcome(self) -> RunOutcome | None:
        return None

    # -- the run ------------------------------------------------------------------------

    @workflow.run
    async def run(self, child: ChildRunInput) -> ChildRunOutput:  # type: ignore[override]
        spec, top = child.spec, child.run
        self._spec, self._parent_id, self._run_input = spec, child.parent_id, top
        # The child's loop is what its states are judged against; the rest is the run's.
        self._input = dataclasses.replace(
            top, loop=spec.loop, dialect=spec.dialect, carry=None, resume=None
        )
        self._fsm = loop_from_dict(top.loop, top.dialect)
        run = self._child_run(spec)
        core = self._core
        assert core is not None
        request = run.next_request()
        while not isinstance(request, Finish):
            run.submit(await self._serve(core, request))
            request = run.next_request()
        ended = run.ended(request)
        self._closing = True
        with contextlib.suppress(asyncio.CancelledError):  # stopped meanwhile: it goes on
            await workflow.wait_condition(lambda: self._sending is None)
        rate_limit = core.cursor.head.rate_limit
        events, self._unsent = self._unsent, []
        return child_output(ended, rate_limit=rate_limit, events=events, records=self._tail())

    def _child_run(self, spec: ChildSpec) -> ChildRun:
        """The child's run, at the place its record gives, with its core."""
        self._records = [{} for _ in range(spec.depth - 1)] + copy.deepcopy(spec.records)
        frame = SubLoopFrame(spec.depth, tuple(spec.chain), self._records, self._tell)
        log_dir = Path(spec.log_dir) if spec.log_dir is not None else None
        worktree = spec.worktree
        run = ChildRun(
            frame,
            parent_state=spec.parent_state,
            parent_iteration=spec.parent_iteration,
            path=spec.path,
            log_dir=log_dir,
            worktree=AttachedWorktree(worktree["branch"], worktree["path"]) if worktree else None,
        )
        run.start(self._child_core(spec, run, frame, log_dir))
        return run

    def _child_core(
        self, spec: ChildSpec, run: ChildRun, frame: SubLoopFrame, log_dir: Path | None
    ) -> RunCore:
        fsm = loop_from_dict(spec.loop, spec.dialect)
        record = spec.records[0]
        guards = RunGuards(fsm)
        restore_guards(guards, record)
        cursor = restored_cursor(record, int(workflow.now().timestamp() * 1000))
        cursor.head.rate_limit = copy.deepcopy(spec.rate_limit)
        core = self._core = RunCore(
            fsm,
            clock=WorkflowClock(),
            cursor=cursor,
            guards=guards,
            emit=run.emit,
            env=dict(self._input.env),
            signal_detector=SignalDetector(),
            handoff_handler=HandoffHandler(HandoffBehavior(self._fsm.on_handoff)),
            log_dir=log_dir if self._input.keep_logs else None,
            checkpoints=self._fsm.checkpoint == "git",
            revised=self._revised,
            sub_loop_frame=frame,
            choices=self._input.choices,
        )
        return core

    def _top_run(self) -> RunInput:
        assert self._run_input is not None
        return self._run_input

    # -- telling the parent ---------------------------------------------------------------

    def _tell(self, event: dict[str, Any]) -> None:
        """An event of the child (or deeper), with its place as it stands: to the parent."""
        self._keep_event(event)
        self._unsent.append(event)
        if self._sending is None and not self._closing:
            self._sending = asyncio.create_task(self._tell_in_order())

    def _tail(self) -> list[dict[str, Any]]:
        spec = self._spec
        assert spec is not None
        return copy.deepcopy(self._records[spec.depth - 1 :])

    async def _tell_in_order(self) -> None:
        parent = workflow.get_external_workflow_handle(self._parent_id)
        while self._unsent and not self._closing:
            events, self._unsent = self._unsent, []
            progress = ChildProgress(workflow.info().workflow_id, events, self._tail())
            try:
                await parent.signal(PROGRESS_SIGNAL, progress)
            except (TemporalError, asyncio.CancelledError) as exc:
                workflow.logger.warning("the parent was not told of the child: %s", exc)
        self._sending = None
