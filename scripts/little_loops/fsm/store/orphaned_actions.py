"""Actions a runner that died left running: found from its state file and stopped before
anything runs the loop again (`resume`, here and in the CLI; `stop`).

A run records the process group of an action that runs for a while, and of what its
actions left in the background (`action_groups` in the state file). When the runner is
killed (`kill -9`, a crash), those groups run on: a resume would start the same action
beside them and its side effect would happen twice. Before a group is signalled it is
checked to be the very group that was recorded (`process_groups.ActionGroup.members`), so
a process that got the same number later is never touched.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from little_loops.fsm.errors import LoopError
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.store.state_files import LoopState

__all__ = [
    "ORPHAN_GRACE_SECONDS",
    "ORPHAN_KILL_WAIT_SECONDS",
    "OrphanedActionError",
    "orphaned_groups",
    "stop_group",
    "stop_orphans",
]

ORPHAN_GRACE_SECONDS = 5.0
"""Time an orphaned action gets to end on SIGTERM before it is killed."""
ORPHAN_KILL_WAIT_SECONDS = 2.0
_POLL_SECONDS = 0.05


class OrphanedActionError(LoopError):
    """An action a dead runner left running could not be stopped."""


def orphaned_groups(state: LoopState) -> list[ActionGroup]:
    """The recorded action groups of `state` that still run (on this host)."""
    if not state.action_groups:
        return []
    if state.host is not None and state.host != os.uname().nodename:
        return []  # not visible from here
    groups = [ActionGroup.from_dict(item) for item in state.action_groups]
    return [group for group in groups if group.alive()]


def stop_orphans(state: LoopState, loop_arg: str) -> list[int]:
    """Stop every recorded group of `state` still running; return their ids.

    Raises `OrphanedActionError` when one is still there after SIGKILL (another user's
    process, say): resuming beside it would run the action twice.
    """
    stopped = []
    for group in orphaned_groups(state):
        if not stop_group(group):
            raise OrphanedActionError(
                f"an action of the run of '{state.loop_name}' that died is still running "
                f"(pid group {group.pgid}) and could not be stopped; stop it, then: "
                f"ll-loop resume {loop_arg}"
            )
        stopped.append(group.pgid)
    return stopped


def stop_group(group: ActionGroup) -> bool:
    """SIGTERM the group, wait, SIGKILL; True when it has ended."""
    for signum, wait in (
        (signal.SIGTERM, ORPHAN_GRACE_SECONDS),
        (signal.SIGKILL, ORPHAN_KILL_WAIT_SECONDS),
    ):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # gone already: fine
            os.killpg(group.pgid, signum)
        if _wait_for_end(group, wait):
            return True
    return False


def _wait_for_end(group: ActionGroup, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while group.alive():
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_SECONDS)
    return True
