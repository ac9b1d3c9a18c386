"""An action a dead runner left running that ignores SIGTERM is still stopped: after the
grace period it gets SIGKILL (issue 29 item 10). Real processes in their own groups;
the runner is really killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, normalize, run_cli, write_loop

from little_loops.cli.processes import is_running
from little_loops.fsm.process.process_groups import ActionGroup, start_ticks
from little_loops.fsm.store import orphaned_actions

# `trap '' TERM`: the shell and the `sleep` it starts (an ignored signal stays ignored
# across exec) both ignore SIGTERM. The pid is written once the trap is set.
STUBBORN = "trap '' TERM; echo $$ > action.pid; sleep 300; echo late >> effects"

STUBBORN_LOOP = f"""\
name: stubborn
initial: work
states:
  work:
    action: "{STUBBORN}"
    next: done
  done:
    terminal: true
"""


def _wait_for(path: Path, what: str) -> None:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def stubborn_group(tmp_path: Path) -> Iterator[ActionGroup]:
    """A process group whose leader and child ignore SIGTERM."""
    process = subprocess.Popen(["/bin/sh", "-c", STUBBORN], cwd=tmp_path, start_new_session=True)
    _wait_for(tmp_path / "action.pid", "the trap to be set")
    started = start_ticks(process.pid)
    assert started is not None
    yield ActionGroup(process.pid, started)
    if is_running(process.pid):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace(
    stubborn_group: ActionGroup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(orphaned_actions, "ORPHAN_GRACE_SECONDS", 0.2)
    assert stubborn_group.alive()
    assert orphaned_actions.stop_group(stubborn_group) is True
    assert not stubborn_group.alive()
    assert stubborn_group.members() == []


def _kill_runner_mid_action(root: Path) -> tuple[int, int]:
    """Run the loop, wait until the action's group is recorded and its trap set, SIGKILL
    the runner; return the action's pid (its group id) and the runner's."""
    write_loop(root, "stubborn", STUBBORN_LOOP)
    runner = subprocess.Popen(
        [str(LL_LOOP), "run", "stubborn", "-q"],
        cwd=root,
        env=cli_env(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state_file = root / ".loops/.running/stubborn.state.json"
    deadline = time.monotonic() + 30
    while not (state_file.exists() and "action_groups" in state_file.read_text()):
        if time.monotonic() > deadline:
            runner.kill()
            runner.wait()
            raise AssertionError("the action's group was never recorded")
        time.sleep(0.02)
    _wait_for(root / "action.pid", "the trap to be set")
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    pid = int((root / "action.pid").read_text())
    assert is_running(pid)  # the action outlived its runner
    return pid, runner.pid


@pytest.mark.slow
def test_stop_kills_an_orphaned_action_that_ignores_sigterm(tmp_path: Path) -> None:
    """Through `ll-loop stop`: the SIGTERM grace (5 s) passes, then SIGKILL."""
    pid, runner = _kill_runner_mid_action(tmp_path)
    try:
        result = run_cli(tmp_path, "stop", "stubborn")
        assert result.returncode == 0, result.stderr
        assert normalize(result.stdout).splitlines() == [
            f"[T] Stopped the action left running by a runner that died (pid group {pid})",
            f"[T] Marked stubborn as interrupted (process {runner} was gone)",
            "Resume with: ll-loop resume stubborn",
        ]
        assert not is_running(pid)
        state = json.loads((tmp_path / ".loops/.running/stubborn.state.json").read_text())
        assert state["status"] == "interrupted"
        assert not (tmp_path / "effects").exists()
    finally:
        if is_running(pid):
            os.killpg(pid, signal.SIGKILL)
