"""`ll-loop watch --wait` follows a run that started and ended between two of its polls
(issue 29 item 5): the new run's lines and summary are shown, not the summary of the run
before it. The watcher runs here; the loop really runs (`ll-loop run`, a subprocess)
exactly while the watcher waits, at its first poll: the watcher's `sleep` is the hook."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_in_process, run_cli, write_loop

from little_loops.cli import cmd_watch

LOOP = """\
name: short
initial: first
max_iterations: 5
states:
  first:
    action: "cat said 2>/dev/null || echo nothing yet"
    on_success: done
  done:
    terminal: true
"""


class _RunDuringFirstPoll:
    """The `time` module as cmd_watch sees it, but its first `sleep` runs the loop to its
    end in another process (so the run comes and goes while the watcher waits)."""

    def __init__(self, root: Path) -> None:
        self.root, self.polls = root, 0

    def sleep(self, seconds: float) -> None:
        self.polls += 1
        if self.polls == 1:
            assert run_cli(self.root, "run", "short", "-q").returncode == 0
        elif self.polls > 100:  # the watcher would wait forever: fail instead
            raise AssertionError("watch --wait never followed the run that came and went")
        else:
            time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_watch_wait_follows_a_run_that_started_and_ended_while_it_waited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "short", LOOP)
    assert run_cli(tmp_path, "run", "short", "-q").returncode == 0  # the run before
    (tmp_path / "said").write_text("the new run\n")
    hook = _RunDuringFirstPoll(tmp_path)
    monkeypatch.setattr(cmd_watch, "time", hook)

    code, out, err = cli_in_process(capsys, "watch", "short", "--wait", "-v")

    assert hook.polls >= 1
    assert (code, err) == (0, "")
    assert out == (
        "Watching loop: short (pid N)\n"
        "Max iterations: 5\n"
        "\n"
        "[1/5] first -> cat said 2>/dev/null || echo nothing yet\n"
        "       | the new run\n"
        "       ✓ success\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n"
    )
