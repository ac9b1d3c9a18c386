"""What an `ll-loop worker` does with action process groups, called in this process (so
coverage sees it; docs/scaling.md §3, issue 23 item 3): at its start it stops what a dead
worker of this host left running; while it serves, it keeps what an action left in the
background until that run's workflow is over; at its end it stops every kept group and
removes its ledger (`temporal.worker_groups`, `temporal.kept_groups`).

Real processes (`sleep` in groups of their own) and a real time-skipping Temporal server;
the workflow that is "over" is one started with no worker and then terminated.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.temporal_servers import TimeSkipping
from temporalio.client import Client

from little_loops.fsm.process.group_watchdog import GroupLedger
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.temporal import kept_groups
from little_loops.fsm.temporal.worker_groups import WORKERS_DIR, worker_groups

GONE_WITHIN_SECONDS = 6.0


@pytest.fixture
def sleepers() -> Iterator[list[subprocess.Popen[bytes]]]:
    """`sleep` processes a test starts, each in a session (group) of its own."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def _sleeper(sleepers: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    sleepers.append(process)
    return process


def _background_action(tmp_path: Path, ledger: GroupLedger) -> tuple[DefaultActionRunner, int]:
    """An action that leaves `sleep` running in its group, as an activity runs it; returns
    its runner and the pid of what it left."""
    runner = DefaultActionRunner(cwd=tmp_path)
    groups: list[ActionGroup] = []
    runner.on_group_running = lambda group: (groups.append(group), ledger.add(group))
    runner.group_notice_seconds = 0.0
    result = runner.run("sleep 300 >/dev/null 2>&1 & echo $! > left.pid", 10, False)
    assert result.exit_code == 0
    assert [group.pgid for group in runner.background.groups] == [group.pgid for group in groups]
    return runner, int((tmp_path / "left.pid").read_text())


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] == "Z"


async def _until_gone(pid: int) -> bool:
    for _ in range(int(GONE_WITHIN_SECONDS / 0.05)):
        if _gone(pid):
            return True
        await asyncio.sleep(0.05)
    return _gone(pid)


def test_a_worker_stops_a_dead_workers_action_and_its_own_kept_groups_at_its_end(
    time_skipping: TimeSkipping,
    tmp_path: Path,
    sleepers: list[subprocess.Popen[bytes]],
) -> None:
    running = tmp_path / ".loops" / ".running"
    workers = running / WORKERS_DIR
    workers.mkdir(parents=True)
    dead_worker = subprocess.Popen(["true"])
    dead_worker.wait()
    orphan = _sleeper(sleepers)
    host = socket.gethostname()
    record = {
        "host": host,
        "worker_pid": dead_worker.pid,
        "groups": [ActionGroup.of(orphan.pid).to_dict()],
    }
    (workers / f"{host}-{dead_worker.pid}.json").write_text(json.dumps(record))
    said: list[str] = []

    async def serve(client: Client) -> int:
        async with worker_groups(client, running, said.append) as kept:
            assert kept_groups.current() is kept
            ours = workers / f"{host}-{os.getpid()}.json"
            assert json.loads(ours.read_text())["groups"] == []
            runner, left = _background_action(tmp_path, kept.ledger)
            kept.keep("ll-loop:never-started", runner, runner.background.groups)
            assert kept.workflow_ids() == ["ll-loop:never-started"]
            await asyncio.sleep(0.2)  # the reaper asks; the server knows no such run
            assert kept.workflow_ids() == ["ll-loop:never-started"]
            assert len(json.loads(ours.read_text())["groups"]) == 1
        return left

    left = time_skipping.run(serve(time_skipping.client))

    assert said == [
        f"Stopped an action left running by a worker that died (pid group {orphan.pid})"
    ]
    assert orphan.wait(timeout=GONE_WITHIN_SECONDS) == -signal.SIGTERM
    assert time_skipping.run(_until_gone(left))  # released at the worker's end
    assert kept_groups.current() is None
    assert list(workers.glob("*.json")) == []


def test_kept_groups_of_a_closed_workflow_are_released_by_the_reaper(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """The run's workflow was terminated (started with no worker to serve it, so it
    never ran): the reaper sees it closed and stops what its action left running."""
    ledger = GroupLedger(tmp_path / WORKERS_DIR)
    kept = kept_groups.KeptGroups(ledger)

    async def scenario(client: Client) -> tuple[list[str], int]:
        handle = await client.start_workflow(
            "NoSuchWorkflow", id="ll-loop:kept-test", task_queue="nobody-serves-this"
        )
        await handle.terminate("the run is over")
        runner, left = _background_action(tmp_path, ledger)
        kept.keep(handle.id, runner, runner.background.groups)
        reaper = asyncio.ensure_future(kept.reap_forever(client, every=0.05))
        try:
            for _ in range(100):
                if not kept.workflow_ids():
                    break
                await asyncio.sleep(0.05)
            return kept.workflow_ids(), left
        finally:
            reaper.cancel()

    after, left = time_skipping.run(scenario(time_skipping.client))

    assert after == []
    assert time_skipping.run(_until_gone(left))
    assert json.loads(ledger.path.read_text())["groups"] == []
    ledger.close()
