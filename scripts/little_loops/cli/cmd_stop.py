"""`ll-loop stop <loop>`: end a running loop and leave it resumable.

The process to stop is the holder of the loop's lock (`fsm.locking`), or, for a run
that took no lock, the live pid its `running` state records. It gets SIGTERM (its handler
cancels the action's process group, saves the state as `interrupted`, writes the final
event and exits 130); after `STOP_GRACE_SECONDS` it is killed together with its actions.
A session started by an `on_handoff: spawn` handoff is stopped too (its process group),
so the loop does not go on in it. Actions a runner that died left running (recorded in
its state, see `orphans`) are stopped as well. Without a live process (crashed, killed)
the saved state is only marked `interrupted`. Whatever `stop` writes itself, it writes
holding the lock.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from dataclasses import dataclass

from little_loops.cli.exit_codes import FAILED, OK
from little_loops.cli.liveness import Owner, owner_of
from little_loops.cli.orphans import orphaned_groups, stop_group, stopped_line
from little_loops.cli.output import Logger, write_line
from little_loops.cli.processes import (
    action_groups,
    is_running,
    leads_a_session,
    send,
    send_group,
    wait_until_gone,
)
from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
from little_loops.fsm.engine.events import HANDOFF_SPAWNED, LOOP_COMPLETE
from little_loops.fsm.errors import RunFilesError
from little_loops.fsm.persistence import LoopState, StatePersistence
from little_loops.fsm.store.locking import AlreadyRunningError, acquire_loop_lock, read_holder
from little_loops.fsm.store.run_history import LIVE_STATUSES
from little_loops.fsm.store.state_files import now_iso

STOP_GRACE_SECONDS = 10.0
KILL_WAIT_SECONDS = 2.0
LOCK_WAIT_SECONDS = 5.0
"""How long `stop` waits for the loop's lock before writing the state itself."""
SPAWN_EVENT_LOOKBACK = 20


@dataclass
class _Stopped:
    """What `stop` ended: the run's process, a spawned session, and whether it killed."""

    runner: int | None = None
    session: int | None = None
    killed: bool = False


def stop_command(loop_arg: str) -> int:
    """Stop the run of `loop_arg`; exit 0 when something was running, 1 otherwise."""
    logger = Logger()
    persistence = StatePersistence(loop_name_for(loop_arg), LOOPS_DIR)
    holder = read_holder(persistence.running_dir, persistence.loop_name)
    state = persistence.load_state_checked()
    stopped = _Stopped(runner=holder.pid if holder is not None else None)
    if stopped.runner is None:
        if state is None:
            logger.error(f"No state found for: {loop_arg}")
            return FAILED
        ended_orphans = owner_of(state) is not Owner.ALIVE and _end_orphans(state, logger)
        if ended_orphans and state.status not in LIVE_STATUSES:
            return OK  # what was left running is stopped; the saved run stays as it is
        problem = _without_lock_holder(state, persistence, stopped, loop_arg, logger)
        if problem is not None:
            return problem
    # Looked up before the runner ends: a resume run by a spawned session is in it.
    session = _session_of(stopped.runner, persistence)
    if stopped.runner is not None and not _end_runner(stopped, logger, loop_arg):
        return FAILED
    if stopped.killed:  # it could not stop what its actions left in the background
        state = persistence.load_state_checked()
        _let_killed_groups_end(state)
        _end_orphans(state, logger)
    _end_spawned_session(session or _spawned_session(persistence), stopped, logger)
    _report(_mark_interrupted(persistence, stopped), stopped, loop_arg, logger)
    return OK


def _without_lock_holder(
    state: LoopState,
    persistence: StatePersistence,
    stopped: _Stopped,
    loop_arg: str,
    logger: Logger,
) -> int | None:
    """Pick the target from the saved state; an exit code when there is nothing to stop."""
    if state.status == "awaiting_continuation" and _spawned_session(persistence) is not None:
        return None
    if state.status not in LIVE_STATUSES:
        logger.error(f"Loop not running: {loop_arg} (status: {state.status})")
        return FAILED
    owner = owner_of(state)
    if owner is Owner.ELSEWHERE:
        logger.error(f"Loop {state.loop_name} runs on host {state.host} (pid {state.pid})")
        return FAILED
    if owner is Owner.ALIVE:  # a run that took no lock (an older ll-loop)
        stopped.runner = state.pid
        return None
    if _mark_interrupted(persistence, stopped, gone=True) is None:
        logger.error(f"Loop {state.loop_name} was started again meanwhile; try again")
        return FAILED
    gone = f"process {state.pid} was gone" if state.pid else "no process was recorded"
    logger.success(f"Marked {state.loop_name} as interrupted ({gone})")
    write_line(f"Resume with: ll-loop resume {loop_arg}")
    return OK


def _end_runner(stopped: _Stopped, logger: Logger, loop_arg: str) -> bool:
    """SIGTERM, the grace period, then SIGKILL for it and its actions; False if refused."""
    pid = stopped.runner
    assert pid is not None
    try:
        send(pid, signal.SIGTERM)
    except PermissionError:
        logger.error(f"Cannot stop {loop_arg}: no permission to signal pid {pid}")
        return False
    if not wait_until_gone(pid, STOP_GRACE_SECONDS):
        logger.warning(f"pid {pid} still running after {STOP_GRACE_SECONDS:.0f}s; killing it")
        # Found before the kill: afterwards its actions no longer look like its children.
        groups = action_groups(pid)
        send(pid, signal.SIGKILL)
        for group in groups:
            send_group(group, signal.SIGKILL)
        wait_until_gone(pid, KILL_WAIT_SECONDS)
        stopped.killed = True
    return True


def _let_killed_groups_end(state: LoopState | None) -> None:
    """Give the groups just killed with the runner a moment to be gone (on a busy machine
    their processes linger until reaped), so only what outlived the kill counts as left
    running by a runner that died."""
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while state is not None and orphaned_groups(state) and time.monotonic() < deadline:
        time.sleep(0.05)


def _end_orphans(state: LoopState | None, logger: Logger) -> bool:
    """Stop the actions a runner that died left running; True if there were any."""
    if state is None:
        return False
    groups = orphaned_groups(state)
    for group in groups:
        if stop_group(group):
            logger.success(stopped_line(group.pgid))
        else:
            logger.error(f"Could not stop pid group {group.pgid} left by {state.loop_name}")
    return bool(groups)


def _spawned_pids(persistence: StatePersistence) -> set[int]:
    """The pids of the sessions recent `on_handoff: spawn` handoffs started."""
    recent = persistence.read_events_tail(SPAWN_EVENT_LOOKBACK)
    return {
        event["pid"]
        for event in recent
        if event.get("event") == HANDOFF_SPAWNED and isinstance(event.get("pid"), int)
    }


def _spawned_session(persistence: StatePersistence) -> int | None:
    """The spawned session waiting to resume the loop (`awaiting_continuation`), if live."""
    state = persistence.load_state_checked()
    if state is None or state.status != "awaiting_continuation" or state.pid is None:
        return None
    if state.host not in (None, socket.gethostname()) or not is_running(state.pid):
        return None
    if state.pid not in _spawned_pids(persistence):
        return None
    # Both checks: a pid reused by an unrelated process must never be signalled.
    return state.pid if leads_a_session(state.pid) else None


def _session_of(runner: int | None, persistence: StatePersistence) -> int | None:
    """The spawned session `runner` (a resume it started) runs in, if it is one."""
    if runner is None:
        return None
    try:
        session = os.getsid(runner)
    except OSError:
        return None
    return session if session in _spawned_pids(persistence) else None


def _end_spawned_session(session: int | None, stopped: _Stopped, logger: Logger) -> None:
    """Stop the whole session group, so a resume it already started stops too."""
    if session is None:
        return
    if session == stopped.runner:  # the resume was the session itself: it has ended
        send_group(session, signal.SIGTERM)  # anything it left in its group goes too
        return
    stopped.session = session
    send_group(session, signal.SIGTERM)
    if not wait_until_gone(session, STOP_GRACE_SECONDS):
        grace = f"{STOP_GRACE_SECONDS:.0f}s"
        logger.warning(f"session (pid {session}) still running after {grace}; killing it")
        send_group(session, signal.SIGKILL)
        wait_until_gone(session, KILL_WAIT_SECONDS)
        stopped.killed = True


def _mark_interrupted(
    persistence: StatePersistence, stopped: _Stopped, *, gone: bool = False
) -> LoopState | None:
    """Under the loop lock: a state still `running` becomes `interrupted`, with a final
    event. Returns the state as it now is (None when a new run owns the loop)."""
    try:
        lock = acquire_loop_lock(
            persistence.running_dir, persistence.loop_name, wait_for_lock=LOCK_WAIT_SECONDS
        )
    except AlreadyRunningError:
        return None  # a new run owns the loop now; its files are not ours to change
    with lock:
        state = persistence.load_state_checked()
        if state is None or state.status not in LIVE_STATUSES:
            return state
        state.status = "interrupted"
        state.terminated_by = "signal"
        how = "process gone" if gone else ("killed" if stopped.killed else "ended")
        try:
            persistence.save_state(state)
            persistence.append_event(_final_event(state, how))
        except OSError as exc:
            raise RunFilesError(
                str(persistence.running_dir),
                f"cannot mark {state.loop_name} interrupted: {exc.strerror or exc}",
            ) from exc
        return state


def _final_event(state: LoopState, how: str) -> dict[str, object]:
    """The `loop_complete` the run could not write itself."""
    return {
        "event": LOOP_COMPLETE,
        "ts": now_iso(),
        "final_state": state.current_state,
        "iterations": state.current_iteration(),
        "terminated_by": "signal",
        "stopped_by": f"ll-loop stop ({how})",
    }


def _report(state: LoopState | None, stopped: _Stopped, loop_arg: str, logger: Logger) -> None:
    pid = stopped.runner
    if pid is not None:
        if state is not None and state.pid == pid:
            logger.success(
                f"Stopped {state.loop_name} at state '{state.current_state}' "
                f"(iteration {state.current_iteration()}, pid {pid})"
            )
        else:
            logger.success(f"Stopped {loop_arg} (pid {pid})")
    if stopped.session is not None:
        logger.success(
            f"Stopped the session continuing {loop_arg} after its handoff (pid {stopped.session})"
        )
    if state is not None and state.status in ("interrupted", "awaiting_continuation"):
        write_line(f"Resume with: ll-loop resume {loop_arg}")
