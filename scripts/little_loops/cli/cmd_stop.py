"""`ll-loop stop <loop>`: end a running loop and leave it resumable.

With a live runner: SIGTERM (its handler cancels the action's process group, saves the
state as `interrupted` and exits 130), wait up to `STOP_GRACE_SECONDS`, then SIGKILL.
Without one (crashed, killed): only mark the saved state `interrupted` and say so.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.liveness import Owner, owner_of
from little_loops.cli.output import Logger, write_line
from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
from little_loops.fsm.persistence import LoopState, StatePersistence, is_process_alive

STOP_GRACE_SECONDS = 10.0
KILL_WAIT_SECONDS = 2.0
POLL_SECONDS = 0.05


def stop_command(loop_arg: str) -> int:
    """Stop the run of `loop_arg`; exit 0 when it was running, 1 otherwise."""
    logger = Logger()
    persistence = StatePersistence(loop_name_for(loop_arg), LOOPS_DIR)
    state = persistence.load_state_checked()
    if state is None:
        logger.error(f"No state found for: {loop_arg}")
        return FAILED
    if state.status != "running":
        logger.error(f"Loop not running: {loop_arg} (status: {state.status})")
        return FAILED
    owner = owner_of(state)
    if owner is Owner.ELSEWHERE:
        logger.error(f"Loop {state.loop_name} runs on host {state.host} (pid {state.pid})")
        return FAILED
    if owner is Owner.ALIVE:
        assert state.pid is not None
        return _terminate(state.pid, persistence, loop_arg, logger)
    _mark_interrupted(persistence, state)
    gone = f"process {state.pid} was gone" if state.pid else "no process was recorded"
    logger.success(f"Marked {state.loop_name} as interrupted ({gone})")
    write_line(f"Resume with: ll-loop resume {loop_arg}")
    return OK


def _terminate(pid: int, persistence: StatePersistence, loop_arg: str, logger: Logger) -> int:
    try:
        _send(pid, signal.SIGTERM)
    except PermissionError:
        logger.error(f"Cannot stop {loop_arg}: no permission to signal pid {pid}")
        return FAILED
    if not _wait_until_gone(pid, STOP_GRACE_SECONDS):
        logger.warning(f"pid {pid} still running after {STOP_GRACE_SECONDS:.0f}s; killing it")
        _send(pid, signal.SIGKILL)
        _wait_until_gone(pid, KILL_WAIT_SECONDS)
    state = persistence.load_state_checked()
    if state is None:  # deleted meanwhile by a new run: nothing to report on
        logger.success(f"Stopped {loop_arg} (pid {pid})")
        return OK
    if state.status == "running":  # killed before it could save: record it ourselves
        _mark_interrupted(persistence, state)
    logger.success(
        f"Stopped {state.loop_name} at state '{state.current_state}' "
        f"(iteration {state.iteration}, pid {pid})"
    )
    write_line(f"Resume with: ll-loop resume {loop_arg}")
    return OK


def _send(pid: int, signum: int) -> None:
    """Signal `pid`; a process that ended meanwhile is what we wanted anyway."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _wait_until_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while is_process_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)
    return True


def _mark_interrupted(persistence: StatePersistence, state: LoopState) -> None:
    state.status = "interrupted"
    state.terminated_by = "signal"
    persistence.save_state(state)
