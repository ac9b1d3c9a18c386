"""`--engine temporal` commands while no worker runs the checkout's workflows, called in
this process (so coverage sees them; issue 23 items 9 and 23, `temporal.presence`): each
says so in one line instead of waiting, and `stop` says the server keeps the request and
how to end the run at once. A real dev server, no worker. (test_no_worker.py runs the
same commands as `ll-loop` subprocesses, where coverage is not kept.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop
from fixtures.temporal_servers import DevServer
from test_no_worker import HELLO

from little_loops.fsm.temporal.presence import NoWorkflowWorkerError, stop_pending


@pytest.fixture
def checkout(
    temporal_dev_server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = tmp_path / "co"
    root.mkdir()
    write_loop(root, "hello", HELLO.read_text(encoding="utf-8"))
    for key, value in {**temporal_dev_server.env(), "LL_ENGINE": "temporal"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(root)
    return root


def _queue(checkout: Path) -> str:
    return f"ll-loop@{os.uname().nodename}:{checkout.resolve()}"


def test_without_a_worker_each_command_says_so_in_one_line_and_stop_is_kept(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_worker = (
        f"[T] no worker runs the workflows of task queue '{_queue(checkout)}' (start "
        "`ll-loop worker` in that checkout); the run waits on the server until one does\n"
    )

    code, out, err = cli_in_process(capsys, "run", "hello", "--detach")
    assert (code, err) == (0, no_worker)
    assert out.startswith("[T] Started hello on Temporal (workflow ll-loop:hello@")

    for command in ("status", "history"):
        assert cli_in_process(capsys, command, "hello") == (1, "", no_worker), command

    workflow_id = f"ll-loop:hello@{os.uname().nodename}:{checkout.resolve()}"
    assert cli_in_process(capsys, "stop", "hello") == (
        0,
        "",
        f"[T] Stop requested for hello: no worker runs its workflow (task queue "
        f"'{_queue(checkout)}'), so it stops when one does; to end it now without a worker "
        f"(it cannot be resumed then): temporal workflow terminate --workflow-id {workflow_id}\n",
    )


def test_the_one_lines_a_person_reads() -> None:
    """The words of a worker that polls but did not answer, and of a stop without a
    workflow id to name."""
    assert str(NoWorkflowWorkerError("q", polling=True)) == (
        "a worker polls the workflows of task queue 'q' but did not answer for this run in "
        "time (busy, paused, or not given the run yet); ask again in a moment"
    )
    assert stop_pending("hello", "q") == (
        "Stop requested for hello: no worker runs its workflow (task queue 'q'), so it "
        "stops when one does"
    )
