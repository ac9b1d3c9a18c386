"""Is the process that wrote a `running` state still there? (status, list, stop)."""

from __future__ import annotations

import socket
import time
from enum import Enum

from little_loops.cli.resolve import LOOPS_DIR
from little_loops.cli.spending_text import reset_phrase
from little_loops.fsm.model.approval import AWAITING_APPROVAL
from little_loops.fsm.persistence import RUNNING_DIR, LoopState, is_process_alive
from little_loops.fsm.store.locking import lock_file_exists, read_holder
from little_loops.fsm.store.run_history import LIVE_STATUSES, WAITING


class Owner(Enum):
    """What we know about the process recorded in a state file."""

    ALIVE = "alive"
    GONE = "gone"
    ELSEWHERE = "elsewhere"  # recorded on another host: we cannot look
    UNKNOWN = "unknown"  # no pid recorded (a reference-era state file)


def owner_of(state: LoopState) -> Owner:
    """The recorded runner's liveness, as far as this machine can tell.

    Once the loop has a lock file, its lock decides: the recorded pid may belong to an
    unrelated process by now. Runs of older versions (no lock file) go by the pid.
    """
    if state.pid is None:
        return Owner.UNKNOWN
    if state.host is not None and state.host != socket.gethostname():
        return Owner.ELSEWHERE
    running_dir = LOOPS_DIR / RUNNING_DIR
    if lock_file_exists(running_dir, state.loop_name):
        held = read_holder(running_dir, state.loop_name) is not None
        return Owner.ALIVE if held else Owner.GONE
    return Owner.ALIVE if is_process_alive(state.pid) else Owner.GONE


def describe_status(state: LoopState, loop_arg: str) -> str:
    """The status as a person should read it: a dead `running` run is interrupted."""
    if state.status not in LIVE_STATUSES:
        return state.status + _reset_note(state)
    owner = owner_of(state)
    doing = _live_word(state)
    if owner is Owner.ALIVE:
        return f"{doing} (pid {state.pid})"
    if owner is Owner.GONE:  # crashed or killed: the file still says running
        return f"interrupted (process {state.pid} gone; ll-loop resume {loop_arg})"
    if owner is Owner.ELSEWHERE:
        return f"{doing} (pid {state.pid} on host {state.host})"
    return doing


def _live_word(state: LoopState) -> str:
    if state.status == AWAITING_APPROVAL:
        return "awaiting approval"
    wait = state.limit_wait
    if state.status != WAITING or not wait:
        return "running"
    return f"waiting for the usage limit to reset {reset_phrase(wait['until'], time.time())}"


def _reset_note(state: LoopState) -> str:
    """When a run stopped during (or by) a usage-limit wait may go on."""
    wait = state.limit_wait
    if not wait or state.status not in ("interrupted", "usage_limited"):
        return ""
    return f" (usage limit resets {reset_phrase(wait['until'], time.time())})"


def process_alive(state: LoopState) -> bool | None:
    """For `--json`: whether a `running` run's process lives; None when not known/relevant."""
    if state.status not in LIVE_STATUSES:
        return None
    owner = owner_of(state)
    if owner in (Owner.ALIVE, Owner.GONE):
        return owner is Owner.ALIVE
    return None
