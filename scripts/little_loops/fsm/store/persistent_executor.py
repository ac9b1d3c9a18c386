"""Runs that survive their process: `PersistentExecutor`, resume, listing and history.

This module owns what a run leaves on disk and how a later process picks it up. It wraps
an `FSMExecutor`, writes every event to `<name>.events.jsonl` and a `LoopState` snapshot
to `<name>.state.json` (one at the start, one per transition and one at the end),
points the executor at `<name>.logs/` for the action logs, moves the previous run's files
to the history when a new run starts (`run_history`), and restores a saved run. The file
formats live in `state_files`; nothing here prints.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine import events
from little_loops.fsm.engine.context import (
    ActionRunner,
    Checkpointer,
    Clock,
    EventCallback,
    RunCursor,
)
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.run_requests import SaveSnapshot
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.errors import LoopError, RunFilesError, StateFileError
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.model.approval import AWAITING_APPROVAL
from little_loops.fsm.model.run_settings import NO_SETTINGS, RunSettings
from little_loops.fsm.process.output_files import action_log_name, stderr_log_path
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.schema import DEFAULT_LOGS_KEEP, FSMLoop
from little_loops.fsm.signal_detector import SignalDetector
from little_loops.fsm.store.approval_inbox import FileApprovalInbox, answer_path
from little_loops.fsm.store.log_retention import LogRetention
from little_loops.fsm.store.notify_log import notify_log_path
from little_loops.fsm.store.orphaned_actions import OrphanedActionError, stop_orphans
from little_loops.fsm.store.run_dir import prepare_run_dir
from little_loops.fsm.store.run_history import (
    LIVE_STATUSES,
    UNFINISHED_STATUSES,
    WAITING,
    archive_previous_run,
)
from little_loops.fsm.store.run_owners import note_run_going, owner_alive
from little_loops.fsm.store.run_record import FINAL_STATUSES as FINAL_STATUSES
from little_loops.fsm.store.run_record import (
    QUESTION_EVENTS,
    RunRecord,
    cursor_of_state,
    logs_in_use,
)
from little_loops.fsm.store.run_record import STATE_OUTPUT_CAP as STATE_OUTPUT_CAP
from little_loops.fsm.store.run_record import cap_output as cap_output
from little_loops.fsm.store.run_record import capped_captured as capped_captured
from little_loops.fsm.store.run_record import capped_result as capped_result
from little_loops.fsm.store.state_files import (
    RUNNING_DIR,
    STATE_VERSION,
    LoopState,
    StatePersistence,
    is_process_alive,
    now_iso,
)

if TYPE_CHECKING:
    from little_loops.fsm.engine.approval_wait import ApprovalInbox
    from little_loops.fsm.store.notifier import RunNotifier

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
    "resume_refusal",
]

_RESUMABLE = UNFINISHED_STATUSES


@dataclass(frozen=True)
class ArchivedRun:
    """A previous run moved to the history: its folder and its state (None: unreadable)."""

    folder: Path
    state: LoopState | None

    @property
    def unfinished(self) -> bool:
        """Whether `ll-loop resume` could have continued it."""
        return self.state is not None and self.state.status in UNFINISHED_STATUSES


class NotResumableError(LoopError):
    """A saved run that `resume` must not continue; the message says why in one line."""


def _wall_clock_ms() -> int:
    # The clock `FSMExecutor.run()` compares `start_time_ms` with (fsm-api.md §0).
    return int(time.time() * 1000)


def _refusal(state: LoopState, max_continuations: int, running_dir: Path) -> str | None:
    """Why a saved run cannot be resumed, or None if it can."""
    name = state.loop_name
    if state.status == "awaiting_continuation" and state.handoff_count > max_continuations:
        return (
            f"loop '{name}' reached max_continuations ({max_continuations}) after "
            f"{state.handoff_count} handoffs; to continue anyway: "
            f"ll-loop resume {name} --max-continuations {state.handoff_count}"
        )
    ended = _ended_reason(state)
    if ended is not None:
        return f"{ended}; start a new run with: ll-loop run {name}"
    state_file = running_dir / f"{name}.state.json"
    if state.status in LIVE_STATUSES and owner_alive(state, running_dir, state_file):
        return f"loop '{name}' is running (pid {state.pid})"
    if state.status not in _RESUMABLE:
        return f"loop '{name}' has status '{state.status}', which cannot be resumed"
    return None


def _ended_reason(state: LoopState) -> str | None:
    """What ended a run for good (completed, failed...), or None if it did not end so."""
    name = state.loop_name
    if state.status == "completed":
        return f"loop '{name}' already completed"
    if state.status == "failed":
        return f"loop '{name}' failed: {state.error}" if state.error else f"loop '{name}' failed"
    if state.status == "stopped":
        return f"loop '{name}' was stopped by LOOP_STOP"
    if state.status == "handoff_terminated":
        return f"loop '{name}' ended at a handoff (handoff_terminated)"
    return None


def resume_refusal(state: LoopState, fsm: FSMLoop, running_dir: Path) -> str | None:
    """Why `resume` must refuse the saved run `state` of `fsm`, or None: the one check
    both a resume here and `resume --background` (before it detaches) make."""
    reason = _refusal(state, fsm.max_continuations, running_dir)
    return reason if reason is not None else _loop_mismatch(state, fsm)


def _loop_mismatch(state: LoopState, fsm: FSMLoop) -> str | None:
    """Why the loop as it is now cannot continue the saved run (checked before anything
    is written, so a refused resume leaves the run exactly as it was)."""
    name = state.loop_name
    if state.current_state not in fsm.states:
        return (
            f"loop '{name}' stopped at state '{state.current_state}', which the loop file "
            f"no longer has; restore state '{state.current_state}' in the file, then: "
            f"ll-loop resume {name}"
        )
    cap = state.terminated_by
    if cap in ("max_iterations", "max_steps") and state.iteration >= fsm.max_iterations:
        # `max_steps`: a HEAD loop's step cap, kept in `max_iterations` (model/head_loop.py)
        done, flag = ("steps", "--max-steps") if cap == "max_steps" else ("iterations", "-n")
        return (
            f"loop '{name}' reached {cap} ({state.iteration} {done} done); "
            f"to go on: ll-loop resume {name} {flag} {state.iteration + fsm.max_iterations}"
        )
    return None


def _notifier_of(command: str | None, persistence: StatePersistence) -> RunNotifier | None:
    """The run's notifier (None: no notify command); `notifier` loads only for one."""
    if not command:
        return None
    from little_loops.fsm.store.notifier import run_notifier

    return run_notifier(command, persistence)


class PersistentExecutor:
    """An `FSMExecutor` whose events and state are saved, so the run can be resumed.

    With `on_handoff: spawn` the new session is created held (see `handoff_handler`):
    the state is saved as `awaiting_continuation` before it is created, its pid and the
    `handoff_spawned` event are recorded when the run ends, then `before_spawn` (addition:
    e.g. releasing the run lock, which the spawned `ll-loop resume` needs) is called, and
    only then does claude start. So the new session never races this one for the files.
    """

    def __init__(
        self,
        fsm: FSMLoop,
        persistence: StatePersistence | None = None,
        loops_dir: Path | None = None,
        *,
        event_callback: EventCallback | None = None,
        before_spawn: Callable[[], None] | None = None,
        action_runner: ActionRunner | None = None,
        output_callback: Callable[[str], None] | None = None,
        log_dir: Path | None = None,
        checkpointer: Checkpointer | None = None,
        clock: Clock | None = None,
        env: Mapping[str, str] | None = None,
        settings: RunSettings | None = None,
        context_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        """`settings`: the run's own settings (`run -n`, `--max-cost`, ...), applied to a
        copy of `fsm` (None: `fsm` as it is); `context_overrides`: the run's `--context`
        values (already in `fsm.context`), saved so `resume` keeps them. `log_dir` and
        `checkpointer` (None: the run's own) and the rest go to the inner `FSMExecutor`."""
        self.settings = settings if settings is not None else NO_SETTINGS
        self.fsm = fsm if settings is None else settings.applied_to(fsm)
        # Built first so an invalid `on_handoff` fails before any directory is created.
        self.signal_detector = SignalDetector()
        handoff_behavior = HandoffBehavior(fsm.on_handoff)
        self.persistence = persistence or StatePersistence(fsm.name, loops_dir or Path(".loops"))
        self._save_failure: RunFilesError | None = None
        # The snapshot the core asked for with the event it is about to deliver.
        self._snapshot_asked: SaveSnapshot | None = None
        with self._files_guard():
            self.persistence.initialize()
        self.handoff_handler = HandoffHandler(
            handoff_behavior, log_dir=self.persistence.running_dir, hold_spawn=True
        )
        self.event_callback = event_callback
        self.before_spawn = before_spawn
        logs_keep = DEFAULT_LOGS_KEEP if fsm.logs_keep is None else fsm.logs_keep
        self._executor = FSMExecutor(
            self.fsm,
            event_callback=self._handle_event,
            action_runner=action_runner,
            signal_detector=self.signal_detector,
            handoff_handler=self.handoff_handler,
            output_callback=output_callback,
            # `logs_keep: 0`: no action logs at all (nothing to delete, nothing to point at).
            log_dir=log_dir or (self.persistence.logs_dir if logs_keep else None),
            checkpointer=checkpointer or self._checkpointer(),
            clock=clock,
            env=env,
            choices=self.settings.choices,
            save_callback=self._save_asked_for,
        )
        self._log_retention = self._retention(logs_keep)
        self._executor.guards.loops_dir = self.persistence.loops_dir
        self.answers = answer_path(self.persistence.running_dir, fsm.name)
        self._executor.approvals.append(FileApprovalInbox(self.answers))
        # What the state file says beyond the executor's cursor and guards (both engines'
        # one record, `store.run_record`).
        self.record = RunRecord(
            self.fsm,
            os.uname().nodename,  # socket.gethostname() on POSIX, without loading socket
            dict(context_overrides or {}),
            budget_override=self.settings.max_cost_usd,
            notify_override=self.settings.notify,
            max_tokens=self.settings.max_tokens,
        )
        self._action_group: ActionGroup | None = None  # of the action under way, once told
        self._runner = self._executor.action_runner
        if isinstance(self._runner, DefaultActionRunner):
            self._runner.on_group_running = self._record_action_group
        # Tells a person when the run ends or waits (`notify`); None: nobody to tell.
        self.notifier: RunNotifier | None = _notifier_of(self.fsm.notify, self.persistence)

    def _checkpointer(self) -> Checkpointer | None:
        """`checkpoint: git`: the run's git checkpoints (None: no checkpoints)."""
        if self.fsm.checkpoint != "git":
            return None
        from little_loops.fsm.process.checkpoint import GitCheckpointer  # only such runs

        return GitCheckpointer(self.fsm.name, loops_dir=self.persistence.loops_dir)

    def _retention(self, logs_keep: int) -> LogRetention | None:
        log_dir = self._executor.log_dir
        return LogRetention(log_dir, logs_keep) if log_dir and logs_keep else None

    @property
    def context_overrides(self) -> dict[str, str]:
        """The run's `--context` values, saved so `resume` keeps them."""
        return self.record.context_overrides

    @context_overrides.setter
    def context_overrides(self, values: dict[str, str]) -> None:
        self.record.context_overrides = values

    @property
    def _last_result(self) -> dict[str, Any] | None:
        """The last evaluation (`last_result` in the state file)."""
        return self.record.last_result

    @property
    def budget_override(self) -> float | None:
        """The budget given on the command line for this run (`--max-cost`): saved, so a
        resume without `--max-cost` keeps it instead of the loop file's."""
        return self.settings.max_cost_usd

    @property
    def notify_override(self) -> str | None:
        """The command given with `--notify` ("": none), saved so `resume` keeps it."""
        return self.settings.notify

    def add_approval_inbox(self, inbox: ApprovalInbox) -> None:
        """Another place answers to a `human_approval` question may come from (the
        terminal of a foreground run); the answer file is always one."""
        self._executor.approvals.append(inbox)

    def request_shutdown(self) -> None:
        """Ask the inner executor to stop; the run is then saved as `interrupted`."""
        self._executor.request_shutdown()

    # --- events -------------------------------------------------------------------------

    def _handle_event(self, event: dict[str, Any]) -> None:
        """Persist first, then let the chained observer (the CLI display) see the event."""
        self._persist_event(event)
        if self.notifier is not None:
            self.notifier.on_event(event)
        if self.event_callback is not None:
            self.event_callback(event)

    def _persist_event(self, event: dict[str, Any]) -> None:
        """Write the event and its snapshot. A failed write ends the run (the executor
        stops on a raising callback) and nothing is written after it, so the state file
        keeps the last step that was saved whole."""
        if self._save_failure is not None:
            return
        try:
            self._record_event(event)
        except OSError as exc:
            self._save_failure = self._files_error(exc)
            raise self._save_failure from exc

    def _save_asked_for(self, request: SaveSnapshot) -> None:
        """The core asks for a snapshot with the event it delivers next: written once
        that event is (`_record_event`), before anyone is told of it."""
        self._snapshot_asked = request

    def _record_event(self, event: dict[str, Any]) -> None:
        """Append the event, take it into the run record, then write the snapshot the
        core asked for with it (the run record's, as the core's request has it)."""
        self.persistence.append_event(event)
        self.record.note(event)
        asked, self._snapshot_asked = self._snapshot_asked, None
        kind = event.get("event")
        if asked is not None and asked.after == kind:
            self.persistence.save_state(self._snapshot(asked))
        if kind == events.ACTION_COMPLETE:
            self._action_group = None
            # A child's logs live in a folder of its own beside the run's (`sub_loop`);
            # `logs_keep` counts the run's own, so they stay until the run is archived.
            if not event.get("depth"):
                self._prune_logs(event)

    def _snapshot(self, asked: SaveSnapshot) -> LoopState:
        """The state file the core asked for. One write per transition (see the run
        record): still `running` when the next state is terminal (`completed` is written
        only after `loop_complete`, so a completed file always has one); a sub-loop's
        saves keep the parent's state `entered` (its place travels in `head.sub_loops`,
        which the core refreshed before the event); a usage-limit wait is on disk before
        it starts, so a run stopped meanwhile waits only what is left when resumed; a
        spawned handoff's is saved before the new session is created; a `human_approval`
        question is on disk before the wait starts (`approve`/`reject` find it, a resume
        waits for the same question)."""
        status = "running"
        if asked.after == events.LIMIT_WAIT:
            status = WAITING
        elif asked.after == events.HANDOFF_DETECTED:
            status = "awaiting_continuation"
        elif asked.after in QUESTION_EVENTS:
            status = AWAITING_APPROVAL
        state = self.record.state(asked.cursor, asked.guards, asked.elapsed_ms, status=status)
        state.current_state = asked.current_state
        if asked.after == events.HANDOFF_DETECTED:
            state.terminated_by = "handoff"
        return self._with_process(state)

    def _prune_logs(self, completed: dict[str, Any]) -> None:
        """After an action: keep the logs of the last `logs_keep` actions (see
        `log_retention`), never one the run still uses. Before the state's evaluation and
        the next snapshot, so neither can name a deleted log: the newest action's log and
        those of captures and `${prev}` are spared."""
        retention, executor = self._log_retention, self._executor
        if retention is None or executor.log_dir is None:
            return
        # The action's own log: a run again after a limit has one of its own (`retry-<n>`).
        written = completed.get("log_path")
        name = Path(written).name if written else None
        log_path = executor.log_dir / (
            name or action_log_name(executor.iteration, executor.current_state)
        )
        if written is None and not stderr_log_path(log_path).exists():
            return  # a silent action left no log
        retention.add(log_path, logs_in_use(executor.cursor))

    def _record_action_group(self, group: ActionGroup) -> None:
        """An action has been running a while: note its process group in the state, so a
        later process can stop it if this one dies. Not flushed to disk: a power cut ends
        the action too. Skipped once a write has failed (the run is ending then)."""
        self._action_group = group
        if self._save_failure is not None:
            return
        state = self._build_state(self._executor.current_state, "running")
        with contextlib.suppress(OSError):  # the next snapshot reports a real failure
            self.persistence.save_state(state, durable=False)

    def _action_groups(self) -> list[dict[str, Any]]:
        groups = [self._action_group] if self._action_group is not None else []
        if isinstance(self._runner, DefaultActionRunner):
            groups += self._runner.background.groups
        # A `parallel:` fan-out's branches run actions of their own (issue 25).
        groups += [g for g in self._executor.branch_action_groups() if g not in groups]
        return [group.to_dict() for group in groups]

    def _build_state(self, current_state: str, status: str) -> LoopState:
        """The run record's snapshot as `status`, at `current_state`, with this process
        and its action groups: for the writes the core does not ask for (an action's
        process group noted while it runs, a run cut short by Ctrl-C)."""
        executor = self._executor
        state = self.record.state(
            executor.cursor, executor.guards, executor.elapsed_ms(), status=status
        )
        state.current_state = current_state
        return self._with_process(state)

    def _with_process(self, state: LoopState) -> LoopState:
        state.pid = os.getpid()
        state.action_groups = self._action_groups()
        return state

    # --- run and resume -----------------------------------------------------------------

    def run(self, clear_previous: bool = True) -> ExecutionResult:
        """Run the loop (after archiving the previous run's files unless resuming); save
        the end."""
        if clear_previous:
            self.archive_previous()
        note_run_going(self.persistence.state_file, True)
        try:
            return self._run_and_save()
        finally:
            note_run_going(self.persistence.state_file, False)
            self._let_spawned_session_go()

    def archive_previous(self) -> ArchivedRun | None:
        """Move the previous run's files to `.loops/.history/` (never deleted; what
        clear_all removes then is only what a crashed writer left behind). Returns where
        they went and the run's saved state, so the caller can say what was moved."""
        with self._files_guard():
            previous = self.persistence.load_state()
            folder = archive_previous_run(self.persistence, self._previous_run_extras())
            self.persistence.clear_all()
        return ArchivedRun(folder, previous) if folder is not None else None

    def _previous_run_extras(self) -> list[Path]:
        handoff_log = self.handoff_handler.log_path(self.fsm.name)
        extras = [notify_log_path(self.persistence), self.answers]
        return [handoff_log, *extras] if handoff_log is not None else extras

    def _run_and_save(self) -> ExecutionResult:
        # Closed before `run` lets a spawned session go: that one appends on its own.
        with self.persistence.keep_events_open():
            return self._run_and_save_events()

    def _run_and_save_events(self) -> ExecutionResult:
        with self._files_guard():  # a HEAD run's `${context.run_dir}`, before any state
            prepare_run_dir(self.fsm, self._executor.cursor.head, self.persistence.loops_dir)
        try:
            result = self._executor.run()
        except BaseException as exc:
            self._save_crash(exc)
            raise
        if self._save_failure is not None:
            raise self._save_failure  # the state file keeps the last step saved whole
        with self._files_guard():
            self._save_final(result)
        return result

    @contextlib.contextmanager
    def _files_guard(self) -> Iterator[None]:
        """Turn a failed write of the run files into a `RunFilesError` saying what to do."""
        try:
            yield
        except OSError as exc:
            raise self._files_error(exc) from exc

    def _files_error(self, exc: OSError) -> RunFilesError:
        name = self.fsm.name
        return RunFilesError(
            str(self.persistence.running_dir),
            f"cannot save the run of '{name}': {exc.strerror or exc}",
            hint="the run stopped; its state file keeps the last step saved. "
            f"Fix the cause, then: ll-loop resume {name}",
        )

    def _let_spawned_session_go(self) -> None:
        """Everything is written: release what the new session needs, then start it."""
        spawned = self._executor.handoff_result
        if spawned is None or spawned.spawned_process is None:
            return
        try:
            if self.before_spawn is not None:
                self.before_spawn()
        finally:
            self.handoff_handler.release_spawned()

    def _save_final(self, result: ExecutionResult) -> None:
        terminating = self.handoff_handler.behavior is HandoffBehavior.TERMINATE
        self.record.ended(result, handoff_terminates=terminating)
        # The reference saved no error: ours (`record.error`) is for people.
        executor = self._executor
        state = self._with_process(
            self.record.final_state(result, executor.cursor, executor.guards)
        )
        spawned = executor.handoff_result
        pid = spawned.spawned_process.pid if spawned and spawned.spawned_process else None
        # Not an int: a test's stand-in for `subprocess.Popen` (`reference_seams`) started it.
        if result.handoff and isinstance(pid, int):
            state.pid = pid  # the session that will resume the loop
            self.persistence.append_event(self._spawn_event(pid))
        self.persistence.save_state(state)
        self._notify_end(state)

    def _notify_end(self, state: LoopState) -> None:
        """Tell a person how the run ended, once `state` says so on disk."""
        if self.notifier is not None:
            self.notifier.on_end(state)

    def _spawn_event(self, pid: int) -> dict[str, Any]:
        log = os.path.abspath(str(self.handoff_handler.log_path(self.fsm.name)))
        return {"event": events.HANDOFF_SPAWNED, "ts": now_iso(), "pid": pid, "log": log}

    def _save_crash(self, exc: BaseException) -> None:
        """Record a run cut short by Ctrl-C or `sys.exit` (the executor catches the rest)."""
        state = self._build_state(self._executor.current_state, "interrupted")
        state.terminated_by = "signal"
        if not isinstance(exc, KeyboardInterrupt):
            state.error = f"{type(exc).__name__}: {exc}"
        if self._save_failure is None:
            with contextlib.suppress(OSError):  # the interruption being raised matters more
                self.persistence.save_state(state)
            self._notify_end(state)

    def resume(self) -> ExecutionResult | None:
        """Continue a saved run; None when there is nothing resumable (reference API)."""
        try:
            return self.resume_checked()
        except (NotResumableError, StateFileError, OrphanedActionError):
            return None

    def resume_checked(self) -> ExecutionResult:
        """Continue a saved run, or raise `NotResumableError`/`StateFileError` saying why."""
        state = self.persistence.load_state_checked()
        if state is None:
            raise NotResumableError(f"no saved state for '{self.fsm.name}'")
        reason = resume_refusal(state, self.fsm, self.persistence.running_dir)
        if reason is not None:
            raise NotResumableError(reason)
        # Its runner is gone (or ended): never run an action again beside the copy it left.
        stop_orphans(state, self.fsm.name)
        resume_event = self._restore(state)
        with self._files_guard():
            self.persistence.append_event(resume_event)
        return self.run(clear_previous=False)

    def _restore(self, state: LoopState) -> dict[str, Any]:
        """Go on from the saved `state` (the run record decides where, `store.run_record`);
        returns the `loop_resume` event."""
        record = self.record
        record.status, record.phase = state.status, state.phase
        record.last_result = state.last_result
        record.continuation_prompt = state.continuation_prompt
        resumed = record.resume(
            cursor_of_state(state, 0),
            now_ms=_wall_clock_ms(),
            elapsed_ms=state.elapsed_ms or 0,
            now=now_iso(),
            prompt=None,
        )
        self._executor.restore(resumed.cursor)
        self._restore_context_overrides(state)
        self._restore_command_line(state)
        self._restore_guards(state, cut_off=resumed.cut_off)
        return resumed.event

    def _saved_cursor(self, state: LoopState, *, cut_off: bool) -> RunCursor:
        """Where the saved run stood, as the executor goes on from it (`cut_off`: its
        state runs again under the same iteration number)."""
        record = RunRecord(self.fsm, None, status=state.status)
        record.continuation_prompt = state.continuation_prompt
        cursor = record.resume(
            cursor_of_state(state, 0),
            now_ms=_wall_clock_ms(),
            elapsed_ms=state.elapsed_ms or 0,
            now=now_iso(),
            prompt=None,
        ).cursor
        cursor.iteration = max(state.iteration - 1, 0) if cut_off else state.iteration
        return cursor

    def _restore_command_line(self, state: LoopState) -> None:
        """The run's `--max-cost`, `--max-tokens` and `--notify` hold again unless given
        anew (`RunSettings.resumed`): the run goes on with a copy of its loop that has them."""
        settings = self.settings.resumed(
            max_cost_usd=state.max_cost_usd, notify=state.notify, max_tokens=state.max_tokens
        )
        if settings == self.settings:
            return
        notify_restored = settings.notify != self.settings.notify
        self.settings = settings
        # `fsm` is an executor attribute other components may replace (fsm-api.md §8.3).
        self.fsm = self._executor.fsm = settings.applied_to(self.fsm)
        record = self.record
        record.fsm, record.budget_override = self.fsm, settings.max_cost_usd
        record.notify_override = settings.notify
        if notify_restored:
            self.notifier = _notifier_of(self.fsm.notify, self.persistence)

    def _restore_context_overrides(self, state: LoopState) -> None:
        """The run's `--context` values win over the loop file's again."""
        self.context_overrides = dict(state.context_overrides)
        self.fsm.context.update(state.context_overrides)

    def _restore_guards(self, state: LoopState, *, cut_off: bool) -> None:
        """Counters go on across resumes: a loop stalled before stalls again unless its
        output changes (or the loop file raised the limit)."""
        guards = self._executor.guards
        guards.visits.restore(state.visits)
        if cut_off:
            guards.visits.forget_one(state.current_state)  # it is entered again
        guards.stall.restore(state.stall_streaks)
        guards.errors.restore(state.errors)


def list_running_loops(loops_dir: Path | None = None) -> list[LoopState]:
    """Every readable saved state (all statuses), sorted by file name; damaged ones skipped."""
    base = loops_dir or Path(".loops")
    running_dir = base / RUNNING_DIR
    if not running_dir.is_dir():
        return []
    states = []
    for path in sorted(running_dir.glob("*.state.json")):
        state = StatePersistence(path.name.removesuffix(".state.json"), base).load_state()
        if state is not None:
            states.append(state)
    return states


def get_loop_history(loop_name: str, loops_dir: Path | None = None) -> list[dict[str, Any]]:
    """All events of the latest run of `loop_name` (and its resumes), in order."""
    return StatePersistence(loop_name, loops_dir).read_events()


# The reference's name for the timestamp helper.
