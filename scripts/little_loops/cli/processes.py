"""Signalling processes and process groups for `ll-loop stop`.

`ll-loop stop` signals the process running a loop; that process stops its action's
process group itself. When it does not react and has to be killed, its actions (each in
a session of its own, so they outlive it) must be found first and killed with it:
`action_groups` lists the children of a process that lead their own process group. It
reads `/proc` (Linux); where there is none it finds nothing and the actions are left to
end on their own.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from little_loops.fsm.store.state_files import is_process_alive

POLL_SECONDS = 0.05
PROC = Path("/proc")


def action_groups(pid: int) -> list[int]:
    """The children of `pid` that lead their own process group (its running actions)."""
    if not PROC.is_dir():
        return []
    leaders = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        parent_and_group = _parent_and_group(entry / "stat")
        child = int(entry.name)
        if parent_and_group == (pid, child):
            leaders.append(child)
    return sorted(leaders)


def _stat_fields(stat_path: Path) -> list[str]:
    """The fields after `pid (comm)` of a `/proc/<pid>/stat` file ([] when unreadable)."""
    try:
        text = stat_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    # `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses.
    return text[text.rfind(")") + 2 :].split()


def _parent_and_group(stat_path: Path) -> tuple[int, int] | None:
    """(ppid, pgrp) of a process; None when it is gone or the file is unreadable."""
    fields = _stat_fields(stat_path)
    try:
        return int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None


def send(pid: int, signum: int) -> None:
    """Signal `pid`; a process that ended meanwhile is what we wanted anyway."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def send_group(pgid: int, signum: int) -> None:
    """Signal a process group; a group that is gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def is_running(pid: int) -> bool:
    """Alive, and not a zombie: a process that ended but was not reaped yet has ended."""
    return is_process_alive(pid) and _stat_fields(PROC / str(pid) / "stat")[:1] != ["Z"]


def wait_until_gone(pid: int, seconds: float) -> bool:
    """Wait up to `seconds` for `pid` to end; True when it did."""
    deadline = time.monotonic() + seconds
    while is_running(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def leads_a_session(pid: int) -> bool:
    """True when `pid` runs as the leader of its own session (as a spawned handoff does)."""
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False
