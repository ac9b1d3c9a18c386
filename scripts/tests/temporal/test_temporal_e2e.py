"""`ll-loop --engine temporal` end to end: a real `temporal server start-dev`, real
`ll-loop worker` processes in temporary checkouts, and the real `ll-loop` commands."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from fixtures.cli_support import run_cli, write_loop
from fixtures.processes import process_groups_with, processes_with
from fixtures.temporal_workers import Worker, wait_until

HELLO = Path(__file__).resolve().parents[3] / ".loops" / "hello.yaml"
WAIT_SECONDS = 120.0
VOLATILE = ("started_at", "updated_at", "pid", "elapsed_ms", "duration_ms", "process_alive")

SLOW_LOOP = """\
name: slow
initial: work
states:
  work:
    action: "if [ -f go ]; then echo done; else echo waiting; sleep 300; : MARKER; fi"
    next: done
  done:
    terminal: true
"""


def _checkout(root: Path, name: str, text: str) -> Path:
    root.mkdir(parents=True)
    write_loop(root, name, text)
    return root


def _heartbeat_recorded(env: dict[str, str], workflow_id: str) -> bool:
    """Whether the running action's heartbeat (with its process group) reached the server."""
    from temporalio.client import Client

    async def ask() -> bool:
        client = await Client.connect(
            env["LL_TEMPORAL_ADDRESS"], namespace=env["LL_TEMPORAL_NAMESPACE"]
        )
        described = await client.get_workflow_handle(workflow_id).describe()
        pending = described.raw_description.pending_activities
        details = [p.data for a in pending for p in a.heartbeat_details.payloads]
        return any(b'"pgid"' in data for data in details)

    return asyncio.run(ask())


def _pending(env: dict[str, str], workflow_id: str) -> tuple[list[str], str]:
    """What the open workflow waits for: the (type, state) of its pending activities, and
    the state of its pending workflow task ("" when none)."""
    from temporalio.api.enums.v1 import PendingActivityState, PendingWorkflowTaskState
    from temporalio.client import Client

    async def ask() -> tuple[list[str], str]:
        client = await Client.connect(
            env["LL_TEMPORAL_ADDRESS"], namespace=env["LL_TEMPORAL_NAMESPACE"]
        )
        raw = (await client.get_workflow_handle(workflow_id).describe()).raw_description
        activities = [
            f"{a.activity_type.name}: {PendingActivityState.Name(a.state)}"
            for a in raw.pending_activities
        ]
        task = ""
        if raw.HasField("pending_workflow_task"):
            task = PendingWorkflowTaskState.Name(raw.pending_workflow_task.state)
        return activities, task

    return asyncio.run(ask())


def _stable(state: dict[str, Any], checkout: Path) -> dict[str, Any]:
    text = json.dumps({k: v for k, v in state.items() if k not in VOLATILE})
    text = text.replace(str(checkout.resolve()), "<checkout>")
    loaded: dict[str, Any] = json.loads(text)
    for capture in loaded.get("captured", {}).values():
        capture.pop("duration_ms", None)
    return loaded


def test_hello_pauses_resumes_with_a_new_prompt_and_its_status_is_the_local_one(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    text = HELLO.read_text(encoding="utf-8")
    local = _checkout(tmp_path / "local", "hello", text)
    local_env = {**env, "LL_ENGINE": "local"}
    assert run_cli(local, "run", "hello", env=local_env).returncode == 3
    local_status = run_cli(local, "status", "hello", "--json", env=local_env)
    checkout = _checkout(tmp_path / "remote", "hello", text)
    workers.append(Worker(checkout, env))

    paused = run_cli(checkout, "run", "hello", env=env, timeout=WAIT_SECONDS)
    assert paused.returncode == 3, paused.stderr
    assert "[6/10] wave" in paused.stdout
    assert "Loop paused for handoff: wave (6 iterations" in paused.stdout
    status = run_cli(checkout, "status", "hello", "--json", env=env)
    assert status.returncode == 0, status.stderr
    remote, there = json.loads(status.stdout), json.loads(local_status.stdout)
    assert remote["status"] == "awaiting_continuation"
    assert _stable(remote, checkout) == _stable(there, local)

    resumed = run_cli(
        checkout, "resume", "hello", "--prompt", "wave goodbye", env=env, timeout=WAIT_SECONDS
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "Loop completed: done (7 iterations" in resumed.stdout
    log = checkout / ".loops" / ".running" / "hello.logs" / "7-wave.log"
    assert log.read_text(encoding="utf-8") == "resumed: wave goodbye\n"


def test_a_stop_during_a_long_action_then_resume(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    marker = f"slow-{time.monotonic_ns()}"
    checkout = _checkout(tmp_path / "co", "slow", SLOW_LOOP.replace("MARKER", marker))
    workers.append(Worker(checkout, env))
    started = run_cli(checkout, "run", "slow", "--detach", env=env)
    assert started.returncode == 0, started.stderr
    wait_until(lambda: processes_with(marker), "the action to start")
    again = run_cli(checkout, "run", "slow", "--detach", env=env)
    assert again.returncode == 6
    assert again.stderr.strip().endswith(
        "loop 'slow' is already running on Temporal "
        f"(workflow ll-loop:slow@{os.uname().nodename}:{checkout.resolve()})"
    )

    assert run_cli(checkout, "stop", "slow", env=env).returncode == 0
    wait_until(lambda: not processes_with(marker), "the action to be killed")

    def status() -> dict[str, Any]:
        result = run_cli(checkout, "status", "slow", "--json", env=env)
        return json.loads(result.stdout) if result.returncode == 0 else {}

    wait_until(lambda: status().get("status") == "interrupted", "the run to stop")
    (checkout / "go").write_text("", encoding="utf-8")
    resumed = run_cli(checkout, "resume", "slow", env=env, timeout=WAIT_SECONDS)
    assert resumed.returncode == 0, resumed.stderr
    assert "Resuming loop 'slow' from state 'work' (iteration 1)" in resumed.stdout
    assert "Loop completed: done (1 iteration" in resumed.stdout


def test_a_killed_workers_action_is_stopped_and_retried_on_another_worker(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    # The dead worker's action is retried once its heartbeat times out, and the run's next
    # workflow task first waits for the dead worker's sticky queue (10 s): short ones.
    env = {**env, "LL_TEMPORAL_HEARTBEAT_SECONDS": "5", "LL_TEMPORAL_STICKY_SECONDS": "2"}
    marker = f"slow-{time.monotonic_ns()}"
    checkout = _checkout(tmp_path / "co", "slow", SLOW_LOOP.replace("MARKER", marker))
    first = Worker(checkout, env)
    workers.append(first)
    assert run_cli(checkout, "run", "slow", "--detach", env=env).returncode == 0
    wait_until(lambda: processes_with(marker), "the action to start")
    orphans = processes_with(marker)
    orphan_groups = process_groups_with(marker)
    workflow_id = f"ll-loop:slow@{os.uname().nodename}:{checkout.resolve()}"
    # The process group reaches the server with a heartbeat once the action has run a
    # moment (runner.GROUP_NOTICE_SECONDS): a worker killed before that leaves an orphan
    # the retry does not know of.
    wait_until(lambda: _heartbeat_recorded(env, workflow_id), "a heartbeat with the group")
    first.kill()
    # Issue 23 item 3 (was: "the dead worker's action runs on"): its watchdog stops it.
    wait_until(lambda: not processes_with(marker), "the dead worker's action to be stopped")

    second = Worker(checkout, env)
    workers.append(second)
    # After the heartbeat timeout the action is retried on the new worker, which first
    # stops what the dead one left running: one copy of the action, never two.
    try:
        wait_until(
            lambda: processes_with(marker) and not set(orphans) & set(processes_with(marker)),
            "the action to be retried",
        )
    finally:
        for pid in set(orphans) & set(processes_with(marker)):
            os.killpg(pid, signal.SIGKILL)  # never leave the orphan behind a failed test
    # One copy of the action: one process group, and not the dead worker's.
    assert len(process_groups_with(marker) - orphan_groups) == 1
    assert not process_groups_with(marker) & orphan_groups
    assert "state 'work' was run again (attempt 2): its worker died" in second.output()
    assert run_cli(checkout, "stop", "slow", env=env).returncode == 0
    wait_until(lambda: not processes_with(marker), "the action to be killed")


def test_two_worktrees_run_the_same_loop_on_their_own_task_queues(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    text = HELLO.read_text(encoding="utf-8").replace("printf 0", "printf 0; pwd >&2")
    checkouts = [_checkout(tmp_path / name, "hello", text) for name in ("one", "two")]
    workers.extend(Worker(checkout, env) for checkout in checkouts)
    for checkout in checkouts:
        assert run_cli(checkout, "run", "hello", "--detach", env=env).returncode == 0
    for checkout in checkouts:
        wait_until(
            lambda c=checkout: (
                '"awaiting_continuation"' in run_cli(c, "status", "hello", "--json", env=env).stdout
            ),
            "the run to pause",
        )
        stderr_log = checkout / ".loops" / ".running" / "hello.logs" / "1-start.stderr.log"
        assert stderr_log.read_text(encoding="utf-8") == f"{checkout.resolve()}\n"
    places = [f"[{os.uname().nodename}:{checkout.resolve()}]" for checkout in checkouts]
    wait_until(  # the server's list of workflows lags a little behind
        lambda: all(
            place in run_cli(checkouts[0], "list", "--running", env=env).stdout for place in places
        ),
        "both runs to be listed",
    )


# Every state runs an action that writes its iteration down: over continue-as-new, no
# action may be lost or run twice.
TICKS_LOOP = """\
name: ticks
initial: tick
max_iterations: 250
states:
  tick:
    action: "echo ${state.iteration} >> ticks.txt"
    on_success: tick
    on_failure: done
  done:
    terminal: true
"""


def _run_chain(env: dict[str, str], workflow_id: str) -> list[str]:
    """The kinds of the workflow runs of `workflow_id`, oldest first."""
    from temporalio.client import Client

    async def ask() -> list[str]:
        client = await Client.connect(
            env["LL_TEMPORAL_ADDRESS"], namespace=env["LL_TEMPORAL_NAMESPACE"]
        )
        found = client.list_workflows(f"WorkflowId = '{workflow_id}'")
        runs = [run async for run in found]
        return [run.status.name for run in sorted(runs, key=lambda run: run.start_time)]

    return asyncio.run(ask())


def test_a_250_state_run_continues_as_new_and_runs_each_action_once(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    checkout = _checkout(tmp_path / "co", "ticks", TICKS_LOOP)
    workers.append(Worker(checkout, env))

    ran = run_cli(checkout, "run", "ticks", env=env, timeout=300)

    assert ran.returncode == 4, ran.stderr  # max_iterations, as a local run ends
    ticks = (checkout / "ticks.txt").read_text(encoding="utf-8").split()
    assert ticks == [str(n) for n in range(1, 251)]
    progress = [line for line in ran.stdout.splitlines() if line.startswith("[")]
    assert progress == [f"[{n}/250] tick -> echo {n} >> ticks.txt" for n in range(1, 251)]
    workflow_id = f"ll-loop:ticks@{os.uname().nodename}:{checkout.resolve()}"
    wait_until(  # the server's list of workflows lags a little behind
        lambda: _run_chain(env, workflow_id)[-1:] == ["COMPLETED"], "the last run to be listed"
    )
    # Continued as new every 200 states (the default): two workflow runs for 250 (each
    # hand-over is what the test is about; more states would only take longer).
    assert _run_chain(env, workflow_id) == ["CONTINUED_AS_NEW", "COMPLETED"]
    status = json.loads(run_cli(checkout, "status", "ticks", "--json", env=env).stdout)
    ended = (status["status"], status["terminated_by"], status["iteration"])
    assert ended == ("interrupted", "max_iterations", 250)  # as the local state file says


def test_a_worker_of_the_queue_may_run_only_the_workflows_or_only_the_actions(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    text = HELLO.read_text(encoding="utf-8").replace("printf 0", "printf 0; pwd >&2")
    checkout = _checkout(tmp_path / "co", "hello", text)
    write_loop(checkout, "again", text.replace("name: hello", "name: again"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    queue = f"ll-loop@{os.uname().nodename}:{checkout.resolve()}"
    running = checkout / ".loops" / ".running"

    def status(name: str) -> dict[str, Any]:
        result = run_cli(checkout, "status", name, "--json", env=env)
        return json.loads(result.stdout) if result.returncode == 0 else {}

    def workflows_only() -> Worker:
        worker = Worker(elsewhere, env, args=("--workflows-only", "--task-queue", queue))
        workers.append(worker)
        assert "): workflows only" in worker.output()
        return worker

    # Workflows only, from another directory: the run starts, and no action runs there:
    # its activity is scheduled, and no worker of the queue takes it.
    deciding = workflows_only()
    assert run_cli(checkout, "run", "hello", "--detach", env=env).returncode == 0
    wait_until(lambda: status("hello").get("current_state") == "start", "the run to start")
    hello_id, again_id = (f"ll-loop:{name}@{queue.split('@', 1)[1]}" for name in ("hello", "again"))
    wait_until(lambda: _pending(env, hello_id)[0], "the action's activity to be scheduled")
    assert _pending(env, hello_id)[0] == ["ll-loop.run_action: PENDING_ACTIVITY_STATE_SCHEDULED"]
    assert not (running / "hello.logs").exists()

    # The checkout's worker takes the actions, and runs them in the checkout.
    acting = Worker(checkout, env, args=("--activities-only",))
    workers.append(acting)
    assert "): activities only" in acting.output()
    wait_until(lambda: status("hello").get("status") == "awaiting_continuation", "a pause")
    stderr_log = running / "hello.logs" / "1-start.stderr.log"
    assert stderr_log.read_text(encoding="utf-8") == f"{checkout.resolve()}\n"

    # Actions only: a run started now waits for a worker to decide its first state...
    deciding.stop()
    assert run_cli(checkout, "run", "again", "--detach", env=env).returncode == 0
    # Its first workflow task waits on the server, taken by none: no state, no activity.
    assert _pending(env, again_id) == ([], "PENDING_WORKFLOW_TASK_STATE_SCHEDULED")
    assert not (running / "again.logs").exists()
    # ...which the next workflow worker of the queue does.
    workflows_only()
    wait_until(lambda: status("again").get("status") == "awaiting_continuation", "a pause")
    resumed = run_cli(checkout, "resume", "hello", "--prompt", "bye", env=env, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert (running / "hello.logs" / "7-wave.log").read_text(encoding="utf-8") == "resumed: bye\n"
