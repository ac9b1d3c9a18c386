"""`ll-loop resume --background` in this process (docs/user-guide.md, background runs;
`cli.background`): a run that cannot be resumed is refused here, in one line, before
anything is detached; a resumable one is started detached, and its log is the run's
output. (test_background_detach.py starts `ll-loop` as a subprocess, where coverage is
not kept.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from fixtures.cli_support import FAILING_LOOP, SIMPLE_LOOP, cli_in_process, write_loop

from little_loops.cli import main_loop


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_resume_background_without_a_saved_run_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)

    assert cli_in_process(capsys, "resume", "simple", "--background") == (
        1,
        "",
        "[T] Nothing to resume for: simple\n",
    )
    assert not (tmp_path / ".loops" / ".running" / "simple.log").exists()


def test_resume_background_of_a_completed_run_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert main_loop(["simple", "-q"]) == 0

    assert cli_in_process(capsys, "resume", "simple", "--background") == (
        1,
        "",
        "[T] loop 'simple' already completed; start a new run with: ll-loop run simple\n",
    )
    assert not (tmp_path / ".loops" / ".running" / "simple.log").exists()


def test_resume_background_of_an_interrupted_run_goes_on_detached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    assert main_loop(["failing", "-q", "-n", "1"]) == 4
    capsys.readouterr()

    code = main_loop(["resume", "failing", "--background", "-n", "3"])
    out = capsys.readouterr().out
    started = re.search(r"Started failing in the background \(pid (\d+)\)", out)
    assert (code, started is not None) == (0, True)
    assert started is not None
    os.waitpid(int(started.group(1)), 0)  # our child: wait for the detached run's end

    assert out.splitlines()[1:] == [
        "  log:    .loops/.running/failing.log",
        "  status: ll-loop status failing",
        "  stop:   ll-loop stop failing",
    ]
    log = (tmp_path / ".loops" / ".running" / "failing.log").read_text()
    assert log.startswith("Resuming loop 'failing' from state 'fix' (iteration 1)\n")
    assert "Loop stopped: fix (3 iterations, " in log
    status = cli_in_process(capsys, "status", "failing")[1].splitlines()
    assert status[1] == "Status: interrupted (max_iterations reached after 3 iterations)"
