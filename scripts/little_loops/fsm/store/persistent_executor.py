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
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.context import (
    ActionRunner,
    Checkpointer,
    Clock,
    EventCallback,
    RunCursor,
)
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.parallel import PARALLEL_BRANCH_END
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.spending import RunSpending
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.errors import LoopError, RunFilesError, StateFileError
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.model.run_settings import NO_SETTINGS, RunSettings
from little_loops.fsm.process.checkpoint import GitCheckpointer
from little_loops.fsm.process.output_files import action_log_name, cap_text_bytes, stderr_log_path
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.schema import DEFAULT_LOGS_KEEP, FSMLoop
from little_loops.fsm.signal_detector import SignalDetector
from little_loops.fsm.store.log_retention import LogRetention
from little_loops.fsm.store.notifier import RunNotifier, notify_log_path, run_notifier
from little_loops.fsm.store.orphaned_actions import OrphanedActionError, stop_orphans
from little_loops.fsm.store.run_dir import prepare_run_dir
from little_loops.fsm.store.run_history import (
    LIVE_STATUSES,
    UNFINISHED_STATUSES,
    WAITING,
    archive_previous_run,
)
from little_loops.fsm.store.run_owners import note_run_going, owner_alive
from little_loops.fsm.store.state_files import (
    PHASE_ENTERED,
    PHASE_ROUTED,
    RUNNING_DIR,
    STATE_VERSION,
    LoopState,
    StatePersistence,
    is_process_alive,
    now_iso,
)

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

# Outputs kept in state files (the tail, behind a marker): a snapshot is rewritten at every
# state, so a chatty action must not make each write cost megabytes.
STATE_OUTPUT_CAP = 16 * 1024

# `terminated_by` -> the status saved (the Temporal engine uses the same map).
FINAL_STATUSES = {
    "terminal": "completed",
    "max_iterations": "interrupted",
    "signal": "interrupted",
    "handoff": "awaiting_continuation",
    "error": "failed",
    "timeout": "failed",
    "signal_stop": "stopped",
    "stalled": "stalled",
    "budget_exhausted": "budget_exhausted",
    "usage_limited": "usage_limited",
    # HEAD loops (engine/head_endings.py): a failure terminal fails the run; the caps are
    # resumable like max_iterations; a cycle or a repeated failure stalls it.
    "failure_terminal": "failed",
    "max_steps": "interrupted",
    "max_iterations_reached": "interrupted",
    "cycle_detected": "stalled",
    "stall_detected": "stalled",
}
_NOT_DETAILS = ("event", "ts", "type", "verdict")
_RESUMABLE = UNFINISHED_STATUSES
# Statuses whose current state finished its action: on resume it runs as a new iteration.
_STATE_FINISHED = ("awaiting_continuation", "stalled")


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


def cap_output(text: str, cap: int = STATE_OUTPUT_CAP, log_path: str | None = None) -> str:
    """`text`, or its last `cap` bytes behind a marker saying how many bytes were cut (and,
    given `log_path`, which file holds the whole output)."""
    return cap_text_bytes(text, cap, log_path)


def capped_result(result: dict[str, Any]) -> dict[str, Any]:
    """A copy of an action result with long `output`/`stderr` cut for the state file."""
    copy = dict(result)
    log_path = copy.get("log_path")
    logs = {"output": log_path, "stderr": None}
    if isinstance(log_path, str):
        logs["stderr"] = str(stderr_log_path(Path(log_path)))
    for key in ("output", "stderr"):
        if isinstance(copy.get(key), str):
            copy[key] = cap_output(copy[key], log_path=logs[key])
    return copy


def capped_captured(captured: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    # A loaded reference state may hold non-object captured values: they are kept as they are.
    return {
        name: capped_result(value) if isinstance(value, dict) else value
        for name, value in captured.items()
    }


def _capped_head(head: dict[str, Any]) -> dict[str, Any]:
    """The HEAD record with the outputs of the sub-loops under way cut like the run's own
    (each child route rewrites the state file)."""
    places = head.get("sub_loops")
    if places:
        head["sub_loops"] = [_capped_place(place) for place in places]
    return head


def _capped_place(place: dict[str, Any]) -> dict[str, Any]:
    capped = dict(place)
    capped["captured"] = capped_captured(place.get("captured") or {})
    prev = place.get("prev_result")
    capped["prev_result"] = capped_result(prev) if isinstance(prev, dict) else prev
    return capped


def _evaluation_record(event: dict[str, Any]) -> dict[str, Any]:
    """`last_result` from an `evaluate` event: the verdict and every detail key."""
    details = {key: value for key, value in event.items() if key not in _NOT_DETAILS}
    return {"verdict": event.get("verdict"), "details": details}


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


def _continued_handoff(state: LoopState) -> bool:
    """Whether `state` was saved while its state continued an `on_handoff: continue`
    handoff (the prompt is saved until a route leaves the state), so its next run, or
    its cut-off re-run, must get the prompt."""
    return state.status in ("running", "interrupted") and state.continuation_prompt is not None


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
        )
        self._log_retention = self._retention(logs_keep)
        self._executor.guards.loops_dir = self.persistence.loops_dir
        self._last_result: dict[str, Any] | None = None
        self._continuation_prompt: str | None = None
        self._resumed_at: str | None = None
        self._phase: str | None = None
        self._host = socket.gethostname()
        self._action_group: ActionGroup | None = None  # of the action under way, once told
        self._runner = self._executor.action_runner
        if isinstance(self._runner, DefaultActionRunner):
            self._runner.on_group_running = self._record_action_group
        # Visits are saved only for loops that limit them: other state files stay as short.
        self._counts_visits = any(state.max_visits for state in fsm.states.values())
        self.context_overrides: dict[str, str] = dict(context_overrides or {})
        # Tells a person when the run ends or waits (`notify`); None: nobody to tell.
        self.notifier: RunNotifier | None = run_notifier(self.fsm.notify, self.persistence)

    def _checkpointer(self) -> Checkpointer | None:
        """`checkpoint: git`: the run's git checkpoints (None: no checkpoints)."""
        if self.fsm.checkpoint != "git":
            return None
        return GitCheckpointer(self.fsm.name, loops_dir=self.persistence.loops_dir)

    def _retention(self, logs_keep: int) -> LogRetention | None:
        log_dir = self._executor.log_dir
        return LogRetention(log_dir, logs_keep) if log_dir and logs_keep else None

    @property
    def budget_override(self) -> float | None:
        """The budget given on the command line for this run (`--max-cost`): saved, so a
        resume without `--max-cost` keeps it instead of the loop file's."""
        return self.settings.max_cost_usd

    @property
    def notify_override(self) -> str | None:
        """The command given with `--notify` ("": none), saved so `resume` keeps it."""
        return self.settings.notify

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

    def _record_event(self, event: dict[str, Any]) -> None:
        self.persistence.append_event(event)
        if event.get("depth"):
            self._record_child_event(event)
            return
        kind = event.get("event")
        if kind == "loop_start":
            self._save_snapshot(self._executor.current_state)
        elif kind == "state_enter":
            # Not written (the last snapshot already names this state); remembered so a
            # run that stops inside this state is saved as cut off, to run it again.
            self._phase = PHASE_ENTERED
        elif kind == "route":
            self._continuation_prompt = None  # a handoff's prompt goes with its state
            self._save_snapshot(str(event["to"]))
        elif kind == "handoff_continued":
            self._save_continued_handoff()
        elif kind == PARALLEL_BRANCH_END:
            # An item of a fan-out finished: its result is on disk, it never runs again.
            self.persistence.save_state(self._build_state(self._executor.current_state, "running"))
        elif kind == "action_complete":
            self._action_group = None
            self._prune_logs(event)
        elif kind == "limit_wait":
            # The wait and what it waits for are on disk before it starts: a run stopped
            # or killed meanwhile waits only what is left when it is resumed.
            self.persistence.save_state(self._build_state(self._executor.current_state, WAITING))
        elif kind in ("limit_wait_end", "rate_limit_waiting"):
            # HEAD's ladder (§7.6): its memory is on disk at each minute of a wait.
            self.persistence.save_state(self._build_state(self._executor.current_state, "running"))
        elif kind == "evaluate":
            self._last_result = _evaluation_record(event)
        elif kind == "handoff_detected":
            self._continuation_prompt = event.get("continuation")
            if self.handoff_handler.behavior is HandoffBehavior.SPAWN:
                # The handler creates the new session right after this event: whatever
                # happens next, the state file already says where to continue.
                self._save_handoff_before_spawn()

    def _record_child_event(self, event: dict[str, Any]) -> None:
        """An event of a sub-loop (spec §9b): the parent's state is still under way, so
        every save keeps it `entered`; the child's place travels in `head.sub_loops`,
        which the core refreshed before this event."""
        kind = event.get("event")
        saved = ("loop_start", "route", "handoff_continued", "limit_wait_end", "rate_limit_waiting")
        if kind in saved:
            self.persistence.save_state(self._build_state(self._executor.current_state, "running"))
        elif kind == "action_complete":
            # A child's logs live in a folder of its own beside the run's (`sub_loop`);
            # `logs_keep` counts the run's own, so they stay until the run is archived.
            self._action_group = None
        elif kind == "limit_wait":
            self.persistence.save_state(self._build_state(self._executor.current_state, WAITING))
        elif kind == "handoff_detected":
            self._continuation_prompt = event.get("continuation")
            if self.handoff_handler.behavior is HandoffBehavior.SPAWN:
                self._save_handoff_before_spawn()

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
        retention.add(log_path, self._logs_in_use())

    def _logs_in_use(self) -> list[str]:
        executor = self._executor
        results: list[Any] = [*executor.captured.values(), executor.prev_result]
        # A state file written by the reference may hold captures that are not mappings.
        paths = [result.get("log_path") for result in results if isinstance(result, dict)]
        return [path for path in paths if isinstance(path, str)]

    def _save_snapshot(self, current_state: str) -> None:
        """One state write per transition, taken when the next state is chosen.

        The snapshot names the state about to run and the iterations finished so far, so
        resume after a crash runs exactly the state that had not finished: one cut off
        mid-action runs again under the same iteration number, and one whose action
        finished and was routed never runs twice. A `state_enter` write would add nothing
        (the state and its inputs are already saved) and cost a write per state.
        """
        self._phase = PHASE_ROUTED
        # Still `running` when the next state is terminal: `completed` is written only
        # after the `loop_complete` event, so a completed state file always has one.
        self.persistence.save_state(self._build_state(current_state, "running"))

    def _save_continued_handoff(self) -> None:
        """`on_handoff: continue`: the state finished and runs again next with the
        prompt. Saved like a route to itself, prompt included, so a run stopped or killed
        before that re-run resumes it as a new iteration that gets the prompt."""
        self._phase = PHASE_ROUTED
        self.persistence.save_state(self._build_state(self._executor.current_state, "running"))

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

    def _save_handoff_before_spawn(self) -> None:
        state = self._build_state(self._executor.current_state, "awaiting_continuation")
        state.continuation_prompt = self._continuation_prompt
        state.terminated_by = "handoff"
        self.persistence.save_state(state)

    def _build_state(self, current_state: str, status: str) -> LoopState:
        executor = self._executor
        prev = executor.prev_result
        return LoopState(
            loop_name=self.fsm.name,
            current_state=current_state,
            iteration=executor.iteration,
            captured=capped_captured(executor.captured),
            prev_result=capped_result(prev) if prev is not None else None,
            last_result=self._last_result,
            started_at=executor.started_at,
            updated_at="",
            status=status,
            pid=os.getpid(),
            host=self._host,
            elapsed_ms=executor.elapsed_ms(),
            handoff_count=executor.handoff_count,
            resumed_at=self._resumed_at,
            phase=self._phase,
            visits=executor.guards.visits.to_dict() if self._counts_visits else {},
            stall_streaks=executor.guards.stall.to_dict(),
            errors=executor.guards.errors.to_list(),
            continuation_prompt=self._continuation_prompt,  # None once a route left the state
            action_groups=self._action_groups(),
            context_overrides=self.context_overrides,
            spending=self._spending(),
            limit_wait=executor.cursor.limit_wait,
            max_cost_usd=self.budget_override,
            notify=self.notify_override,
            head=_capped_head(executor.cursor.head.to_dict()),
        )

    def _spending(self) -> dict[str, Any]:
        spending = self._executor.cursor.spending
        return spending.to_dict() if spending.anything else {}

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
        extras = [notify_log_path(self.persistence)]
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

    def _final_status(self, terminated_by: str) -> str:
        terminating = self.handoff_handler.behavior is HandoffBehavior.TERMINATE
        if terminated_by == "handoff" and terminating:
            return "handoff_terminated"
        return FINAL_STATUSES.get(terminated_by, "failed")

    def _save_final(self, result: ExecutionResult) -> None:
        state = self._build_state(result.final_state, self._final_status(result.terminated_by))
        state.iteration = result.iterations
        state.continuation_prompt = self._continuation_prompt
        state.terminated_by = result.terminated_by
        state.error = result.read_error  # the reference saved no error: ours is for people
        state.elapsed_ms = result.duration_ms
        spawned = self._executor.handoff_result
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
        return {"event": "handoff_spawned", "ts": now_iso(), "pid": pid, "log": log}

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
        self._restore(state)
        with self._files_guard():
            self.persistence.append_event(self._resume_event(state))
        return self.run(clear_previous=False)

    def _restore(self, state: LoopState) -> None:
        # A state cut off before its action finished runs again under the same number;
        # after a handoff or a stall the action did finish, so the re-run is a new
        # iteration.
        cut_off = state.phase == PHASE_ENTERED and state.status not in _STATE_FINISHED
        self._executor.restore(self._saved_cursor(state, cut_off=cut_off))
        if state.status == "awaiting_continuation" or _continued_handoff(state):
            # Saved again until the state is left, should this run stop before that.
            self._continuation_prompt = state.continuation_prompt
        self._restore_context_overrides(state)
        self._restore_command_line(state)
        self._restore_guards(state, cut_off=cut_off)
        self._last_result = state.last_result
        self._phase = state.phase
        self._resumed_at = now_iso()

    @staticmethod
    def _saved_cursor(state: LoopState, *, cut_off: bool) -> RunCursor:
        """Where the saved run stood, as the executor goes on from it."""
        handoff: dict[str, Any] | None = None
        if state.status == "awaiting_continuation" or _continued_handoff(state):
            handoff = {
                "prompt": state.continuation_prompt or "",
                "count": state.handoff_count,
                "state": state.current_state,
            }
        return RunCursor(
            current_state=state.current_state,
            iteration=max(state.iteration - 1, 0) if cut_off else state.iteration,
            captured=dict(state.captured),
            prev_result=state.prev_result,
            last_result=state.last_result,
            handoff_context=handoff,
            handoff_count=state.handoff_count,
            # The first start stays; the loop clock continues from the time already spent.
            started_at=state.started_at,
            start_time_ms=_wall_clock_ms() - (state.elapsed_ms or 0),
            spending=RunSpending.from_dict(state.spending),
            limit_wait=state.limit_wait,
            head=HeadMemory.from_dict(state.head),
        )

    def _restore_command_line(self, state: LoopState) -> None:
        """The run's `--max-cost` and `--notify` hold again unless given anew
        (`RunSettings.resumed`): the run goes on with a copy of its loop that has them."""
        settings = self.settings.resumed(max_cost_usd=state.max_cost_usd, notify=state.notify)
        if settings == self.settings:
            return
        notify_restored = settings.notify != self.settings.notify
        self.settings = settings
        # `fsm` is an executor attribute other components may replace (fsm-api.md §8.3).
        self.fsm = self._executor.fsm = settings.applied_to(self.fsm)
        if notify_restored:
            self.notifier = run_notifier(self.fsm.notify, self.persistence)

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

    def _resume_event(self, state: LoopState) -> dict[str, Any]:
        event: dict[str, Any] = {
            "event": "loop_resume",
            "ts": now_iso(),
            "loop": self.fsm.name,
            "from_state": state.current_state,
            "iteration": state.iteration,
        }
        if state.status == "awaiting_continuation" and state.continuation_prompt:
            event["from_handoff"] = True
            event["continuation_prompt"] = state.continuation_prompt
        return event


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
