"""Two tiny workflows the server smoke tests run (a module of their own, so that the
workflow sandbox re-imports only temporalio and this file)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn
async def shout(text: str) -> str:
    return text.upper()


@workflow.defn
class GreetAfterSignal:
    """Runs an activity, then waits for a `resume` signal carrying the rest of its answer."""

    def __init__(self) -> None:
        self._prompt: str | None = None
        self._loud = ""

    @workflow.run
    async def run(self, text: str) -> str:
        self._loud = await workflow.execute_activity(
            shout, text, start_to_close_timeout=timedelta(seconds=60)
        )
        await workflow.wait_condition(lambda: self._prompt is not None)
        return f"{self._loud} {self._prompt}"

    @workflow.signal
    def resume(self, prompt: str) -> None:
        self._prompt = prompt

    @workflow.query
    def shouted(self) -> str:
        return self._loud


@workflow.defn
class Nap:
    """Sleeps an hour of workflow time and says how much workflow time passed."""

    @workflow.run
    async def run(self) -> float:
        before = workflow.now()
        await workflow.sleep(timedelta(hours=1))
        return (workflow.now() - before).total_seconds()
