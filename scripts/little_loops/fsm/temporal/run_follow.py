"""Following a Temporal run: its events as they happen, until it ends or pauses.

`RunFollower` asks the loop's workflow for its events page by page (the same events a
local run gives its display) and for its outcome; it waits for a worker while none runs
the workflow, and for a run that is over it gives the events it missed when a worker still
answers. `LoopRuns.follow` (client.py) delegates here; the follower needs of the runs only
what `FollowedRuns` names.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from temporalio.client import Client, WorkflowHandle
from temporalio.service import RPCError

from little_loops.fsm.temporal.payloads import RunOutcome
from little_loops.fsm.temporal.presence import (
    WORKER_POLL_SECONDS,
    NoWorkflowWorkerError,
    is_unanswered,
    wait_for_workflow_worker,
)
from little_loops.fsm.temporal.timeouts import Timeouts
from little_loops.fsm.temporal.workflow import LoopWorkflow

FOLLOW_POLL_SECONDS = 0.2
QUERY_RETRIES = 20
ENDED_QUERY_TIMEOUT = timedelta(seconds=5)
"""How long a follower of an ended run waits for a worker to give the events it missed."""


class FollowedRuns(Protocol):
    """What a follower asks of `client.LoopRuns`."""

    client: Client
    task_queue: str
    timeouts: Timeouts

    def handle(self, loop_name: str) -> WorkflowHandle[Any, Any]: ...

    def workflow_id(self, loop_name: str) -> str: ...

    async def ended(self, loop_name: str) -> RunOutcome | None: ...

    async def workflow_worker_polls(self) -> bool: ...


@dataclass
class RunFollower:
    """Follows the runs of `runs` (one checkout's loops on one server)."""

    runs: FollowedRuns

    async def follow(
        self,
        loop_name: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        since: int = 0,
        poll_seconds: float = FOLLOW_POLL_SECONDS,
        on_wait: Callable[[str], None] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> RunOutcome:
        """Feed the run's events from number `since` to `on_event` until it ends or
        pauses; return how it did.

        While no worker runs the workflow, wait for one, telling `on_wait` once; give up
        with `NoWorkflowWorkerError` if `stopping()` turns true meanwhile.
        """
        handle = self.runs.handle(loop_name)
        tell = _once(on_wait)
        # Over already: its result needs no worker, and a worker the server still lists
        # after it stopped would leave every query to time out first.
        ended = await self.runs.ended(loop_name)
        if ended is not None:
            await self._deliver_missed(handle, since, ended, on_event)
            return ended
        if not await self.runs.workflow_worker_polls():
            await wait_for_workflow_worker(
                self.runs.client, self.runs.task_queue, on_wait=tell, stopping=stopping
            )
        failures = 0
        while True:
            try:
                since = await self._deliver(handle, since, on_event)
                outcome = await self._outcome(loop_name)
            except RPCError as exc:
                if is_unanswered(exc):
                    ended = await self._unanswered(loop_name, since, on_event, tell, stopping)
                    if ended is not None:
                        return ended
                    continue
                # A query that lands as the run continues as new (or as its worker
                # restarts) can fail: ask again, and give up only if it keeps failing.
                failures += 1
                if failures > QUERY_RETRIES:
                    raise
                await asyncio.sleep(poll_seconds)
                continue
            failures = 0
            if outcome is not None:
                await self._deliver(handle, since, on_event)
                return outcome
            await asyncio.sleep(poll_seconds)

    async def _unanswered(
        self,
        loop_name: str,
        since: int,
        on_event: Callable[[dict[str, Any]], None],
        tell: Callable[[str], None],
        stopping: Callable[[], bool],
    ) -> RunOutcome | None:
        """After a query no worker answered: the run's outcome when it is over (its last
        events too, if a worker answers for them), else None once a worker polls again
        (`tell` why it waits; `NoWorkflowWorkerError` when `stopping()`)."""
        ended = await self.runs.ended(loop_name)
        if ended is not None:
            with contextlib.suppress(RPCError):
                await self._deliver(self.runs.handle(loop_name), since, on_event)
            return ended
        if stopping():
            raise NoWorkflowWorkerError(self.runs.task_queue)
        tell(f"Waiting for a worker: none answers for {self.runs.workflow_id(loop_name)}")
        await wait_for_workflow_worker(
            self.runs.client, self.runs.task_queue, on_wait=tell, stopping=stopping
        )
        # The server lists a dead worker's polls for some minutes, and may refuse a query
        # at once meanwhile: ask again in a while.
        await asyncio.sleep(WORKER_POLL_SECONDS)
        return None

    async def _deliver_missed(
        self,
        handle: WorkflowHandle[Any, Any],
        since: int,
        ended: RunOutcome,
        on_event: Callable[[dict[str, Any]], None],
    ) -> None:
        """The events of an ended run from number `since`, when a worker answers for them
        at once; without them otherwise (the outcome says how the run ended)."""
        if since >= ended.carry.event_offset or not await self.runs.workflow_worker_polls():
            return
        with contextlib.suppress(RPCError):
            limit = min(ENDED_QUERY_TIMEOUT, self.runs.timeouts.query)
            await self._deliver(handle, since, on_event, rpc_timeout=limit)

    async def _deliver(
        self,
        handle: WorkflowHandle[Any, Any],
        since: int,
        on_event: Callable[[dict[str, Any]], None],
        *,
        rpc_timeout: timedelta | None = None,
    ) -> int:
        limit = rpc_timeout or self.runs.timeouts.query
        page = await handle.query(LoopWorkflow.events, since, rpc_timeout=limit)
        for event in page.events:
            on_event(event)
        return page.first + len(page.events)

    async def _outcome(self, loop_name: str) -> RunOutcome | None:
        """How the run ended or paused, or None while it runs.

        The workflow's `outcome` query answers for a closed run too. A run closed without
        one (failed, terminated) never will: that is an error (`LoopRuns.ended`). Not waiting on
        the result itself keeps a time-skipping test server's clock as it was.
        """
        outcome: RunOutcome | None = await self.runs.handle(loop_name).query(
            LoopWorkflow.outcome, rpc_timeout=self.runs.timeouts.query
        )
        return outcome if outcome is not None else await self.runs.ended(loop_name)


def _once(say: Callable[[str], None] | None) -> Callable[[str], None]:
    """`say`, called for the first message only (a wait is told once)."""
    said: list[str] = []

    def tell(message: str) -> None:
        if not said and say is not None:
            say(message)
        said.append(message)

    return tell
