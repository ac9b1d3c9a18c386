"""A repeated action is never silent (issue 28; spec: ll-loop-cli.md, events
`action_retry`; `status`).

Real `ll-loop worker` processes on the dev server. When a worker dies mid-action (or the
server restarts and loses the attempt), Temporal runs the action again: at least once,
never two at once. The retried activity says so: an `action_retry` event with the state,
the attempt and why, a line in `ll-loop status`, in the worker's log and in the progress
of a followed run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, run_cli, write_loop
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import WAIT_SECONDS, Worker, wait_until

pytestmark = [pytest.mark.temporal, pytest.mark.slow]

# The first attempt notes its pid and sleeps; the retry notes its own and ends at once.
RETRIED_LOOP = """\
name: retried
initial: work
states:
  work:
    action: >-
      n=$(cat attempts 2>/dev/null | wc -l); echo $$ >> attempts;
      if [ "$n" -eq 0 ]; then sleep 300; fi
    next: done
  done:
    terminal: true
"""


def attempts(checkout: Path) -> list[int]:
    path = checkout / "attempts"
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


def heartbeat_recorded(env: dict[str, str], checkout: Path, loop: str) -> bool:
    """Whether the server holds a heartbeat of the run's action (it names the worker and
    its process group: what the retry's reason is read from)."""
    import asyncio

    from temporalio.client import Client

    workflow_id = f"ll-loop:{loop}@{os.uname().nodename}:{checkout.resolve()}"

    async def ask() -> bool:
        client = await Client.connect(
            env["LL_TEMPORAL_ADDRESS"], namespace=env["LL_TEMPORAL_NAMESPACE"]
        )
        described = await client.get_workflow_handle(workflow_id).describe()
        pending = described.raw_description.pending_activities
        return any(activity.heartbeat_details.payloads for activity in pending)

    return asyncio.run(ask())


def alive(pid: int) -> bool:
    """The process runs (a zombie no longer does)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "co"
    root.mkdir()
    write_loop(root, "retried", RETRIED_LOOP)
    yield root
    for pid in attempts(root):  # whatever happened, no action outlives the test
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)


def test_a_worker_killed_mid_action_gives_action_retry_in_events_status_log_and_progress(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    # The workflows run on a worker that stays; the actions on one that is killed.
    workers.append(Worker(checkout, env, args=("--workflows-only",)))
    doomed = Worker(checkout, env, args=("--activities-only",))
    workers.append(doomed)
    progress = checkout.parent / "run.out"
    with progress.open("w") as out:
        run = subprocess.Popen(
            [str(LL_LOOP), "run", "retried"], cwd=checkout, env=env, stdout=out, stderr=out
        )
    try:
        wait_until(lambda: attempts(checkout), "the first attempt")
        wait_until(lambda: heartbeat_recorded(env, checkout, "retried"), "its first heartbeat")
        doomed.kill()
        retrier = Worker(checkout, env, args=("--activities-only",))
        workers.append(retrier)
        assert run.wait(timeout=WAIT_SECONDS) == 0, progress.read_text()
    finally:
        run.kill()

    said = "state 'work' was run again (attempt 2): its worker died"
    assert "  state 'work' run again (attempt 2): its worker died\n" in progress.read_text()
    assert said in run_cli(checkout, "status", "retried", env=env).stdout.splitlines()
    assert said in retrier.output()
    state = json.loads(run_cli(checkout, "status", "retried", "--json", env=env).stdout)
    [retry] = state["action_retries"]
    assert {key: retry[key] for key in ("event", "state", "attempt", "reason")} == {
        "event": "action_retry",
        "state": "work",
        "attempt": 2,
        "reason": "its worker died",
    }
    history = run_cli(checkout, "history", "retried", env=env).stdout.splitlines()
    retried = [line[9:] for line in history if "action_retry" in line]
    assert retried == ["action_retry attempt=2 reason=its worker died state=work"]
    first, _retry = attempts(checkout)
    assert not alive(first)  # the dead worker's attempt was stopped before the retry ran


# --- a server restarted mid-action -------------------------------------------------------

# The first attempt ends while the server is down: its completion cannot be recorded.
RESTARTED_LOOP = """\
name: restarted
initial: work
states:
  work:
    action: >-
      n=$(cat attempts 2>/dev/null | wc -l); echo $$ >> attempts;
      if [ "$n" -eq 0 ]; then sleep 3; fi
    next: done
  done:
    terminal: true
"""
SERVER_DOWN_SECONDS = 12.0
"""Longer than the heartbeat timeout (10 s): back up, the server has given up on the
first attempt, whose worker could not report its end meanwhile."""


class RestartableServer:
    """A dev server of this test's own, killed and started again on its port and
    database (the session's server is shared by other tests)."""

    def __init__(self, cli: Path, directory: Path) -> None:
        from fixtures.temporal_servers import dev_server_command, free_port

        self.command = dev_server_command(cli, free_port(), directory / "temporal.sqlite")
        self.directory = directory
        self.address = self.command[self.command.index("--port") + 1]
        self.server = self.start()

    def start(self) -> DevServer:
        from fixtures.temporal_servers import NAMESPACE, wait_until_answers

        log = self.directory / "temporal-dev-server.log"
        with log.open("ab") as output:
            process = subprocess.Popen(
                self.command,
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        server = DevServer(f"127.0.0.1:{self.address}", NAMESPACE, log, process)
        wait_until_answers(server)
        return server

    def kill(self) -> None:
        os.killpg(self.server.process.pid, signal.SIGKILL)
        self.server.process.wait()

    def stop(self) -> None:
        from fixtures.temporal_servers import stop_process_group

        stop_process_group(self.server.process)


def test_a_server_restarted_mid_action_gives_action_retry_in_status_and_the_workers_log(
    temporal_cli_path: Path, tmp_path: Path, checkout: Path, workers: list[Worker]
) -> None:
    from fixtures.cli_support import cli_env

    write_loop(checkout, "restarted", RESTARTED_LOOP)
    server = RestartableServer(temporal_cli_path, tmp_path)
    try:
        env = {**cli_env(tmp_path), **server.server.env(), "LL_ENGINE": "temporal"}
        worker = Worker(checkout, env)
        workers.append(worker)
        assert run_cli(checkout, "run", "restarted", "--detach", env=env).returncode == 0
        wait_until(lambda: attempts(checkout), "the first attempt")
        wait_until(lambda: heartbeat_recorded(env, checkout, "restarted"), "its first heartbeat")
        server.kill()
        time.sleep(SERVER_DOWN_SECONDS)
        restarted = time.monotonic()
        server.server = server.start()
        print(f"\nthe dev server answered {time.monotonic() - restarted:.1f}s after its restart")
        wait_until(
            lambda: "Status: completed" in run_cli(checkout, "status", "restarted", env=env).stdout,
            "the run to end",
        )
        status = run_cli(checkout, "status", "restarted", env=env).stdout.splitlines()
    finally:
        for started in workers:
            started.stop()
        server.stop()

    said = (
        "state 'work' was run again (attempt 2): the server restarted or lost touch with its worker"
    )
    assert said in status
    assert said in worker.output()
    assert len(attempts(checkout)) == 2
