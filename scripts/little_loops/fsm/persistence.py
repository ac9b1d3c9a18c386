"""The face of the run store: `PersistentExecutor`, resume, listing and history.

What a run leaves on disk lives in `store/` (`store.persistent_executor` wraps the executor,
`store.state_files` holds the file formats); this module only gathers the public names so
that `little_loops.fsm.persistence` stays the one import for them.
"""

from __future__ import annotations

from little_loops.fsm.store.persistent_executor import STATE_OUTPUT_CAP as STATE_OUTPUT_CAP
from little_loops.fsm.store.persistent_executor import ArchivedRun as ArchivedRun
from little_loops.fsm.store.persistent_executor import NotResumableError as NotResumableError
from little_loops.fsm.store.persistent_executor import PersistentExecutor as PersistentExecutor
from little_loops.fsm.store.persistent_executor import cap_output as cap_output
from little_loops.fsm.store.persistent_executor import get_loop_history as get_loop_history
from little_loops.fsm.store.persistent_executor import list_running_loops as list_running_loops
from little_loops.fsm.store.state_files import RUNNING_DIR as RUNNING_DIR
from little_loops.fsm.store.state_files import STATE_VERSION as STATE_VERSION
from little_loops.fsm.store.state_files import LoopState as LoopState
from little_loops.fsm.store.state_files import StatePersistence as StatePersistence
from little_loops.fsm.store.state_files import is_process_alive as is_process_alive
from little_loops.fsm.store.state_files import now_iso

__all__ = [
    "RUNNING_DIR",
    "STATE_VERSION",
    "ArchivedRun",
    "LoopState",
    "NotResumableError",
    "PersistentExecutor",
    "StatePersistence",
    "get_loop_history",
    "is_process_alive",
    "list_running_loops",
]

# The reference's private clock helper.
_iso_now = now_iso
