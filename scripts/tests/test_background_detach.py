"""`ll-loop run --background` really detaches (issue 11 item 17): the run is the leader
of its own session and process group, reads stdin from /dev/null, and finishes after the
shell that started it has exited and that shell's process group was signalled (what
closing a terminal does). With `start_new_session=False` every one of these fails."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from fixtures.cli_support import LL_LOOP, cli_env, write_loop

WAITING = """\
name: waiting
initial: work
states:
  work:
    action: "while [ ! -f go ]; do sleep 0.05; done; echo went"
    timeout: 60
    next: done
  done:
    terminal: true
"""


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, ppid, pgrp, session, ..."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def _wait_for(what: str, check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"waited {seconds}s for {what}"
        time.sleep(0.05)


def _status(root: Path) -> str | None:
    path = root / ".loops/.running/waiting.state.json"
    try:
        return str(json.loads(path.read_text())["status"])
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def test_a_background_run_leaves_the_callers_session_and_outlives_its_shell(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "waiting", WAITING)
    # The shell leads a process group of its own, signalled below as closing a terminal
    # signals the terminal's group.
    shell = subprocess.Popen(
        ["bash", "-c", f"'{LL_LOOP}' run waiting --background; exit"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdin=subprocess.PIPE,  # not /dev/null: the run must not inherit it
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    out, err = shell.communicate(timeout=30)
    assert (shell.returncode, err) == (0, "")
    found = re.search(r"in the background \(pid (\d+)\)", out)
    assert found, out
    pid = int(found.group(1))
    _wait_for("the run to start its action", lambda: _status(tmp_path) == "running")

    _state, _ppid, pgrp, session = _stat_fields(pid)[:4]
    assert (int(pgrp), int(session)) == (pid, pid)  # leader of its own group and session
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"

    with contextlib.suppress(ProcessLookupError):  # nobody left in the shell's group
        os.killpg(shell.pid, signal.SIGHUP)
    (tmp_path / "go").touch()
    _wait_for("the background run to finish", lambda: _status(tmp_path) == "completed")
    log_file = tmp_path / ".loops/.running/waiting.log"
    # The state file says completed a moment before the summary reaches the log.
    _wait_for("the summary in the log", lambda: "\nLoop completed: " in log_file.read_text())
    log = log_file.read_text()
    assert "\nLoop completed: done (1 iteration, " in log
