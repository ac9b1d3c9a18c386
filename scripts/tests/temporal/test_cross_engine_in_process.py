"""A local run is refused while its loop has an open run on Temporal (issue 23 item 1;
`cli.cross_engine`), called in this process (so coverage sees it). The Temporal run is a
real workflow on the dev server, started with `--detach` and no worker (it stays open);
the refusal is exit 6 with one line naming the workflow.
(test_never_two_copies.py runs the same, and the scope cases, which need a worker for the
scope registry, with `ll-loop` subprocesses.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop
from fixtures.temporal_servers import DevServer

from little_loops.fsm.temporal.names import workflow_id_for

LOOP = """\
name: {name}
initial: work
states:
  work:
    action: "touch {name}.ran"
    next: done
  done:
    terminal: true
"""


@pytest.fixture
def checkout(
    temporal_dev_server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = tmp_path / "co"
    root.mkdir()
    for key, value in temporal_dev_server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(root)
    return root


def _loop(root: Path, name: str) -> None:
    write_loop(root, name, LOOP.format(name=name))


def _on_temporal(capsys: pytest.CaptureFixture[str], loop: str) -> None:
    code, out, _ = cli_in_process(capsys, "run", loop, "--detach", "--engine", "temporal")
    assert (code, out.startswith(f"[T] Started {loop} on Temporal (workflow ")) == (0, True)


def test_a_local_run_and_resume_are_refused_while_the_loop_is_open_on_temporal(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _loop(checkout, "busy")
    _on_temporal(capsys, "busy")
    workflow = workflow_id_for("busy", checkout)
    line = f"[T] Loop busy is already running on Temporal (workflow {workflow})\n"

    for command in ("run", "resume"):
        assert cli_in_process(capsys, command, "busy", "--engine", "local") == (6, "", line)
    assert not (checkout / "busy.ran").exists()  # the local run never ran the action
    assert (checkout / ".loops" / ".running" / "busy.on-temporal").exists()
