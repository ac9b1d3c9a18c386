"""Workers as real processes against the dev server (issue 15's test list): a worker killed
mid-action, and two worktrees on two task queues.

Each worker is an `ll-loop worker` process started in its checkout, so polling that
checkout's task queue (`worker_process`); the client side runs here. A killed worker
leaves its action's process group running (the action has its own session): the retry
on the next worker must stop it before running the action again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fixtures.temporal_servers import DevServer, stop_process_group

try:
    from temporalio.api.enums.v1 import PendingActivityState
    from temporalio.client import Client, WorkflowHandle

    from little_loops.fsm.temporal.names import task_queue_for, workflow_id_for
    from little_loops.fsm.temporal.payloads import RunInput, RunOutcome
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the dev server fixture skips, or fails in CI
    pass

REPO_SCRIPTS = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 120.0


@contextmanager
def worker_process(
    server: DevServer, checkout: Path, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """`ll-loop worker` started in `checkout` (so on its task queue), stopped at the end.
    Its actions see the checkout's name in `LL_TEST_WORKER` (they inherit its environment)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_SCRIPTS), "LL_TEST_WORKER": checkout.name}
    env["LL_TEMPORAL_STICKY_SECONDS"] = "2"  # a run whose worker was killed goes on sooner
    argv = [sys.executable, "-m", "little_loops.cli", "worker", "--address", server.address]
    with log.open("ab") as output:
        process = subprocess.Popen(
            argv,
            cwd=checkout,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        stop_process_group(process)


def one_action_loop(name: str, action: str) -> dict[str, Any]:
    return {
        "name": name,
        "initial": "work",
        "states": {"work": {"action": action, "next": "done"}, "done": {"terminal": True}},
    }


def run_input(checkout: Path, loop: dict[str, Any], **options: Any) -> RunInput:
    return RunInput(
        loop=loop,
        checkout=str(checkout),
        loops_dir=str(checkout / ".loops"),
        task_queue=task_queue_for(checkout),
        host="test",
        **options,
    )


async def start(client: Client, checkout: Path, run: RunInput) -> WorkflowHandle[Any, Any]:
    workflow_id = f"{workflow_id_for(run.loop['name'], checkout)}-{uuid.uuid4().hex[:8]}"
    return await client.start_workflow(
        LoopWorkflow.run, run, id=workflow_id, task_queue=run.task_queue
    )


async def result(handle: WorkflowHandle[Any, Any]) -> RunOutcome:
    outcome: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
    return outcome


def checkout(root: Path, name: str) -> Path:
    path = root / name
    (path / ".loops").mkdir(parents=True)
    return path


def alive(pid: int) -> bool:
    """The process runs (a zombie no longer does)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


# --- a worker killed mid-action ------------------------------------------------------------

# The first attempt records its pid and sleeps; a later attempt records any earlier
# attempt still running as a duplicate, then ends at once. A killed orphan is not reaped
# where PID 1 does not reap (this sandbox): a zombie is dead, not a duplicate.
RETRIED_ACTION = (
    "for p in $(cat pids 2>/dev/null); do "
    "[ -e /proc/$p ] && ! grep -q ') Z ' /proc/$p/stat && echo $p >> duplicates; done; "
    "attempt=$(cat pids 2>/dev/null | wc -l); echo $$ >> pids; "
    'if [ "$attempt" -eq 0 ]; then sleep 300; fi'
)


def test_a_killed_workers_action_is_retried_on_another_worker_without_a_duplicate(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    work = checkout(tmp_path, "work")
    loop = one_action_loop("retried", RETRIED_ACTION)
    log = tmp_path / "workers.log"

    async def scenario() -> RunOutcome:
        client = await Client.connect(temporal_dev_server.address)
        run = run_input(work, loop, heartbeat_seconds=2.0)
        with worker_process(temporal_dev_server, work, log) as first:
            handle = await start(client, work, run)
            await until_action_heartbeats(handle)
            os.kill(first.pid, signal.SIGKILL)  # the worker only
            first.wait()
        # Its action does not outlive it (issue 23 item 3: it used to run on beside the
        # retry's worker until that one stopped it).
        await _until_gone(first_pid(work))
        with worker_process(temporal_dev_server, work, log):
            return await result(handle)

    try:
        outcome = asyncio.run(scenario())
    finally:
        stop_left_over_actions(work)

    pids = (work / "pids").read_text().split()
    assert outcome.state["status"] == "completed", log.read_text()
    assert len(pids) == 2  # the first attempt, then the retry on the second worker
    assert not (work / "duplicates").exists()  # the first was stopped before the retry ran
    assert not alive(int(pids[0]))


async def _until_gone(pid: int) -> None:
    async with asyncio.timeout(30):
        while alive(pid):
            await asyncio.sleep(0.05)


def stop_left_over_actions(work: Path) -> None:
    """Whatever happened, no action of this test outlives it."""
    pids = (work / "pids").read_text().split() if (work / "pids").exists() else []
    for pid in map(int, pids):
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)


def first_pid(work: Path) -> int:
    return int((work / "pids").read_text().split()[0])


async def until_action_heartbeats(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the action runs and its process group reached the server in a heartbeat (the
    activity's first heartbeat may come before the group exists)."""
    started = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            pending = (await handle.describe()).raw_description.pending_activities
            for activity in pending:
                details = [payload.data for payload in activity.heartbeat_details.payloads]
                if activity.state == started and any(b"pgid" in data for data in details):
                    return
            await asyncio.sleep(0.1)


# --- two worktrees on two task queues ---------------------------------------------------------


def test_two_worktrees_run_their_actions_each_on_its_own_worker(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    first, second = checkout(tmp_path, "feature-a"), checkout(tmp_path, "feature-b")
    loop = one_action_loop("where", 'echo "$LL_TEST_WORKER $(pwd)" > ran-here; sleep 1')
    log = tmp_path / "workers.log"

    async def scenario() -> list[RunOutcome]:
        client = await Client.connect(temporal_dev_server.address)
        with (
            worker_process(temporal_dev_server, first, log),
            worker_process(temporal_dev_server, second, log),
        ):
            handles = [await start(client, path, run_input(path, loop)) for path in (first, second)]
            return [await result(handle) for handle in handles]

    outcomes = asyncio.run(scenario())

    assert [outcome.state["status"] for outcome in outcomes] == ["completed", "completed"]
    for path in (first, second):  # run by the worker started in that checkout, there
        assert (path / "ran-here").read_text().strip() == f"{path.name} {path.resolve()}"
