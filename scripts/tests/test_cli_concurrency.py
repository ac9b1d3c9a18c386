"""Concurrency end to end: real `ll-loop` processes racing for one loop or one scope, and
`ll-loop stop` during an action, against a runner that does not react, and during a
spawned handoff."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import (
    HANDOFF_LOOP,
    LL_LOOP,
    SLOW_LOOP,
    cli_env,
    cli_in_process,
    normalize,
    run_cli,
    wait_for_action_start,
    write_loop,
)

from little_loops.cli import cmd_stop
from little_loops.cli.processes import action_groups
from little_loops.fsm.store import locking


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _default_sigint() -> None:
    """In the child: SIGINT's default, whatever pytest inherited (a background job of a
    shell without job control starts with it ignored, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Runner:
    """A real `ll-loop` process whose output is collected on a thread (reaped at exit)."""

    def __init__(self, root: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [str(LL_LOOP), *args],
            cwd=root,
            env=env or cli_env(root),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # like a terminal job: Ctrl-C goes to its group
            preexec_fn=_default_sigint,  # the tests send it SIGINT: not ignored, ever
        )
        self.pid = self.process.pid
        self.output: tuple[str, str] = ("", "")
        self._thread = threading.Thread(target=self._collect)
        self._thread.start()

    def _collect(self) -> None:
        self.output = self.process.communicate()

    def join(self, timeout: float = 20) -> tuple[int, str, str]:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "ll-loop did not end"
        out, err = self.output
        return self.process.returncode, normalize(out), normalize(err)


def _running(root: Path) -> Path:
    return root / ".loops" / ".running"


def _files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in _running(root).iterdir() if path.is_file()}


def _state(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((_running(root) / f"{name}.state.json").read_text())
    return data


def _events(root: Path, name: str) -> list[dict[str, Any]]:
    lines = (_running(root) / f"{name}.events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _ended(pid: int) -> bool:
    """Gone, or a zombie nobody reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_until(check: Any, what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _ignores_sigterm(pid: int) -> bool:
    """Whether the process has SIGTERM ignored (its `trap '' TERM` has run)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


def _scoped(name: str, scope: str, action: str) -> str:
    return (
        f"name: {name}\ninitial: work\nscope: [{scope}]\nstates:\n  work:\n"
        f"    action: {action}\n    next: done\n  done:\n    terminal: true\n"
    )


# --- one run per loop name -------------------------------------------------------------


@pytest.mark.slow
def test_a_second_start_is_refused_and_touches_none_of_the_first_runs_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "slow", SLOW_LOOP)
    assert run_cli(tmp_path, "slow", "--background").returncode == 0
    wait_for_action_start(tmp_path, "slow")
    # The run's own last write before a long wait: its action's group, after 0.2 s.
    _wait_until(lambda: "action_groups" in _state(tmp_path, "slow"), "the group record")
    first = _state(tmp_path, "slow")["pid"]
    before = _files(tmp_path)
    for args in (
        ("slow",),
        ("run", "slow", "--background"),
        ("resume", "slow"),
        ("slow", "--queue", "-q"),
    ):
        done = run_cli(tmp_path, *args)
        assert (done.returncode, done.stdout, normalize(done.stderr)) == (
            6,
            "",
            "[T] Loop slow is already running (pid N)\n",
        ), args
        assert f"(pid {first})" in done.stderr
    assert _files(tmp_path) == before  # the background log was not truncated either
    code, out, _ = cli_in_process(capsys, "stop", "slow")
    assert (code, out) == (
        0,
        "[T] Stopped slow at state 'work' (iteration 1, pid N)\nResume with: ll-loop resume slow\n",
    )
    assert _state(tmp_path, "slow")["status"] == "interrupted"


# --- scope ------------------------------------------------------------------------------


def test_overlapping_scope_refuses_then_queues_until_the_other_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "alpha", _scoped("alpha", "src", "sleep 30"))
    write_loop(tmp_path, "beta", _scoped("beta", "./src/lib/", "echo beta"))
    write_loop(tmp_path, "gamma", _scoped("gamma", "docs", "echo gamma"))
    alpha = Runner(tmp_path, "alpha")
    wait_for_action_start(tmp_path, "alpha")

    refused = run_cli(tmp_path, "beta")
    assert (refused.returncode, refused.stdout, normalize(refused.stderr)) == (
        6,
        "",
        "[T] Loop beta shares scope 'src/lib' with running loop alpha (pid N)\n"
        "  to wait until it ends instead: add --queue\n",
    )
    assert not (_running(tmp_path) / "beta.state.json").exists()
    assert run_cli(tmp_path, "gamma", "-q").returncode == 0  # a disjoint scope runs

    queued = Runner(tmp_path, "beta", "--queue")
    _wait_until(
        lambda: (
            json.loads((_running(tmp_path) / "beta.lock").read_text() or "{}").get("pid")
            == queued.pid
        ),
        "beta to queue",
    )
    assert not (_running(tmp_path) / "beta.state.json").exists()
    assert cli_in_process(capsys, "stop", "alpha")[0] == 0
    assert alpha.join()[0] == 130
    assert queued.join() == (
        0,
        "Running loop: beta\n"
        "Max iterations: 50\n"
        "\n"
        "[1/50] work -> echo beta\n"
        "       -> done (Ns)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns)\n",
        "[T] Loop beta waits for running loop alpha (pid N), which shares scope 'src/lib' "
        "(Ctrl-C to give up)\n",
    )


def test_ctrl_c_while_queued_gives_up_without_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "alpha", _scoped("alpha", "src", "sleep 30"))
    write_loop(tmp_path, "beta", _scoped("beta", "src", "echo beta"))
    alpha = Runner(tmp_path, "alpha")
    wait_for_action_start(tmp_path, "alpha")
    queued = Runner(tmp_path, "beta", "--queue")
    _wait_until(lambda: locking.read_holder(_running(tmp_path), "beta") is not None, "a queue")
    os.killpg(queued.pid, signal.SIGINT)
    code, out, err = queued.join()
    assert (code, out) == (130, "")
    assert err == (
        "[T] Loop beta waits for running loop alpha (pid N), which shares scope 'src' "
        "(Ctrl-C to give up)\n"
        "ll-loop: interrupted\n"
    )
    assert not (_running(tmp_path) / "beta.state.json").exists()
    assert not (_running(tmp_path) / "beta.events.jsonl").exists()
    assert locking.read_holder(_running(tmp_path), "beta") is None
    assert _state(tmp_path, "alpha")["status"] == "running"
    assert cli_in_process(capsys, "stop", "alpha")[0] == 0
    assert alpha.join()[0] == 130


def test_stop_of_a_queued_run_ends_it_with_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "beta", _scoped("beta", "src", "echo beta"))
    with locking.acquire_loop_lock(_running(tmp_path), "alpha", ["src"]):
        queued = Runner(tmp_path, "beta", "--queue", "-q")
        _wait_until(
            lambda: locking.read_holder(_running(tmp_path), "beta") is not None, "beta to queue"
        )
        assert cli_in_process(capsys, "stop", "beta") == (0, "[T] Stopped beta (pid N)\n", "")
        assert queued.join() == (130, "", "ll-loop: interrupted\n")
    assert not (_running(tmp_path) / "beta.state.json").exists()


# --- handing the lock over --------------------------------------------------------------

_HOLD = """
import sys, time
from pathlib import Path
from little_loops.fsm.store.locking import acquire_loop_lock
lock = acquire_loop_lock(Path(".loops/.running"), sys.argv[1])
print("held", flush=True)
sys.stdin.read()  # until the test closes it (or the process is killed)
"""


def _hold_lock(root: Path, name: str) -> subprocess.Popen[str]:
    """A process holding the loop's lock until its stdin is closed."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, name],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    return holder


def test_resume_of_a_handed_off_loop_waits_for_the_lock(tmp_path: Path) -> None:
    write_loop(tmp_path, "handoff", HANDOFF_LOOP)
    assert run_cli(tmp_path, "handoff").returncode == 3
    holder = _hold_lock(tmp_path, "handoff")
    resumed = subprocess.Popen(
        [str(LL_LOOP), "resume", "handoff"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert resumed.stderr is not None and holder.stdin is not None
    waiting = "[T] Loop handoff is still held (pid N); waiting up to 15s\n"
    assert normalize(resumed.stderr.readline()) == waiting  # it waits: let the lock go
    holder.stdin.close()
    out, err = resumed.communicate(timeout=30)
    assert (resumed.returncode, err) == (0, "")
    assert normalize(out).startswith("Resuming loop 'handoff' from state 'step' (iteration 1)\n")
    assert holder.wait() == 0
    assert holder.stdout is not None
    holder.stdout.close()


def test_resume_of_an_interrupted_loop_does_not_wait(tmp_path: Path) -> None:
    write_loop(tmp_path, "handoff", HANDOFF_LOOP)
    assert run_cli(tmp_path, "handoff", "-n", "1").returncode == 3
    state_file = _running(tmp_path) / "handoff.state.json"
    data = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**data, "status": "interrupted"}))
    holder = _hold_lock(tmp_path, "handoff")
    try:
        started = time.monotonic()
        refused = run_cli(tmp_path, "resume", "handoff")
        assert time.monotonic() - started < 5
        assert (refused.returncode, normalize(refused.stderr)) == (
            6,
            "[T] Loop handoff is already running (pid N)\n",
        )
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None and holder.stdin is not None
        holder.stdout.close()
        holder.stdin.close()


# --- stop ------------------------------------------------------------------------------

FAMILY_LOOP = """\
name: family
initial: work
states:
  work:
    action: "echo $$ > action.pid; sleep 30 & echo $! > child.pid; [ -f quick ] || sleep 30"
    next: done
  done:
    terminal: true
"""


def _action_pids(root: Path) -> list[int]:
    _wait_until(lambda: (root / "child.pid").exists(), "the action's child")
    return [int((root / name).read_text()) for name in ("action.pid", "child.pid")]


def test_stop_during_an_action_ends_its_children_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "family", FAMILY_LOOP)
    runner = Runner(tmp_path, "family")
    wait_for_action_start(tmp_path, "family")
    action, child = _action_pids(tmp_path)
    assert cli_in_process(capsys, "stop", "family") == (
        0,
        "[T] Stopped family at state 'work' (iteration 1, pid N)\n"
        "Resume with: ll-loop resume family\n",
        "",
    )
    assert runner.join()[0] == 130
    _wait_until(lambda: _ended(action) and _ended(child), "the action's processes to end", 5)
    assert _state(tmp_path, "family")["status"] == "interrupted"
    last = _events(tmp_path, "family")[-1]
    assert (last["event"], last["terminated_by"]) == ("loop_complete", "signal")


def test_stop_kills_a_runner_that_does_not_react_and_its_actions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cmd_stop, "STOP_GRACE_SECONDS", 0.3)
    write_loop(tmp_path, "family", FAMILY_LOOP)
    runner = Runner(tmp_path, "family")
    wait_for_action_start(tmp_path, "family")
    action, child = _action_pids(tmp_path)
    os.kill(runner.pid, signal.SIGSTOP)  # it cannot handle SIGTERM any more
    assert cli_in_process(capsys, "stop", "family") == (
        0,
        "[T] Stopped family at state 'work' (iteration 1, pid N)\n"
        "Resume with: ll-loop resume family\n",
        "[T] pid N still running after 0s; killing it\n",
    )
    assert runner.join()[0] == -signal.SIGKILL
    _wait_until(lambda: _ended(action) and _ended(child), "the action's processes to end", 5)
    state = _state(tmp_path, "family")
    assert (state["status"], state["terminated_by"]) == ("interrupted", "signal")
    last = _events(tmp_path, "family")[-1]
    assert {key: last[key] for key in last if key != "ts"} == {
        "event": "loop_complete",
        "final_state": "work",
        "iterations": 1,
        "terminated_by": "signal",
        "stopped_by": "ll-loop stop (killed)",
    }
    (tmp_path / "quick").write_text("")
    resumed = run_cli(tmp_path, "resume", "family")
    assert resumed.returncode == 0, resumed.stderr
    assert _state(tmp_path, "family")["iteration"] == 1


SPAWN_LOOP = """\
name: {name}
initial: step
on_handoff: spawn
states:
  step:
    action: >-
      if [ -f marker ]; then [ -f quick ] || sleep 30;
      else touch marker; echo "CONTEXT_HANDOFF: go on"; fi
    on_success: done
  done:
    terminal: true
"""

# A stand-in for claude that does what the spawned session is asked to: run the resume
# (as a child, as a real session would). `WAIT_FOR` makes it wait for a file first,
# `IGNORE_TERM` makes it ignore SIGTERM, `EXEC` makes the resume replace it.
FAKE_CLAUDE = """#!/bin/bash
if [ -n "$IGNORE_TERM" ]; then trap '' TERM; fi
if [ -n "$WAIT_FOR" ]; then while [ ! -e "$WAIT_FOR" ]; do sleep 0.05; done; fi
name="${*: -1}"
name="${name#Continue loop execution. Run: ll-loop resume }"
name="${name%%$'\\n'*}"
if [ -n "$EXEC" ]; then exec "$LL_LOOP_BIN" resume "$name"; fi
"$LL_LOOP_BIN" resume "$name"
echo "resume exited $?"
"""


def _spawn_env(root: Path, **extra: str) -> dict[str, str]:
    claude = root / "claude"
    claude.write_text(FAKE_CLAUDE)
    claude.chmod(0o755)
    env = cli_env(root)
    env.update(LL_CLAUDE_BIN=str(claude), LL_LOOP_BIN=str(LL_LOOP), **extra)
    return env


def test_stop_during_a_spawned_handoff_stops_the_resume_and_its_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "spawned", SPAWN_LOOP.format(name="spawned"))
    env = _spawn_env(tmp_path)
    assert run_cli(tmp_path, "spawned", env=env).returncode == 3
    session = _state(tmp_path, "spawned")["pid"]

    _wait_for_resumed_action(tmp_path, "spawned")
    assert cli_in_process(capsys, "stop", "spawned") == (
        0,
        "[T] Stopped spawned at state 'step' (iteration 2, pid N)\n"
        "[T] Stopped the session continuing spawned after its handoff (pid N)\n"
        "Resume with: ll-loop resume spawned\n",
        "",
    )
    _wait_until(lambda: _ended(session), "the session to end", 5)
    assert _state(tmp_path, "spawned")["status"] == "interrupted"
    (tmp_path / "quick").write_text("")
    resumed = run_cli(tmp_path, "resume", "spawned", env=env)
    assert (resumed.returncode, _state(tmp_path, "spawned")["status"]) == (0, "completed")


def test_stop_before_the_spawned_session_resumes_keeps_the_handoff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "waiter", SPAWN_LOOP.format(name="waiter"))
    env = _spawn_env(tmp_path, WAIT_FOR=str(tmp_path / "go"))
    assert run_cli(tmp_path, "waiter", env=env).returncode == 3
    session = _state(tmp_path, "waiter")["pid"]
    assert cli_in_process(capsys, "stop", "waiter") == (
        0,
        "[T] Stopped the session continuing waiter after its handoff (pid N)\n"
        "Resume with: ll-loop resume waiter\n",
        "",
    )
    _wait_until(lambda: _ended(session), "the session to end", 5)
    state = _state(tmp_path, "waiter")
    assert (state["status"], state["continuation_prompt"]) == ("awaiting_continuation", "go on")
    assert cli_in_process(capsys, "stop", "waiter") == (
        1,
        "",
        "[T] Loop not running: waiter (status: awaiting_continuation)\n",
    )
    (tmp_path / "quick").write_text("")
    resumed = run_cli(tmp_path, "resume", "waiter", env=env)
    assert (resumed.returncode, _state(tmp_path, "waiter")["status"]) == (0, "completed")


def _wait_for_resumed_action(root: Path, name: str) -> None:
    def started() -> bool:
        names = [event["event"] for event in _events(root, name)]
        return "loop_resume" in names and names[-1] == "action_start"

    _wait_until(started, "the spawned resume to start its action")
    # The event is written just before the action's process group exists: wait for it.
    _wait_until(lambda: action_groups(_state(root, name)["pid"]), "the action's process")


def test_stop_of_a_resume_that_is_the_session_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "direct", SPAWN_LOOP.format(name="direct"))
    env = _spawn_env(tmp_path, EXEC="1")
    assert run_cli(tmp_path, "direct", env=env).returncode == 3
    session = _state(tmp_path, "direct")["pid"]
    _wait_for_resumed_action(tmp_path, "direct")
    assert _state(tmp_path, "direct")["pid"] == session  # exec: the resume is the session
    assert cli_in_process(capsys, "stop", "direct") == (
        0,
        "[T] Stopped direct at state 'step' (iteration 2, pid N)\n"
        "Resume with: ll-loop resume direct\n",
        "",
    )
    _wait_until(lambda: _ended(session), "the session to end", 5)


def test_a_session_ignoring_sigterm_is_killed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cmd_stop, "STOP_GRACE_SECONDS", 0.3)
    write_loop(tmp_path, "stubborn", SPAWN_LOOP.format(name="stubborn"))
    env = _spawn_env(tmp_path, WAIT_FOR=str(tmp_path / "go"), IGNORE_TERM="1")
    assert run_cli(tmp_path, "stubborn", env=env).returncode == 3
    session = _state(tmp_path, "stubborn")["pid"]
    _wait_until(lambda: _ignores_sigterm(session), "the session to set its trap")
    assert cli_in_process(capsys, "stop", "stubborn") == (
        0,
        "[T] Stopped the session continuing stubborn after its handoff (pid N)\n"
        "Resume with: ll-loop resume stubborn\n",
        "[T] session (pid N) still running after 0s; killing it\n",
    )
    _wait_until(lambda: _ended(session), "the session to end", 5)
    assert _state(tmp_path, "stubborn")["status"] == "awaiting_continuation"


def test_a_queued_background_run_waits_in_the_background(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "beta", _scoped("beta", "src", "echo beta"))
    log = _running(tmp_path) / "beta.log"
    with locking.acquire_loop_lock(_running(tmp_path), "alpha", ["src"]):
        assert cli_in_process(capsys, "run", "beta", "--background", "--queue", "-q") == (
            0,
            "",
            "",
        )
        _wait_until(lambda: log.exists() and "waits for" in log.read_text(), "beta to queue")
        assert normalize(log.read_text()).startswith(
            "[T] Loop beta waits for running loop alpha (pid N), which shares scope 'src'"
        )
    _wait_until(
        lambda: (
            (_running(tmp_path) / "beta.state.json").exists()
            and _state(tmp_path, "beta")["status"] == "completed"
        ),
        "beta to run once alpha let go",
    )


def test_sigterm_while_queued_in_process_exits_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "beta", _scoped("beta", "src", "echo beta"))
    before = signal.getsignal(signal.SIGTERM)
    with locking.acquire_loop_lock(_running(tmp_path), "alpha", ["src"]):
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        code, _, err = cli_in_process(capsys, "run", "beta", "--queue", "-q")
        timer.join()
    assert (code, err) == (130, "ll-loop: interrupted\n")
    assert signal.getsignal(signal.SIGTERM) == before
    assert locking.read_holder(_running(tmp_path), "beta") is None
