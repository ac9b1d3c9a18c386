"""An action left running by a runner killed with SIGKILL is shown, and stopped before
`resume` runs it again or by `stop`. Issue 11 item 3.

Real `ll-loop` processes in `tmp_path`; the runner is really killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, run_cli, write_loop

from little_loops.cli.processes import is_running
from little_loops.fsm.errors import StateFileError
from little_loops.fsm.process.process_groups import ActionGroup, start_ticks
from little_loops.fsm.store.state_files import LoopState, StatePersistence

# The first time, `work` starts a long side effect; run again (after a resume), it ends.
SIDE_EFFECT_LOOP = """\
name: side
initial: work
states:
  work:
    action: >-
      if [ -f started ]; then echo again >> effects; exit 0; fi;
      touch started; echo $$ > action.pid; sleep 300; echo late >> effects
    next: done
  done:
    terminal: true
"""


def _state(root: Path) -> dict[str, object]:
    data = json.loads((root / ".loops/.running/side.state.json").read_text())
    assert isinstance(data, dict)
    return data


def _kill_runner_mid_action(root: Path) -> int:
    """Start the loop, wait until its action's group is recorded, SIGKILL the runner;
    return the action's pid (its group id)."""
    write_loop(root, "side", SIDE_EFFECT_LOOP)
    runner = subprocess.Popen(
        [str(LL_LOOP), "run", "side", "-q"],
        cwd=root,
        env=cli_env(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state_file = root / ".loops/.running/side.state.json"
    deadline = time.monotonic() + 30
    while not (state_file.exists() and "action_groups" in state_file.read_text()):
        if time.monotonic() > deadline:
            runner.terminate()  # it stops its action itself: nothing is left behind
            runner.wait()
            raise AssertionError("the action's group was never recorded")
        time.sleep(0.02)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    pid = int((root / "action.pid").read_text())
    assert is_running(pid)  # the action outlived its runner
    return pid


@pytest.fixture
def orphan(tmp_path: Path) -> Iterator[int]:
    pid = _kill_runner_mid_action(tmp_path)
    yield pid
    if is_running(pid):
        os.killpg(pid, signal.SIGKILL)


def test_status_shows_the_action_a_dead_runner_left_running(tmp_path: Path, orphan: int) -> None:
    result = run_cli(tmp_path, "status", "side")
    assert result.returncode == 0
    assert f"Action still running: pid group {orphan} (from a runner that died)\n" in result.stdout
    assert _state(tmp_path)["action_groups"] == [{"pgid": orphan, "started": start_ticks(orphan)}]


def test_resume_stops_the_orphaned_action_before_running_it_again(
    tmp_path: Path, orphan: int
) -> None:
    result = run_cli(tmp_path, "resume", "side")
    assert result.returncode == 0, result.stderr
    assert (
        f"Stopped the action left running by a runner that died (pid group {orphan})"
        in result.stderr
    )
    assert not is_running(orphan)
    # The cut-off action ran once more; the old copy never got to its side effect.
    assert (tmp_path / "effects").read_text() == "again\n"
    assert "pid group" not in run_cli(tmp_path, "status", "side").stdout


def test_stop_stops_the_orphaned_action(tmp_path: Path, orphan: int) -> None:
    result = run_cli(tmp_path, "stop", "side")
    assert result.returncode == 0, result.stderr
    assert f"Stopped the action left running by a runner that died (pid group {orphan})" in (
        result.stdout
    )
    assert not is_running(orphan)
    assert _state(tmp_path)["status"] == "interrupted"


def test_a_group_id_reused_by_another_process_is_not_taken_for_the_action() -> None:
    """The recorded start time must match the leader's: a newer process is left alone."""
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        started = start_ticks(process.pid)
        assert started is not None
        assert ActionGroup(process.pid, started).members() == [process.pid]
        assert ActionGroup(process.pid, started - 1).members() == []  # someone else's now
    finally:
        process.kill()
        process.wait()
    assert ActionGroup(process.pid, started).members() == []


def test_action_groups_are_an_additive_state_key(tmp_path: Path) -> None:
    persistence = StatePersistence("demo", tmp_path)
    persistence.initialize()
    state = LoopState("demo", "a", 1, {}, None, None, "2025-01-01T00:00:00+00:00", "", "running")
    state.action_groups = [{"pgid": 123, "started": 456}]
    persistence.save_state(state, durable=False)
    loaded = persistence.load_state_checked()
    assert loaded is not None and loaded.action_groups == [{"pgid": 123, "started": 456}]
    data = json.loads(persistence.state_file.read_text())
    data["action_groups"] = [{"pgid": "x"}]
    persistence.state_file.write_text(json.dumps(data))
    with pytest.raises(StateFileError, match="'action_groups' must be an array"):
        persistence.load_state_checked()
