"""The commands of `--engine temporal` when no worker runs the checkout's workflows (none
was started, or the one there died): one line saying so, or a wait that says why, never
a silent wait ending in a traceback. Real `temporal server start-dev`, real `ll-loop`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, normalize, run_cli, write_loop
from fixtures.processes import processes_with
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import WAIT_SECONDS, Worker, wait_until

HELLO = Path(__file__).resolve().parents[3] / ".loops" / "hello.yaml"


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "co"
    root.mkdir()
    write_loop(root, "hello", HELLO.read_text(encoding="utf-8"))
    return root


def _queue(checkout: Path) -> str:
    return f"ll-loop@{os.uname().nodename}:{checkout.resolve()}"


def _no_worker_line(checkout: Path) -> str:
    return (
        f"[T] no worker runs the workflows of task queue '{_queue(checkout)}' (start "
        "`ll-loop worker` in that checkout); the run waits on the server until one does"
    )


def _start_run(checkout: Path, env: dict[str, str], loop: str = "hello") -> subprocess.Popen[str]:
    """`ll-loop run <loop>` in the background, its stderr in a file (`_stderr_so_far`)."""
    with (checkout.parent / "run.stderr").open("w", encoding="utf-8") as stderr:
        return subprocess.Popen(
            [str(LL_LOOP), "run", loop],
            cwd=checkout,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def _stderr_so_far(checkout: Path) -> str:
    log = checkout.parent / "run.stderr"
    return log.read_text(encoding="utf-8") if log.exists() else ""


def test_a_run_waits_for_a_worker_saying_why_and_goes_on_when_one_starts(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    run = _start_run(checkout, env)
    try:
        wait_until(lambda: "Waiting for a worker" in _stderr_so_far(checkout), "the notice")
        workers.append(Worker(checkout, env))
        out, _ = run.communicate(timeout=WAIT_SECONDS)
    finally:
        run.kill()
    assert run.returncode == 3  # paused on its handoff, as a local run
    assert "Loop paused for handoff: wave (6 iterations" in out
    assert normalize(_stderr_so_far(checkout)).splitlines() == [
        f"[T] Waiting for a worker: none runs the workflows of task queue '{_queue(checkout)}' "
        "(start `ll-loop worker` in that checkout)"
    ]


def test_without_a_worker_status_and_history_say_so_in_one_line_and_stop_is_kept(
    env: dict[str, str], checkout: Path, workers: list[Worker]
) -> None:
    started = run_cli(checkout, "run", "hello", "--detach", env=env)
    assert started.returncode == 0
    assert normalize(started.stderr).splitlines() == [_no_worker_line(checkout)]

    for command in ("status", "history"):
        asked = run_cli(checkout, command, "hello", env=env)
        assert (asked.returncode, asked.stdout) == (1, ""), command
        assert normalize(asked.stderr).splitlines() == [_no_worker_line(checkout)], command

    unanswered = (
        f"  ll-loop:hello@{os.uname().nodename}:{checkout.resolve()}: no worker answers "
        "(is `ll-loop worker` running?)"
    )
    wait_until(  # the server's list of workflows lags a little behind
        lambda: unanswered in run_cli(checkout, "list", "--running", env=env).stdout.splitlines(),
        "the run to be listed",
    )

    stopped = run_cli(checkout, "stop", "hello", env=env)
    assert stopped.returncode == 0
    workflow_id = f"ll-loop:hello@{os.uname().nodename}:{checkout.resolve()}"
    assert normalize(stopped.stderr).splitlines() == [
        f"[T] Stop requested for hello: no worker runs its workflow (task queue "
        f"'{_queue(checkout)}'), so it stops when one does; to end it now without a worker "
        f"(it cannot be resumed then): temporal workflow terminate --workflow-id {workflow_id}"
    ]
    # The server kept the stop: the first worker ends the run before its first action.
    workers.append(Worker(checkout, env))
    wait_until(
        lambda: '"interrupted"' in run_cli(checkout, "status", "hello", "--json", env=env).stdout,
        "the run to stop",
    )
    assert not (checkout / ".loops" / ".running" / "hello.logs").exists()


def test_ctrl_c_while_waiting_for_a_worker_leaves_the_stop_with_the_server(
    env: dict[str, str], checkout: Path
) -> None:
    run = _start_run(checkout, env)
    try:
        wait_until(lambda: "Waiting for a worker" in _stderr_so_far(checkout), "the notice")
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=WAIT_SECONDS)
    finally:
        run.kill()
    assert run.returncode == 130
    assert normalize(_stderr_so_far(checkout)).splitlines()[-1] == (
        f"[T] Stop requested for hello: no worker runs its workflow (task queue "
        f"'{_queue(checkout)}'), so it stops when one does"
    )


QUICK_QUERIES = {"LL_TEMPORAL_QUERY_SECONDS": "5", "LL_TEMPORAL_STICKY_SECONDS": "2"}
"""A query no worker answers fails at this deadline (30 s in production), and a run whose
worker died waits this long for its sticky queue (10 s) before another worker takes it:
the tests that wait for these give short ones."""


def test_a_worker_that_died_is_said_once_its_query_times_out(
    env: dict[str, str], checkout: Path
) -> None:
    """The server lists a dead worker's polls for some minutes, so the status query is
    sent: its deadline, or the server's answer ("no poller seen recently"), tells."""
    env = {**env, **QUICK_QUERIES}
    worker = Worker(checkout, env)
    try:
        assert run_cli(checkout, "run", "hello", env=env, timeout=WAIT_SECONDS).returncode == 3
    finally:
        worker.kill()
    asked = run_cli(checkout, "status", "hello", env=env, timeout=WAIT_SECONDS)
    assert (asked.returncode, asked.stdout) == (1, "")
    assert normalize(asked.stderr).splitlines() == [_no_worker_line(checkout)]


SLOW_LOOP = """\
name: slow
initial: work
states:
  work:
    action: "if [ -f go ]; then echo done; else sleep 300; : MARKER; fi"
    next: done
  done:
    terminal: true
"""


def test_a_followed_run_outlives_its_worker_and_ends_on_the_next(
    env: dict[str, str], tmp_path: Path, workers: list[Worker]
) -> None:
    env = {**env, **QUICK_QUERIES}
    marker = f"slow-{time.monotonic_ns()}"
    checkout = tmp_path / "slow"
    checkout.mkdir()
    write_loop(checkout, "slow", SLOW_LOOP.replace("MARKER", marker))
    first = Worker(checkout, env)
    workers.append(first)
    run = _start_run(checkout, env, "slow")
    try:
        wait_until(lambda: processes_with(marker), "the action to start")
        (checkout / "go").write_text("", encoding="utf-8")
        first.kill()
        # The query in flight fails at its deadline, the dead worker never answering.
        wait_until(lambda: "Waiting for a worker" in _stderr_so_far(checkout), "the notice")
        assert run.poll() is None
        workers.append(Worker(checkout, env))
        out, _ = run.communicate(timeout=WAIT_SECONDS)
    finally:
        run.kill()
        for pid in processes_with(marker):
            os.killpg(pid, signal.SIGKILL)
    assert run.returncode == 0, _stderr_so_far(checkout)
    assert "Loop completed: done (1 iteration" in out
    assert normalize(_stderr_so_far(checkout)).splitlines() == [
        f"[T] Waiting for a worker: none answers for ll-loop:slow@{os.uname().nodename}:"
        f"{checkout.resolve()}"
    ]


QUICK_LOOP = """\
name: quick
initial: work
states:
  work:
    action: echo quick
    next: done
  done:
    terminal: true
"""


def test_following_a_run_that_ended_needs_no_worker(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    """A follower that comes (back) after the run ended and its worker left gets the
    outcome the server keeps, instead of waiting for a worker to answer its queries."""
    from temporalio.client import Client
    from workflow_support import checkout_with, run_input, unique

    from little_loops.fsm.temporal.client import LoopRuns
    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker

    checkout = checkout_with(tmp_path / "co", "quick", QUICK_LOOP)

    async def scenario() -> RunOutcome:
        client = await Client.connect(
            temporal_dev_server.address, namespace=temporal_dev_server.namespace
        )
        runs = LoopRuns(client, checkout, checkout / ".loops", unique("queue"))
        async with build_worker(client, runs.task_queue):
            handle = await runs.start(run_input(runs, "quick"))
            await handle.result()
        return await asyncio.wait_for(runs.follow("quick", lambda _: None), WAIT_SECONDS)

    outcome = asyncio.run(scenario())
    assert (outcome.result["terminated_by"], outcome.result["final_state"]) == ("terminal", "done")


ENDED_FOLLOW_SECONDS = 30.0
"""Well over the follower's wait for a worker (5 s), well under the query time-out that
a worker the server still lists after it stopped leaves a follower to wait (~60 s)."""


def test_a_follower_of_an_ended_run_returns_at_once_and_gets_its_events_from_a_worker(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    """`LoopRuns.follow` asks first whether the run ended: with a live worker it still
    gets the events it missed; after the worker stopped (the server lists it polling for
    a while) it returns the kept outcome without waiting out a query no one answers."""
    from temporalio.client import Client
    from workflow_support import checkout_with, run_input, unique

    from little_loops.fsm.temporal.client import LoopRuns
    from little_loops.fsm.temporal.worker import build_worker

    checkout = checkout_with(tmp_path / "co", "quick", QUICK_LOOP)
    live: list[str] = []
    gone: list[str] = []

    async def scenario() -> float:
        client = await Client.connect(
            temporal_dev_server.address, namespace=temporal_dev_server.namespace
        )
        runs = LoopRuns(client, checkout, checkout / ".loops", unique("queue"))
        async with build_worker(client, runs.task_queue):
            handle = await runs.start(run_input(runs, "quick"))
            await handle.result()
            await runs.follow("quick", lambda event: live.append(event["event"]), since=2)
        started = time.monotonic()
        await runs.follow("quick", lambda event: gone.append(event["event"]))
        return time.monotonic() - started

    seconds = asyncio.run(asyncio.wait_for(scenario(), WAIT_SECONDS))
    assert live == ["action_start", "action_complete", "route", "loop_complete"]
    assert gone == []
    assert seconds < ENDED_FOLLOW_SECONDS


def test_a_stopped_worker_of_this_host_is_known_gone_at_once(
    env: dict[str, str], checkout: Path
) -> None:
    """Issue 23 item 9: the server lists a stopped worker's polls for minutes, so `status`
    and `run` waited out a 30 s query before saying no worker answers. A poller of this
    host whose process is gone does not count: said at once, with a query deadline far
    longer than the command is given."""
    env = {**env, "LL_TEMPORAL_QUERY_SECONDS": "120"}
    worker = Worker(checkout, env)
    try:
        assert run_cli(checkout, "run", "hello", env=env, timeout=WAIT_SECONDS).returncode == 3
    finally:
        worker.stop()
    asked = run_cli(checkout, "status", "hello", env=env, timeout=20)
    assert (asked.returncode, asked.stdout) == (1, "")
    assert normalize(asked.stderr).splitlines() == [_no_worker_line(checkout)]


def test_a_worker_that_polls_but_does_not_answer_is_said_so(
    env: dict[str, str], checkout: Path
) -> None:
    """Issue 23 item 9: a worker that polls the queue but does not take the run (here
    paused with SIGSTOP) is not "no worker runs"."""
    env = {**env, **QUICK_QUERIES}
    worker = Worker(checkout, env)
    try:
        assert run_cli(checkout, "run", "hello", env=env, timeout=WAIT_SECONDS).returncode == 3
        os.killpg(worker.process.pid, signal.SIGSTOP)
        asked = run_cli(checkout, "status", "hello", env=env, timeout=WAIT_SECONDS)
    finally:
        os.killpg(worker.process.pid, signal.SIGCONT)
        worker.stop()
    assert (asked.returncode, asked.stdout) == (1, "")
    assert normalize(asked.stderr).splitlines() == [
        f"[T] a worker polls the workflows of task queue '{_queue(checkout)}' but did not "
        "answer for this run in time (busy, paused, or not given the run yet); ask again in "
        "a moment"
    ]
