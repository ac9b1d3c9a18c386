"""Ctrl-C reaches `ll-loop` even when it was started with SIGINT ignored (a background job
of a shell without job control): spec ll-loop-cli.md §4.5 ("Ctrl-C gives 130
everywhere"), decisions.md "SIGINT/SIGTERM during run or resume".

Python installs its KeyboardInterrupt handler only when SIGINT is not ignored at start, so
`watch` or a `--queue` wait started that way used to ignore Ctrl-C for good, and the
actions inherited the ignored SIGINT. Each `ll-loop` here starts with SIGINT ignored."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

from fixtures.cli_support import (
    LL_LOOP,
    cli_env,
    normalize,
    run_cli,
    wait_for_action_start,
    write_loop,
)

WAIT_SECONDS = 30.0
SIGINT_BIT = 1 << (signal.SIGINT - 1)  # its bit in /proc/<pid>/status's SigIgn mask


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start(root: Path, *args: str) -> subprocess.Popen[str]:
    """`ll-loop <args>` in its own session (as a job), started with SIGINT ignored."""
    return subprocess.Popen(
        [str(LL_LOOP), *args],
        cwd=root,
        env=cli_env(root),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_ignore_sigint,
    )


def _interrupt(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    os.killpg(process.pid, signal.SIGINT)
    try:
        out, err = process.communicate(timeout=WAIT_SECONDS)
    finally:
        process.kill()
    return process.returncode, normalize(out), normalize(err)


GATED = """\
name: gated
initial: wait
states:
  wait:
    action: "while [ ! -f gate ]; do sleep 0.05; done"
    next: done
  done:
    terminal: true
"""


def test_watch_started_ignoring_sigint_stops_on_ctrl_c(tmp_path: Path) -> None:
    write_loop(tmp_path, "gated", GATED)
    assert run_cli(tmp_path, "run", "gated", "--background").returncode == 0
    wait_for_action_start(tmp_path, "gated")  # watched while it runs
    watcher = _start(tmp_path, "watch", "gated")
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().startswith("Watching loop: gated (pid ")
        code, _, err = _interrupt(watcher)
    finally:
        (tmp_path / "gate").touch()
    assert code == 130
    assert err == (
        "Stopped watching; gated is not affected "
        "(ll-loop status gated; stop it with: ll-loop stop gated)\n"
    )


def _scoped(name: str, action: str) -> str:
    return (
        f"name: {name}\ninitial: work\nscope: [src]\nstates:\n  work:\n"
        f"    action: {action}\n    next: done\n  done:\n    terminal: true\n"
    )


def test_a_queued_run_started_ignoring_sigint_gives_up_on_ctrl_c(tmp_path: Path) -> None:
    write_loop(tmp_path, "alpha", _scoped("alpha", '"while [ ! -f gate ]; do sleep 0.05; done"'))
    write_loop(tmp_path, "beta", _scoped("beta", "echo beta"))
    assert run_cli(tmp_path, "run", "alpha", "--background").returncode == 0
    wait_for_action_start(tmp_path, "alpha")  # alpha holds the scope
    queued = _start(tmp_path, "run", "beta", "--queue")
    try:
        assert queued.stderr is not None
        assert "Loop beta waits for running loop alpha" in queued.stderr.readline()
        code, out, err = _interrupt(queued)
    finally:
        (tmp_path / "gate").touch()
    assert (code, out, err) == (130, "", "ll-loop: interrupted\n")
    assert not (tmp_path / ".loops" / ".running" / "beta.state.json").exists()


_ACTION_MASK = re.compile(r"\| SigIgn:\s+([0-9a-f]+)$")
SIG_IGN_OF_ACTION = """\
name: mask
initial: look
states:
  look:
    action: "grep SigIgn /proc/self/status; while [ ! -f gate ]; do sleep 0.05; done"
    next: done
  done:
    terminal: true
"""


def test_a_run_started_ignoring_sigint_stops_on_it_and_its_action_does_not_ignore_it(
    tmp_path: Path,
) -> None:
    write_loop(tmp_path, "mask", SIG_IGN_OF_ACTION)
    run = _start(tmp_path, "run", "mask", "-v")
    assert run.stdout is not None
    mask = None
    while mask is None:
        line = run.stdout.readline()
        assert line, "the action's SigIgn line never came"
        mask = _ACTION_MASK.search(line)
    code, out, err = _interrupt(run)
    assert not int(mask.group(1), 16) & SIGINT_BIT, mask.group(0)
    assert code == 130, err
    state = json.loads((tmp_path / ".loops" / ".running" / "mask.state.json").read_text())
    assert state["status"] == "interrupted"
    assert (out, err) == (
        "       ! Action cancelled\n\n",
        "Loop interrupted: look (1 iteration, Ns)\nResume with: ll-loop resume mask\n",
    )
