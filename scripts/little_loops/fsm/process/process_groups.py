"""Process groups as `/proc` shows them: who is in one, and is it still the one we started.

Every action runs in a session (hence a process group) of its own, whose id is the pid
of the action's shell. A group id is remembered so that a later process (`status`,
`stop`, `resume`) can find what a runner that died left running. Before anything is
signalled it must be the same group, not a newer process that got the same number:

- while a group has members, Linux does not hand its number out again, so a member
  with that group id and session id, started no earlier than the action, is ours;
- when the leader (the action's shell) is still there, its start time must match too.

Zombies do not count: they have ended, only their exit status waits to be collected.
Where there is no `/proc` (not Linux), nothing is found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROC = Path("/proc")


@dataclass(frozen=True)
class ProcStat:
    """The fields of `/proc/<pid>/stat` we use."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start_ticks: int  # since boot, in clock ticks


def read_stat(pid: int) -> ProcStat | None:
    """The stat of `pid`; None when it is gone or unreadable."""
    try:
        text = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return parse_stat(pid, text)


def parse_stat(pid: int, text: str) -> ProcStat | None:
    """Parse one stat line: `pid (comm) state ppid pgrp session ... starttime ...`."""
    fields = text[text.rfind(")") + 2 :].split()  # comm may hold spaces and parentheses
    try:
        return ProcStat(
            pid, fields[0], int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
        )
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot); None when unknown."""
    stat = read_stat(pid)
    return stat.start_ticks if stat is not None else None


def live_processes() -> list[ProcStat]:
    """Every process `/proc` lists, zombies left out."""
    if not PROC.is_dir():
        return []
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            stat = read_stat(int(entry.name))
            if stat is not None and stat.state != "Z":
                found.append(stat)
    return found


@dataclass(frozen=True)
class ActionGroup:
    """A recorded action process group: its id and its leader's start time."""

    pgid: int
    started: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"pgid": self.pgid, "started": self.started}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActionGroup:
        started = data.get("started")
        return cls(int(data["pgid"]), started if isinstance(started, int) else None)

    @classmethod
    def of(cls, pid: int) -> ActionGroup:
        """The group a just-started action (session leader `pid`) runs in."""
        return cls(pid, start_ticks(pid))

    @classmethod
    def left_behind(cls, pgid: int) -> ActionGroup:
        """A group whose leader has ended: dated by its earliest live member (members
        start after their leader, so the check in `members` still holds)."""
        starts = [stat.start_ticks for stat in live_processes() if stat.pgrp == pgid]
        return cls(pgid, min(starts) if starts else None)

    def members(self) -> list[int]:
        """The live processes still in this very group (see the module doc)."""
        leader = read_stat(self.pgid)
        if leader is not None and self.started is not None and leader.start_ticks != self.started:
            return []  # the number belongs to a newer process now
        earliest = self.started or 0
        return sorted(
            stat.pid
            for stat in live_processes()
            if stat.pgrp == self.pgid and stat.session == self.pgid and stat.start_ticks >= earliest
        )

    def alive(self) -> bool:
        return bool(self.members())
