"""No action outlives the worker that runs it: a ledger of its groups and a watchdog.

A worker (`ll-loop worker`) runs each action in a process group of its own, and may keep
a group an action left in the background until the run ends. Killed with -9, the worker
cannot stop them. So:

- `GroupLedger` keeps, in a small JSON file of the worker's own
  (`<dir>/<host>-<pid>.json`: `{"host", "worker_pid", "groups": [{pgid, started}]}`),
  every group the worker has running, rewritten whenever one starts or ends;
- `start_watchdog` starts a tiny process in a session of its own that waits on a pipe
  from the worker. The pipe closes when the worker ends, however it ends; the watchdog
  then stops every group the ledger still lists (SIGTERM, then SIGKILL `KILL_AFTER_SECONDS`
  later, as at the end of a local run) and removes the ledger;
- `sweep` (at worker start) does the same for the ledgers of this host's workers that no
  longer run, should a watchdog have died with its worker (a reboot, a kill of both).

Why not `prctl(PR_SET_PDEATHSIG)` on the action's shell: it reaches that one process only
(not what it started, nor its background jobs), and it fires when the *thread* that
started the action ends, and the worker starts actions from a pool of threads.

Groups are checked to be the very ones recorded (`ActionGroup.members`) before a signal.

Run as `python -m little_loops.fsm.process.group_watchdog <ledger>` (the watchdog).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from little_loops.fsm.process.process_groups import ActionGroup, read_stat

__all__ = ["KILL_AFTER_SECONDS", "GroupLedger", "start_watchdog", "stop_groups", "sweep"]

KILL_AFTER_SECONDS = 2.0
"""SIGTERM first; what still runs this much later gets SIGKILL."""

_POLL_SECONDS = 0.05


class GroupLedger:
    """The action groups this worker process has running (see the module doc)."""

    def __init__(self, directory: Path) -> None:
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.path = directory / f"{self.host}-{self.pid}.json"
        self._groups: dict[int, ActionGroup] = {}
        self._lock = threading.Lock()
        directory.mkdir(parents=True, exist_ok=True)
        self._write()

    def add(self, group: ActionGroup) -> None:
        with self._lock:
            self._groups[group.pgid] = group
            self._write()

    def discard(self, pgid: int) -> None:
        with self._lock:
            if self._groups.pop(pgid, None) is not None:
                self._write()

    def close(self) -> None:
        """The worker ends cleanly, its groups stopped: nothing is left to watch."""
        with contextlib.suppress(OSError):
            self.path.unlink()

    def _write(self) -> None:
        record = {
            "host": self.host,
            "worker_pid": self.pid,
            "groups": [group.to_dict() for group in self._groups.values()],
        }
        temporary = self.path.with_suffix(".tmp")
        try:  # a ledger that cannot be written never fails an action
            temporary.write_text(json.dumps(record) + "\n", encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError:
            pass


def start_watchdog(ledger: Path) -> subprocess.Popen[bytes]:
    """The watchdog of `ledger`; keep the returned process (its stdin) for the worker's
    life. Its pipe is not inherited by actions (Popen closes other descriptors)."""
    return subprocess.Popen(
        [sys.executable, "-m", "little_loops.fsm.process.group_watchdog", str(ledger)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a signal to the worker's group does not reach it
    )


def stop_groups(groups: list[ActionGroup]) -> None:
    """SIGTERM every group that is still the one recorded; SIGKILL what remains later."""
    live = [group for group in groups if group.alive()]
    for group in live:
        _signal_group(group.pgid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_AFTER_SECONDS
    while any(group.alive() for group in live) and time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
    for group in live:
        if group.alive():
            _signal_group(group.pgid, signal.SIGKILL)


def sweep(directory: Path) -> list[int]:
    """Stop the groups recorded by this host's workers that no longer run, and remove
    their ledgers; returns the process groups stopped."""
    stopped: list[int] = []
    if not directory.is_dir():
        return stopped
    host = socket.gethostname()
    for path in sorted(directory.glob("*.json")):
        record = _read(path)
        if record is None or record.get("host") != host:
            continue
        pid = record.get("worker_pid")
        if isinstance(pid, int) and pid != os.getpid() and _runs(pid):
            continue
        groups = _groups_of(record)
        stopped += [group.pgid for group in groups if group.alive()]
        stop_groups(groups)
        with contextlib.suppress(OSError):
            path.unlink()
    return stopped


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _groups_of(record: dict[str, Any]) -> list[ActionGroup]:
    groups = record.get("groups")
    if not isinstance(groups, list):
        return []
    return [ActionGroup.from_dict(g) for g in groups if isinstance(g, dict) and "pgid" in g]


def _runs(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is not None and stat.state != "Z"


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _watch(ledger: Path) -> None:
    """Wait for the worker's end (EOF on stdin), then stop what its ledger lists."""
    with contextlib.suppress(OSError):
        while sys.stdin.buffer.read(4096):
            pass
    record = _read(ledger)
    if record is None:
        return  # the worker ended cleanly and removed it
    stop_groups(_groups_of(record))
    with contextlib.suppress(OSError):
        ledger.unlink()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the worker
    _watch(Path(sys.argv[1]))
