"""Loop workflows whose routing changed after a history was recorded: replaying a recorded
`hello` against them must fail; and one that takes the run core's named changes
(`engine.revisions`) unguarded, as if `workflow.patched` were not there (a module of its
own for the workflow sandbox)."""

from __future__ import annotations

import copy
import dataclasses

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from little_loops.fsm.temporal.payloads import RunInput, RunOutcome
    from little_loops.fsm.temporal.workflow import WORKFLOW_NAME, LoopWorkflow


def _with_check_target(run: RunInput, target: int) -> RunInput:
    loop = copy.deepcopy(run.loop)
    loop["states"]["check"]["evaluate"]["target"] = target
    return dataclasses.replace(run, loop=loop)


@workflow.defn(name=WORKFLOW_NAME)
class FewerActions(LoopWorkflow):
    """hello's `check` is content with a count of 1: one `bump` fewer than recorded."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(_with_check_target(run, 1))


@workflow.defn(name=WORKFLOW_NAME)
class OtherStateSameSlot(LoopWorkflow):
    """hello's `check` wants a count of 3: `bump` runs where the recorded run ran `wave`."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(_with_check_target(run, 3))


@workflow.defn(name=WORKFLOW_NAME)
class UnguardedRevisions(LoopWorkflow):
    """Every change of `engine.revisions` applied, recorded history or not."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(run)

    def _revised(self, name: str) -> bool:
        return True
