"""No action outlives its worker (issue 23 item 3; docs/scaling.md §3): the ledger of a
worker's process groups, its watchdog, and the sweep at the next worker's start. Real
processes, killed with -9."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from little_loops.fsm.process.group_watchdog import sweep
from little_loops.fsm.process.process_groups import ActionGroup

GONE_WITHIN_SECONDS = 6.0

FAKE_WORKER = """\
import subprocess, sys, time
from pathlib import Path
from little_loops.fsm.process.group_watchdog import GroupLedger, start_watchdog
from little_loops.fsm.process.process_groups import ActionGroup
action = subprocess.Popen(["sh", "-c", "sleep 300 & echo $! > child; wait"], start_new_session=True)
ledger = GroupLedger(Path(sys.argv[1]))
watchdog = start_watchdog(ledger.path)
ledger.add(ActionGroup.of(action.pid))
print(action.pid, flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + GONE_WITHIN_SECONDS
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_worker_killed_with_9_leaves_no_action_group_running(tmp_path: Path) -> None:
    ledgers = tmp_path / ".workers"
    worker = subprocess.Popen(
        [sys.executable, "-c", FAKE_WORKER, str(ledgers)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert worker.stdout is not None
    shell = int(worker.stdout.readline())
    deadline = time.monotonic() + 10
    while not _written(tmp_path / "child"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child = int((tmp_path / "child").read_text())
    try:
        worker.kill()
        worker.wait()
        assert wait_gone(shell) and wait_gone(child)
        deadline = time.monotonic() + GONE_WITHIN_SECONDS
        while list(ledgers.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(ledgers.glob("*.json")) == []  # the watchdog removed the ledger
    finally:
        for pid in (shell, child):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def _written(path: Path) -> bool:
    return path.exists() and path.read_text().strip() != ""


def test_the_sweep_stops_only_the_groups_of_workers_that_no_longer_run(tmp_path: Path) -> None:
    host = socket.gethostname()
    dead_worker = subprocess.Popen(["true"])
    dead_worker.wait()
    live_worker = subprocess.Popen(["sleep", "300"])
    orphan = subprocess.Popen(["sleep", "300"], start_new_session=True)
    kept = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        for worker, action in ((dead_worker, orphan), (live_worker, kept)):
            record = {
                "host": host,
                "worker_pid": worker.pid,
                "groups": [ActionGroup.of(action.pid).to_dict()],
            }
            (tmp_path / f"{host}-{worker.pid}.json").write_text(json.dumps(record))

        assert sweep(tmp_path) == [orphan.pid]
        assert orphan.wait(timeout=GONE_WITHIN_SECONDS) == -signal.SIGTERM
        assert kept.poll() is None
        assert [p.name for p in tmp_path.glob("*.json")] == [f"{host}-{live_worker.pid}.json"]
    finally:
        for process in (live_worker, orphan, kept):
            process.kill()
            process.wait()
