"""A loop runs on one engine at a time (issue 23 item 1; docs/scaling.md §6b; user guide
`run`): the local side of the check, without a Temporal server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.cli_support import run_cli, write_loop

from little_loops.cli.cross_engine import refuse_if_local
from little_loops.fsm.store.locking import LoopBusyError, acquire_loop_lock

ONCE = """\
name: once
initial: work
states:
  work:
    action: "echo worked > worked"
    next: done
  done:
    terminal: true
"""


def test_a_temporal_start_is_refused_while_a_local_run_holds_the_lock(tmp_path: Path) -> None:
    running = tmp_path / ".running"
    with acquire_loop_lock(running, "once"), pytest.raises(LoopBusyError) as refused:
        refuse_if_local(running, "once", [], tmp_path)
    assert str(refused.value) == f"Loop once is already running locally (pid {os.getpid()})"
    refuse_if_local(running, "once", [], tmp_path)  # released: nothing in the way


def test_a_marker_whose_server_cannot_be_asked_is_said_and_the_local_run_goes_on(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "once", ONCE)
    running = tmp_path / ".loops" / ".running"
    running.mkdir()
    marker = {
        "loop": "once",
        "workflow_id": "ll-loop:once@elsewhere:/co",
        "address": "127.0.0.1:1",
        "namespace": "default",
        "scope": [],
    }
    (running / "once.on-temporal").write_text(json.dumps(marker))
    done = run_cli(tmp_path, "run", "once", "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        "Warning: loop once may run on Temporal (workflow ll-loop:once@elsewhere:/co on "
        "127.0.0.1:1), which cannot be asked (connection refused (is it running? set "
        "LL_TEMPORAL_ADDRESS)); running locally\n"
    )
    assert (tmp_path / "worked").read_text() == "worked\n"
