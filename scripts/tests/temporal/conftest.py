"""Fixtures of the tests that drive the real `ll-loop` commands and `ll-loop worker`
processes against the dev server (`temporal_dev_server`, in the tests' root conftest).

The dev server is shared by the tests of a session (of an xdist worker): every test that
uses it terminates, at its end, the runs it left open (`_no_open_run_left_behind`), and a
test that lists the server's runs looks only at its own."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import cli_env
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import Worker


@pytest.fixture
def env(temporal_dev_server: DevServer, tmp_path: Path) -> dict[str, str]:
    """The environment of an `ll-loop` process on the dev server (`LL_ENGINE=temporal`)."""
    return {**cli_env(tmp_path), **temporal_dev_server.env(), "LL_ENGINE": "temporal"}


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """The `ll-loop worker` processes a test starts (it appends them): stopped after it."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.fixture(autouse=True)
def _no_open_run_left_behind(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[None]:
    """After a test on the dev server: its checkouts' loop workflows (and scope registries)
    that are still open are terminated, so no later test finds them there."""
    yield
    if "temporal_dev_server" not in request.fixturenames:
        return
    server: DevServer = request.getfixturevalue("temporal_dev_server")
    checkouts = [path for path in (tmp_path, *tmp_path.iterdir()) if _has_loops(path)]
    asyncio.run(terminate_open_runs(server, checkouts))


def _has_loops(path: Path) -> bool:
    return (path / ".loops").is_dir()


async def terminate_open_runs(server: DevServer, checkouts: list[Path]) -> list[str]:
    """Terminate the open workflows of the loops in `checkouts` (the files of `.loops/`)
    and of their scope registries; return the ids of those that were open."""
    from temporalio.client import Client, WorkflowExecutionStatus
    from temporalio.service import RPCError

    from little_loops.fsm.temporal.names import scope_registry_id_for, workflow_id_for

    client = await Client.connect(server.address, namespace=server.namespace)
    ids = [scope_registry_id_for(checkout) for checkout in checkouts] + [
        workflow_id_for(path.stem, checkout)
        for checkout in checkouts
        for path in sorted((checkout / ".loops").glob("*.yaml"))
    ]
    terminated = []
    for workflow_id in ids:
        handle = client.get_workflow_handle(workflow_id)
        with contextlib.suppress(RPCError):  # never started
            if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handle.terminate(reason="the test that started it ended")
                terminated.append(workflow_id)
    return terminated
