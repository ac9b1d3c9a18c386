"""What an action left running in the background, kept until the run ends.

An action runs in a process group of its own. When its shell exits while something it
started with `&` still runs in that group (a server a later state polls, a watcher), the
runner hands the group over to `BackgroundGroups` instead of killing it: it keeps
running, its stdout keeps going to the action's log (the file it inherited; the log is
given its name as soon as something is written) and its stderr keeps being read into the
action's stderr log by a small thread per group, so a chatty background process never
blocks on a full pipe. `stop_all()` ends them when the run ends, however it ends
(terminal state, error, handoff pause, `ll-loop stop`, Ctrl-C, SIGTERM): SIGTERM to each
group, a grace period, then SIGKILL.

A process started with `setsid` (a session, hence a group, of its own) is not in the
action's group: it outlives the run, as documented in the user guide.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time

from little_loops.fsm.process.output_streams import StderrPipe, StdoutFile
from little_loops.fsm.process.process_groups import PROC, ActionGroup, live_processes

PUBLISH_SECONDS = 0.25
"""How often a background group's stdout log is checked for a first write (to name it)."""

GROUP_POLL_SECONDS = 0.05
"""How often `stop_all` looks whether a signalled group has ended."""


def group_exists(pgid: int) -> bool:
    """Whether a live process (not a zombie) is still in process group `pgid`."""
    try:
        os.killpg(pgid, 0)  # the cheap answer first: most actions leave nothing behind
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists; it is not ours to signal, but it is there
    if not PROC.is_dir():
        return True
    return any(stat.pgrp == pgid for stat in live_processes())


def wait_for_group_end(pgid: int, seconds: float) -> bool:
    """Wait up to `seconds` for group `pgid` to be empty; True when it is."""
    deadline = time.monotonic() + seconds
    while group_exists(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(GROUP_POLL_SECONDS)
    return True


class _BackgroundGroup:
    """One adopted group: its id, its output streams, and the thread reading its stderr."""

    def __init__(self, group: ActionGroup, stdout: StdoutFile, stderr: StderrPipe) -> None:
        self.group = group
        self.pgid = group.pgid
        self._stdout = stdout
        self._stderr = stderr
        self._wake_read, self._wake_write = os.pipe()
        self._thread = threading.Thread(
            target=self._read_output, name=f"ll-loop background group {self.pgid}", daemon=True
        )
        self._thread.start()

    def _read_output(self) -> None:
        try:
            while not self._wait_and_read(PUBLISH_SECONDS):
                pass
            while self._stderr.open and self._wait_and_read(0.0, stderr_only=True):
                pass  # what the group wrote before it ended
        finally:
            with contextlib.suppress(OSError):
                self._stdout.publish_log()
            self._stderr.close()
            self._stdout.close()
            os.close(self._wake_read)

    def _wait_and_read(self, timeout: float, *, stderr_only: bool = False) -> bool:
        """Read what is ready; True when woken to stop (or, `stderr_only`, when read)."""
        watched = [self._stderr.fd] if self._stderr.open else []
        if not stderr_only:
            watched.append(self._wake_read)
        ready, _, _ = select.select(watched, [], [], timeout)
        if self._stderr.open and self._stderr.fd in ready:
            self._stderr.drain()
        if stderr_only:
            return bool(ready)
        with contextlib.suppress(OSError):
            self._stdout.publish_log()
        return self._wake_read in ready

    def stop(self, grace_seconds: float, abandon_seconds: float) -> None:
        """SIGTERM the group, wait, SIGKILL; then let the reader finish and close."""
        _signal_group(self.pgid, signal.SIGTERM)
        if not wait_for_group_end(self.pgid, grace_seconds):
            _signal_group(self.pgid, signal.SIGKILL)
            wait_for_group_end(self.pgid, abandon_seconds)
        os.write(self._wake_write, b"x")
        # A process that left the group (setsid) may keep stderr open: not waited for.
        self._thread.join(abandon_seconds)
        os.close(self._wake_write)


class BackgroundGroups:
    """The process groups that actions of this run left running (see the module doc)."""

    def __init__(self) -> None:
        self._groups: list[_BackgroundGroup] = []

    @property
    def groups(self) -> list[ActionGroup]:
        """The groups still kept."""
        return [kept.group for kept in self._groups]

    def adopt(self, group: ActionGroup, stdout: StdoutFile, stderr: StderrPipe) -> None:
        """Keep `group` running; its streams are now owned (and closed) here."""
        self._groups.append(_BackgroundGroup(group, stdout, stderr))

    def stop_all(self, grace_seconds: float, abandon_seconds: float) -> None:
        """Stop every kept group (SIGTERM first, all at once, then each is waited for)."""
        groups, self._groups = self._groups, []
        for group in groups:
            _signal_group(group.pgid, signal.SIGTERM)
        for group in groups:
            group.stop(grace_seconds, abandon_seconds)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, signum)
