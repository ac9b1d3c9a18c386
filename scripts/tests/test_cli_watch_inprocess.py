"""`ll-loop watch` and `run --background --follow` in this process (docs/user-guide.md
§9.10): a run followed live from its events (and, with `-v`, its action's output), the
summary and exit code of a run that is not under way, and `--wait` for a run to come.

The followed runs are real detached processes (`run --background`) of a shell-only loop;
the watcher, here, reaps them when they end. (test_cli_watch.py runs `ll-loop watch`
as a subprocess, where coverage is not kept.)
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from fixtures.cli_support import (
    FAILING_LOOP,
    HANDOFF_LOOP,
    cli_in_process,
    normalize,
    write_loop,
)

from little_loops.cli import main_loop

TALK = """\
name: talk
initial: a
max_iterations: 3
states:
  a:
    action: "echo one; echo two"
    next: b
  b:
    action: "echo three"
    next: done
  done: {terminal: true}
"""

_STARTED = re.compile(r"Started talk in the background \(pid (\d+)\)")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _reap(text: str) -> None:
    """Wait for the detached run `text` names (a child of this process) to end."""
    found = _STARTED.search(text)
    assert found is not None, text
    os.waitpid(int(found.group(1)), 0)


def test_run_background_follow_v_shows_the_run_live_with_its_actions_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "talk", TALK)

    code = main_loop(["run", "talk", "--background", "--follow", "-v"])
    out, err = capsys.readouterr()
    _reap(out)

    assert (code, err) == (0, "")
    assert normalize(out).splitlines()[1:] == [
        "Watching loop: talk (pid N)",
        "Max iterations: 3",
        "",
        "[1/3] a -> echo one; echo two",
        "       | one",
        "       | two",
        "       -> b (Ns)",
        "[2/3] b -> echo three",
        "       | three",
        "       -> done (Ns)",
        "",
        "Loop completed: done (2 iterations, Ns)",
    ]


def test_watch_wait_follows_a_run_started_in_the_background(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "talk", TALK)
    assert main_loop(["run", "talk", "--background"]) == 0
    started = capsys.readouterr().out

    code, out, err = cli_in_process(capsys, "watch", "talk", "--wait")
    _reap(started)

    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == [
        "Max iterations: 3",
        "",
        "[1/3] a -> echo one; echo two",
        "       -> b (Ns)",
        "[2/3] b -> echo three",
        "       -> done (Ns)",
        "",
        "Loop completed: done (2 iterations, Ns)",
    ]
    assert out.startswith("Watching loop: talk (pid N)\n")
    # the run has ended: watching it again prints its summary only
    assert cli_in_process(capsys, "watch", "talk") == (
        0,
        "Loop completed: done (2 iterations, Ns)\n",
        "",
    )


def test_watch_of_a_paused_run_prints_its_pause_and_how_to_follow_the_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "handoff", HANDOFF_LOOP)
    assert main_loop(["handoff", "-q"]) == 3
    capsys.readouterr()

    assert cli_in_process(capsys, "watch", "handoff") == (
        3,
        "Loop paused for handoff: step (1 iteration, Ns)\n"
        "Continuation: Continue with module B\n"
        "Resume with: ll-loop resume handoff\n"
        "Follow the resumed run with: ll-loop watch handoff --wait\n",
        "",
    )


def test_watch_of_a_run_stopped_by_its_cap_exits_as_the_run_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    assert main_loop(["failing", "-q"]) == 4
    capsys.readouterr()

    assert cli_in_process(capsys, "watch", "failing") == (
        4,
        "Loop stopped: fix (3 iterations, Ns) - max_iterations reached\n"
        "Resume with: ll-loop resume failing -n 6\n",
        "",
    )


def test_watch_of_a_loop_that_never_ran_is_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "talk", TALK)

    assert cli_in_process(capsys, "watch", "talk") == (1, "", "[T] No state found for: talk\n")
