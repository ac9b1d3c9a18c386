"""The Temporal server fixtures work: each server runs a workflow (scripts/tests/conftest.py,
scripts/tests/fixtures/temporal_servers.py)."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from pathlib import Path

import pytest
from fixtures.temporal_servers import DevServer, TimeSkipping, dev_server, wait_until_answers

try:
    from server_smoke_workflows import GreetAfterSignal, Nap, shout
    from temporalio.client import Client
    from temporalio.worker import Worker
except ImportError:  # no temporalio: the server fixtures skip, or fail in CI, saying so
    pass

WAIT_SECONDS = 60.0


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_time_skipping_server_skips_an_hour_of_workflow_time(time_skipping: TimeSkipping) -> None:
    async def scenario() -> float:
        queue = _unique("nap")
        async with Worker(time_skipping.client, task_queue=queue, workflows=[Nap]):
            run = time_skipping.client.execute_workflow(
                Nap.run, id=_unique("nap"), task_queue=queue
            )
            return await asyncio.wait_for(run, WAIT_SECONDS)  # an hour if nothing skipped

    assert time_skipping.run(scenario()) >= 3600.0


def test_dev_server_runs_activity_query_and_signal(temporal_dev_server: DevServer) -> None:
    assert temporal_dev_server.address.startswith("127.0.0.1:")
    assert asyncio.run(_greet(temporal_dev_server)) == "HELLO world"


async def _greet(server: DevServer) -> str:
    client = await Client.connect(server.address, namespace=server.namespace)
    queue = _unique("greet")
    async with Worker(client, task_queue=queue, workflows=[GreetAfterSignal], activities=[shout]):
        handle = await client.start_workflow(
            GreetAfterSignal.run, "hello", id=_unique("greet"), task_queue=queue
        )
        await _until_shouted(client, handle.id)
        await handle.signal(GreetAfterSignal.resume, "world")
        return await asyncio.wait_for(handle.result(), WAIT_SECONDS)


async def _until_shouted(client: Client, workflow_id: str) -> None:
    handle = client.get_workflow_handle_for(GreetAfterSignal.run, workflow_id)
    async with asyncio.timeout(WAIT_SECONDS):
        while await handle.query(GreetAfterSignal.shouted) != "HELLO":
            await asyncio.sleep(0.1)


def test_dev_server_env_points_ll_loop_at_it(temporal_dev_server: DevServer) -> None:
    assert temporal_dev_server.env() == {
        "LL_TEMPORAL_ADDRESS": temporal_dev_server.address,
        "LL_TEMPORAL_NAMESPACE": "default",
    }


def test_dev_server_leaves_no_process_behind(temporal_cli_path: Path, tmp_path: Path) -> None:
    with dev_server(temporal_cli_path, tmp_path) as server:
        assert server.process.poll() is None
    assert server.process.poll() is not None
    assert (tmp_path / "temporal.sqlite").exists()  # its files stay in the test's directory


def test_dev_server_that_dies_at_start_is_reported_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("bind: address already in use\n")
    process = subprocess.Popen(["false"])
    process.wait()
    server = DevServer("127.0.0.1:9", "default", log, process)
    with pytest.raises(RuntimeError, match="exited early:\nbind: address already in use"):
        wait_until_answers(server)
