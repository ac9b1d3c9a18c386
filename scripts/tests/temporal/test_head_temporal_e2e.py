"""A HEAD loop's sub-loop on the Temporal engine end to end (spec/ll-head-dialect.md §9b):
a real `temporal server start-dev`, real `ll-loop worker` processes and the real `ll-loop`.
The worker is killed with SIGKILL while the child's action runs; the next worker picks the
run up inside the child, and no child state that had finished runs again."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from fixtures.cli_support import run_cli, write_loop
from fixtures.processes import processes_with
from fixtures.temporal_workers import Worker, wait_until
from head_loops import PARENT, child_waiting_with


def _status(checkout: Path, env: dict[str, str]) -> dict[str, object]:
    shown = run_cli(checkout, "status", "parent", "--json", env=env)
    loaded: dict[str, object] = json.loads(shown.stdout) if shown.returncode == 0 else {}
    return loaded


def kill_the_worker_inside_the_child(
    env: dict[str, str], workers: list[Worker], root: Path
) -> Path:
    """Run `parent` detached; once the child's check runs, kill its worker (SIGKILL), let
    the check finish and start a second worker; return the checkout once the run has
    completed (the orphan, if any, never outlives a failed test)."""
    marker = f"child-{time.monotonic_ns()}"
    checkout = root / "co"
    checkout.mkdir()
    write_loop(checkout, "parent", PARENT)
    write_loop(
        checkout, "child", child_waiting_with(f"while [ ! -f go ]; do sleep 0.2; : {marker}; done")
    )
    first = Worker(checkout, env)
    workers.append(first)
    started = run_cli(checkout, "run", "parent", "--detach", env=env)
    assert started.returncode == 0, started.stderr
    wait_until(lambda: processes_with(marker), "the child's check to start")
    first.kill()
    orphans = processes_with(marker)
    (checkout / "go").write_text("", encoding="utf-8")

    second = Worker(checkout, env)
    workers.append(second)
    try:
        wait_until(lambda: _status(checkout, env).get("status") == "completed", "the run")
    finally:
        for pid in set(orphans) & set(processes_with(marker)):
            os.killpg(pid, signal.SIGKILL)  # never leave the orphan behind a failed test
    return checkout


def test_a_worker_killed_inside_a_child_leaves_the_run_to_the_next_worker_inside_the_child(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    # The action of the dead worker is retried once its heartbeat times out, and its next
    # workflow task first waits for the dead worker's sticky queue (10 s): short ones.
    env = {**env, "LL_TEMPORAL_HEARTBEAT_SECONDS": "5", "LL_TEMPORAL_STICKY_SECONDS": "2"}
    checkout = kill_the_worker_inside_the_child(env, workers, tmp_path)

    state = _status(checkout, env)
    assert state["current_state"] == "done"
    # `first` and the first `bump` had finished: they never ran again; the check the dead
    # worker was running ran again (at least once more), then bump and check once more.
    steps = (checkout / "child-steps").read_text().splitlines()
    assert steps[:3] == ["first", "bump", "check"]
    assert steps.count("first") == 1
    assert steps[-2:] == ["bump", "check"]
    assert steps.count("bump") == 2
