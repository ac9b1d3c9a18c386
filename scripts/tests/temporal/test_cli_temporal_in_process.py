"""The `--engine temporal` commands called in this process (so coverage sees them), with
a real dev server and an `ll-loop worker` process: the whole life of `hello`."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import cli_env, cli_in_process, write_loop
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import Worker, wait_until
from test_temporal_e2e import HELLO


@pytest.fixture
def project(
    temporal_dev_server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    checkout = tmp_path / "co"
    checkout.mkdir()
    write_loop(checkout, "hello", HELLO.read_text(encoding="utf-8"))
    env = {**cli_env(tmp_path), **temporal_dev_server.env()}
    for key, value in {**temporal_dev_server.env(), "LL_ENGINE": "temporal"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(checkout)
    worker = Worker(checkout, env)
    try:
        yield checkout
    finally:
        worker.stop()


def test_the_life_of_hello_through_the_temporal_commands(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli_in_process(capsys, "run", "hello")
    assert code == 3
    assert "Loop paused for handoff: wave (6 iterations" in out
    assert "Resume with: ll-loop resume hello\n" in out  # LL_ENGINE=temporal says where

    code, out, _ = cli_in_process(capsys, "status", "hello", "--json")
    assert (code, json.loads(out)["status"]) == (0, "awaiting_continuation")
    code, out, _ = cli_in_process(capsys, "status", "hello")
    assert code == 0 and "Status: awaiting_continuation" in out
    # The dev server is shared: other tests' runs may be listed too; this test's is its own.
    place = f"[{os.uname().nodename}:{project.resolve()}]"
    code, out, _ = cli_in_process(capsys, "list", "--running")
    assert code == 0 and f"hello: wave (iteration 6) - awaiting_continuation {place}" in out
    code, out, _ = cli_in_process(capsys, "list", "--running", "--json")
    ours = [run for run in json.loads(out) if run["workflow_id"] == _workflow_id("hello", project)]
    assert code == 0 and [run["loop_name"] for run in ours] == ["hello"]

    code, out, err = cli_in_process(capsys, "run", "hello", "--detach")
    assert code == 6 and "loop 'hello' is already running on Temporal" in err

    code, out, _ = cli_in_process(capsys, "resume", "hello", "--prompt", "wave goodbye")
    assert code == 0
    assert "Resuming loop 'hello' from state 'wave'" in out
    assert "Continuation context: wave goodbye\n" in out  # what the action got (issue 23.4)
    assert "Loop completed: done (7 iterations" in out

    code, out, _ = cli_in_process(capsys, "history", "hello", "--json")
    kinds = [event["event"] for event in json.loads(out)]
    assert code == 0 and kinds.count("loop_resume") == 1 and kinds[-1] == "loop_complete"
    code, out, err = cli_in_process(capsys, "stop", "hello")
    assert code == 1 and "Loop hello is not running on Temporal" in err
    code, out, err = cli_in_process(capsys, "resume", "hello")
    assert code == 1 and "loop 'hello' already completed" in err


def test_detach_returns_at_once_and_stop_ends_the_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(project, "nap", NAP_LOOP)
    code, out, _ = cli_in_process(capsys, "run", "nap", "--detach")
    assert code == 0 and "Started nap on Temporal (workflow ll-loop:nap@" in out
    code, out, _ = cli_in_process(capsys, "stop", "nap")
    assert code == 0 and "Stopping nap" in out

    def stopped() -> bool:
        code, out, _ = cli_in_process(capsys, "status", "nap", "--json")
        return code == 0 and json.loads(out)["status"] == "interrupted"

    wait_until(stopped, "the run to end as interrupted")  # its action killed with it


NAP_LOOP = """\
name: nap
initial: nap
states:
  nap:
    action: sleep 300
    next: done
  done:
    terminal: true
"""


WAITING_LOOP = """\
name: waits
initial: work
states:
  work:
    action: "if [ -f go ]; then echo ok; else sleep 300; fi"
    next: done
  done:
    terminal: true
"""

TELL = 'echo "$LL_EVENT $LL_STATUS" >> told.txt'


def test_notify_on_temporal_tells_a_stop_and_the_end_and_resume_keeps_the_command(
    project: Path, temporal_dev_server: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--notify` is told from the worker's host; like a local run's, the command given on
    the command line is kept by `resume` (here a resume after the workflow closed)."""
    write_loop(project, "waits", WAITING_LOOP)
    code, _, _ = cli_in_process(capsys, "run", "waits", "--detach", "--notify", TELL)
    assert code == 0
    wait_until(lambda: "sleep 300" in _running_actions(project), "the action to start")
    assert cli_in_process(capsys, "stop", "waits")[0] == 0
    told = project / "told.txt"
    wait_until(told.exists, "the stop to be told")
    assert told.read_text(encoding="utf-8") == "interrupted interrupted\n"
    code, out, _ = cli_in_process(capsys, "status", "waits", "--json")
    assert json.loads(out)["notify"] == TELL
    # The stop is told before the workflow closes: the resume below is of the closed run.
    wait_until(lambda: _closed(temporal_dev_server, _workflow_id("waits", project)), "a close")

    (project / "go").write_text("", encoding="utf-8")
    code, out, _ = cli_in_process(capsys, "resume", "waits")
    assert code == 0 and "Loop completed: done" in out
    # The end is told once the outcome is set, as the client may already report it.
    wait_until(lambda: len(told.read_text(encoding="utf-8").splitlines()) > 1, "the end")
    lines = told.read_text(encoding="utf-8").splitlines()
    assert lines == ["interrupted interrupted", "completed completed"]


SLOW_TELL = f"sleep 3; {TELL}"


def test_resume_right_after_stop_resumes_the_stopped_run_once_its_workflow_closed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`stop` returns once the server has it; the workflow closes after its action was
    killed and its end told (here a slow `--notify`). A `resume` typed right after waits
    for that, instead of refusing a run that is "running"."""
    write_loop(project, "waits", WAITING_LOOP)
    code, _, _ = cli_in_process(capsys, "run", "waits", "--detach", "--notify", SLOW_TELL)
    assert code == 0
    wait_until(lambda: "sleep 300" in _running_actions(project), "the action to start")
    (project / "go").write_text("", encoding="utf-8")  # the action runs again on resume
    assert cli_in_process(capsys, "stop", "waits")[0] == 0

    code, out, err = cli_in_process(capsys, "resume", "waits")
    assert (code, err) == (0, "")
    assert "Resuming loop 'waits' from state 'work'" in out
    assert "Loop completed: done (1 iteration" in out
    told = (project / "told.txt").read_text(encoding="utf-8").splitlines()
    assert told[0] == "interrupted interrupted"  # told before the workflow closed


def _workflow_id(loop: str, checkout: Path) -> str:
    from little_loops.fsm.temporal.names import workflow_id_for

    return workflow_id_for(loop, checkout)


def _closed(server: DevServer, workflow_id: str) -> bool:
    from temporalio.client import Client, WorkflowExecutionStatus

    async def status() -> WorkflowExecutionStatus | None:
        client = await Client.connect(server.address, namespace=server.namespace)
        return (await client.get_workflow_handle(workflow_id).describe()).status

    return asyncio.run(status()) != WorkflowExecutionStatus.RUNNING


def _running_actions(project: Path) -> str:
    """The command lines of the processes that run in `project` (an action runs there)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cwd").resolve() == project.resolve():
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return "\n".join(found)
