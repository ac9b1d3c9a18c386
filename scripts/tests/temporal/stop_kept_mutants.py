"""Loop workflows that read a stop differently from `LoopWorkflow` (`STOP_KEPT`), for the
replay tests of `test_stop_kept_replay.py` (a module of its own for the workflow sandbox)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.temporal.payloads import RunInput, RunOutcome
    from little_loops.fsm.temporal.workflow import WORKFLOW_NAME, LoopWorkflow


@workflow.defn(name=WORKFLOW_NAME)
class UnguardedStopKept(LoopWorkflow):
    """The stop read from the workflow's state, recorded history or not."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(run)

    def _stop_asked(self) -> bool:
        return workflow.cancellation_reason() is not None


@workflow.defn(name=WORKFLOW_NAME)
class StopNotKept(LoopWorkflow):
    """As before the change: only an activity or a timer that sees the stop keeps it."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(run)

    def _stop_asked(self) -> bool:
        return False
