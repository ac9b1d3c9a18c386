"""A loop workflow that runs a `parallel:` fan-out's items one at a time, whatever
`max_workers` says (a module of its own for the workflow sandbox): replaying a recorded
fan-out against it must fail, so the replay test can tell the fan-out apart."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import dataclasses

    from little_loops.fsm.engine.core import RunCore
    from little_loops.fsm.engine.requests import Request, RunBranches
    from little_loops.fsm.temporal.parallel_branches import run_branches
    from little_loops.fsm.temporal.payloads import RunInput, RunOutcome
    from little_loops.fsm.temporal.workflow import WORKFLOW_NAME, LoopWorkflow


class _OneAtATime:
    def __init__(self, fanout: object) -> None:
        self._fanout = fanout
        self.max_workers = 1

    def __getattr__(self, name: str) -> object:
        return getattr(self._fanout, name)


@workflow.defn(name=WORKFLOW_NAME)
class OneItemAtATime(LoopWorkflow):
    """Serves `RunBranches` with one worker."""

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        return await super().run(run)

    async def _serve(self, core: RunCore, request: Request) -> object:
        if isinstance(request, RunBranches):
            one = dataclasses.replace(request, fanout=_OneAtATime(request.fanout))  # type: ignore[arg-type]
            serve = lambda inner: self._serve(core, inner)  # noqa: E731
            return await run_branches(one, serve, core.request_shutdown)
        return await super()._serve(core, request)
