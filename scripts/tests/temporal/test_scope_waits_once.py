"""A loop with a `scope` whose checkout has no workflow worker says once that it waits for
one, however many times it asks the server meanwhile (issue 29 item 11). Real dev
server; the client's questions to it (`DescribeTaskQueue`, one per poll) are counted, so
the test waits for polls, never for a time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import WAIT_SECONDS

POLLS_WITHOUT_A_WORKER = 4


async def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def _counting(method: Callable[..., Awaitable[Any]], calls: list[float]) -> Callable[..., Any]:
    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(time.monotonic())
        return await method(*args, **kwargs)

    return counted


def test_a_scoped_run_without_a_worker_says_once_that_it_waits(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    from temporalio.client import Client
    from workflow_support import checkout_with, unique

    from little_loops.fsm.schema import FSMLoop
    from little_loops.fsm.temporal.client import LoopRuns
    from little_loops.fsm.temporal.worker import build_worker

    checkout = checkout_with(tmp_path / "co", "scoped", "name: scoped\n")
    fsm = FSMLoop.from_dict(
        {
            "name": "scoped",
            "initial": "done",
            "scope": ["src"],
            "states": {"done": {"terminal": True}},
        }
    )
    queue = unique("queue")
    told: list[str] = []
    polls: list[float] = []

    async def scenario() -> int:
        client = await Client.connect(
            temporal_dev_server.address, namespace=temporal_dev_server.namespace
        )
        service = client.workflow_service
        service.describe_task_queue = _counting(service.describe_task_queue, polls)  # type: ignore[method-assign]
        runs = LoopRuns(client, checkout, checkout / ".loops", queue)
        claiming = asyncio.create_task(runs.claim_scope(fsm, on_wait=told.append))
        await _until(lambda: len(polls) >= POLLS_WITHOUT_A_WORKER, "the client's polls")
        asked = len(polls)
        async with build_worker(client, runs.task_queue):
            await asyncio.wait_for(claiming, WAIT_SECONDS)
            claims = await runs.scope_claims()
        await client.get_workflow_handle(runs.scope_registry_id()).terminate()
        assert [claim.loop for claim in claims] == ["scoped"]
        return asked

    asked = asyncio.run(asyncio.wait_for(scenario(), WAIT_SECONDS))
    assert asked >= POLLS_WITHOUT_A_WORKER
    assert told == [
        f"Waiting for a worker: none runs the workflows of task queue '{queue}' "
        "(start `ll-loop worker` in that checkout)"
    ]
