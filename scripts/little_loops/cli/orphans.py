"""Actions a runner that died left running, as `status`, `stop` and `resume` show them.

Finding and stopping them lives in `fsm.store.orphaned_actions` (a resume through the
API stops them too); this module keeps the CLI's names and its lines.
"""

from __future__ import annotations

from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.store.orphaned_actions import ORPHAN_GRACE_SECONDS as ORPHAN_GRACE_SECONDS
from little_loops.fsm.store.orphaned_actions import (
    ORPHAN_KILL_WAIT_SECONDS as ORPHAN_KILL_WAIT_SECONDS,
)
from little_loops.fsm.store.orphaned_actions import OrphanedActionError as OrphanedActionError
from little_loops.fsm.store.orphaned_actions import orphaned_groups as orphaned_groups
from little_loops.fsm.store.orphaned_actions import stop_group as stop_group
from little_loops.fsm.store.orphaned_actions import stop_orphans as stop_orphans


def status_line(group: ActionGroup) -> str:
    return f"Action still running: pid group {group.pgid} (from a runner that died)"


def stopped_line(pgid: int) -> str:
    return f"Stopped the action left running by a runner that died (pid group {pgid})"
