"""A loop workflow that runs every sub-loop as a child workflow, as if the
`CHILD_WORKFLOWS` patch were not there (a module of its own for the workflow sandbox)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.engine.core import RunCore
    from little_loops.fsm.engine.requests import ChildEnded, RunChild
    from little_loops.fsm.temporal.payloads import RunInput, RunOutcome
    from little_loops.fsm.temporal.workflow import WORKFLOW_NAME, LoopWorkflow


@workflow.defn(name=WORKFLOW_NAME)
class UnguardedChildWorkflows(LoopWorkflow):
    """A sub-loop always starts a child workflow, recorded history or not."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(run)

    async def _run_child(self, core: RunCore, request: RunChild) -> ChildEnded:
        return await self._children.run(self._top_run(), request, core.request_shutdown)
