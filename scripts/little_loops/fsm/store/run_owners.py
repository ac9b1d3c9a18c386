"""Who owns a saved run that says `running`: a live process (resume must refuse), or
nobody (resume goes on, after stopping what a dead runner left running).

Once the loop has a lock file, its lock decides: the recorded pid may belong to an
unrelated process by now. Without one, the recorded pid does, except when it is this very
process: then this process knows whether its run of the loop is still going on. A state
file a run of ours wrote, and that a test or script then saved as `running` again after
the run ended (the reference resumed such files), is owned by nobody.
"""

from __future__ import annotations

import os
from pathlib import Path

from little_loops.fsm.store.locking import lock_file_exists, read_holder
from little_loops.fsm.store.state_files import LoopState, is_process_alive

__all__ = ["note_run_going", "owner_alive"]

# State file (absolute path) -> whether this process's run of it is going on. A file this
# process never ran is not here: its pid is judged like any other.
_RUNS_HERE: dict[str, bool] = {}


def note_run_going(state_file: Path, going: bool) -> None:
    """Record that this process's run writing `state_file` started (True) or ended."""
    _RUNS_HERE[str(state_file.absolute())] = going


def owner_alive(state: LoopState, running_dir: Path, state_file: Path) -> bool:
    """Whether another run still writes the `running` state `state` (on this host)."""
    if state.host is not None and state.host != os.uname().nodename:
        return False  # we cannot see it; the brief treats it as gone
    if lock_file_exists(running_dir, state.loop_name):  # the lock knows; the pid may lie
        holder = read_holder(running_dir, state.loop_name)
        return holder is not None and holder.pid != os.getpid()  # a lock we hold is ours
    if state.pid is not None and state.pid == os.getpid():
        return _RUNS_HERE.get(str(state_file.absolute()), True)
    return is_process_alive(state.pid)
