"""The run loop of one loop: states, limits, signals, events.

`FSMExecutor` runs states one after another: it interpolates and runs the action (through
an `ActionRunner`), scans stdout for signals line by line as it streams, evaluates, routes
(see `routing`), and emits an event at every step. It knows nothing about files or the
terminal: persistence and the display subscribe to its events. Every expected failure (an
action that cannot start or times out, an evaluator that fails, an unresolvable variable)
becomes the `error` verdict, which routes through `on_error`/`_error` when the state has
one and ends the run otherwise.

This module keeps the public surface and drives the run core (`core.RunCore`), which
makes every decision (which state runs next, the limits, the guards, the signals, the
routes) without I/O: the executor serves its requests synchronously (runs the action
through the `ActionRunner`, judges with host I/O, checkpoints, sleeps the backoff, hands
off) until it finishes. Clocks and the environment are injected.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from little_loops.fsm.engine.action_step import call_runner
from little_loops.fsm.engine.context import (
    ActionRunner,
    Checkpointer,
    Clock,
    EventCallback,
    RunCursor,
)
from little_loops.fsm.engine.core import RunCore, SaveCallback
from little_loops.fsm.engine.evaluation_step import judge
from little_loops.fsm.engine.run_events import ignore_event
from little_loops.fsm.engine.run_guards import RunGuards
from little_loops.fsm.engine.run_requests import Finish, RunAction
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.handoff_handler import HandoffHandler, HandoffResult
from little_loops.fsm.model.run_choices import NO_CHOICES, RunChoices
from little_loops.fsm.process.clock import SYSTEM_CLOCK
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import DetectedSignal, SignalDetector

if TYPE_CHECKING:
    from little_loops.fsm.engine.approval_wait import ApprovalInbox
    from little_loops.fsm.engine.branch_threads import BranchServer
    from little_loops.fsm.engine.parallel_requests import AddBranchWorktree
    from little_loops.fsm.engine.requests import Request, RunBranches, RunChild
    from little_loops.fsm.engine.sub_loop_requests import (
        AttachWorktree,
        ChildEnded,
        DetachWorktree,
        LoadChild,
    )
    from little_loops.fsm.process.workspace import WorkspaceWatcher

__all__ = ["ExecutionResult", "FSMExecutor"]

T = TypeVar("T")

WALL_CLOCK_RECHECK_SECONDS = 30.0


def copied_runner(runner: Any) -> DefaultActionRunner | None:
    """A runner like the run's for one `parallel:` branch: its own process groups, the
    run's settings (None: this kind of runner cannot be copied)."""
    if type(runner) is not DefaultActionRunner:
        return None
    copy = DefaultActionRunner(
        claude_bin=runner.claude_bin, output_cap=runner.output_cap, cwd=runner.cwd
    )
    copy.group_notice_seconds = runner.group_notice_seconds
    return copy


class _CursorField(Generic[T]):
    """An executor attribute kept in its cursor (the attributes fsm-api.md lets other
    components read and set: `current_state`, `iteration`, `captured`, ...)."""

    def __init__(self, field: str) -> None:
        self.field = field

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _CursorField[T]: ...

    @overload
    def __get__(self, obj: FSMExecutor, owner: type[Any]) -> T: ...

    def __get__(self, obj: FSMExecutor | None, owner: type[Any]) -> T | _CursorField[T]:
        if obj is None:
            return self
        return cast(T, getattr(obj.cursor, self.field))

    def __set__(self, obj: FSMExecutor, value: T) -> None:
        setattr(obj.cursor, self.field, value)


class FSMExecutor:
    """Runs an `FSMLoop` to its end and reports every step as an event."""

    current_state = _CursorField[str]("current_state")
    iteration = _CursorField[int]("iteration")
    captured = _CursorField[dict[str, dict[str, Any]]]("captured")
    prev_result = _CursorField[dict[str, Any] | None]("prev_result")
    # Additions, set by persistence on resume: the last evaluation (`${result.*}`), the
    # handoff being continued ({"prompt", "count", "state"}) and how many handoffs the run
    # has made (bounded by `max_continuations`).
    last_result = _CursorField[dict[str, Any] | None]("last_result")
    handoff_context = _CursorField[dict[str, Any] | None]("handoff_context")
    handoff_count = _CursorField[int]("handoff_count")
    started_at = _CursorField[str]("started_at")
    start_time_ms = _CursorField[int]("start_time_ms")
    _pending_handoff = _CursorField[DetectedSignal | None]("pending_handoff")

    def __init__(
        self,
        fsm: FSMLoop,
        event_callback: EventCallback | None = None,
        action_runner: ActionRunner | None = None,
        signal_detector: SignalDetector | None = None,
        handoff_handler: HandoffHandler | None = None,
        *,
        output_callback: Callable[[str], None] | None = None,
        log_dir: Path | None = None,
        checkpointer: Checkpointer | None = None,
        clock: Clock | None = None,
        env: Mapping[str, str] | None = None,
        choices: RunChoices = NO_CHOICES,
        save_callback: SaveCallback | None = None,
    ) -> None:
        self.fsm = fsm
        self.event_callback: EventCallback = event_callback or ignore_event
        self.action_runner: ActionRunner = action_runner or DefaultActionRunner()
        self.signal_detector = signal_detector
        self.handoff_handler = handoff_handler
        self.output_callback = output_callback
        # Addition: where each action's whole stdout is logged (`<iteration>-<state>.log`),
        # for runners that set `supports_output_log`. None: no logs.
        self.log_dir = log_dir
        # Additions: loop guards (stall streaks, visits, errors; restored on resume) and
        # `checkpoint: git` (None: no checkpoints).
        self.guards = RunGuards(fsm)
        self._workspace: WorkspaceWatcher | None = None  # built on the first `InspectWorkspace`
        self.checkpointer = checkpointer
        # Additions: the clocks and the environment (`${env.X}`; None: the process's).
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.env = env
        # The run's `--no-llm`/`--llm-model` (already in `fsm.llm`), for its sub-loops.
        self.choices = choices
        # Addition: where the core's `SaveSnapshot` requests go (persistence; None: none).
        self.save_callback = save_callback
        self.cursor = RunCursor(fsm.initial)
        self.handoff_result: HandoffResult | None = None
        self._shutdown_requested = False
        self._clock_start = self.clock.monotonic()
        self._core: RunCore | None = None
        self._wake: queue.SimpleQueue[bool] = queue.SimpleQueue()
        # Addition (issue 26): where answers to a `human_approval` question come from
        # (persistence adds the answer file, a foreground run on a terminal its keyboard).
        self.approvals: list[ApprovalInbox] = []
        # A `parallel:` fan-out's running branch servers (a stop reaches each) and the
        # action groups running in them (saved with the run's, `branch_action_groups`).
        self._branch_servers: set[BranchServer] = set()
        self._branch_groups: dict[int, ActionGroup] = {}

    # -- public -------------------------------------------------------------------------

    def snapshot(self) -> RunCursor:
        """A copy of where the run stands (no files are touched)."""
        return self.cursor.copy()

    def restore(self, cursor: RunCursor) -> None:
        """Go on from `cursor` (e.g. a saved run's); `run()` then starts at its state."""
        self.cursor = cursor.copy()

    def request_shutdown(self) -> None:
        """Stop soon: wake a backoff sleep and cancel the running action (signal-safe).

        An action that still finishes on its own (it exited before the cancel landed, or
        the runner has no `cancel`) is evaluated and routed; the run stops before the next
        state, so resume starts there. An action the cancel cut off runs again on resume.
        """
        self._shutdown_requested = True
        self._wake.put(True)
        cancel = getattr(self.action_runner, "cancel", None)
        if callable(cancel):
            cancel()
        for server in list(self._branch_servers):  # a fan-out's branches stop too
            server.stop()

    def branch_action_groups(self) -> list[ActionGroup]:
        """The process groups of the actions a fan-out's branches run now (issue 25)."""
        return list(self._branch_groups.values())

    def serve_request(self, request: Request) -> Any:
        """Do the I/O `request` asks for (a fan-out's branch server serves with this)."""
        return self._serve(request)

    def run(self) -> ExecutionResult:
        """Run from `current_state` until a terminal state, a limit, a signal or an error.

        A resumed run (persistence preset `started_at` and `start_time_ms`) keeps its first
        start, and its loop clock counts the time already spent.
        """
        core = self._core = self._run_core()
        try:
            return self._drive(core)
        except Exception as exc:  # a raising callback or collaborator must not escape
            return core.finish_after_crash(exc)
        finally:
            # What actions left in the background lives as long as the run (runner.py).
            stop_background = getattr(self.action_runner, "stop_background", None)
            if callable(stop_background):
                stop_background()

    def elapsed_ms(self) -> int:
        """Milliseconds spent on this loop, earlier runs of a resumed loop included."""
        if self._core is not None:
            return self._core.elapsed_ms()
        return int((self.clock.monotonic() - self._clock_start) * 1000)

    # -- driving the core ---------------------------------------------------------------

    def _run_core(self) -> RunCore:
        return RunCore(
            self.fsm,
            clock=self.clock,
            cursor=self.cursor,
            guards=self.guards,
            emit=self.event_callback,
            env=self.env,
            signal_detector=self.signal_detector,
            handoff_handler=self.handoff_handler,
            log_dir=self.log_dir,
            checkpoints=self.checkpointer is not None,
            stop_requested=self._stop_requested,
            choices=self.choices,
            save=self.save_callback,
        )

    def _stop_requested(self) -> bool:
        return self._shutdown_requested

    def _drive(self, core: RunCore) -> ExecutionResult:
        """Serve the core's requests, synchronously, until it finishes."""
        request = core.next_request()
        while not isinstance(request, Finish):
            core.submit(self._serve(request))
            request = core.next_request()
        if request.ending.handoff_result is not None:
            self.handoff_result = request.ending.handoff_result
        return request.result

    def _workspace_fingerprint(self) -> str | None:
        """The work tree's fingerprint (`workspace.WorkspaceWatcher`, a `git status` in this
        process's directory) for the stall guard; the watcher keeps the loop's runtime
        folder (`guards.loops_dir`, set by persistence before the run) out of it."""
        if self._workspace is None:
            from little_loops.fsm.process.workspace import WorkspaceWatcher  # the stall guard's

            self._workspace = WorkspaceWatcher(
                loops_dir=self.guards.loops_dir, progress_paths=self.guards.progress_paths
            )
        return self._workspace.fingerprint()

    def _wait_until(self, until: float) -> None:
        """Wait until the wall-clock time `until`, or a shutdown. Looked at again every
        `WALL_CLOCK_RECHECK_SECONDS`: a machine that slept through part of a long wait
        (a laptop lid closed overnight) goes on as soon as it wakes past the time."""
        while not self._shutdown_requested:
            remaining = until - self.clock.wall()
            if remaining <= 0:
                return
            try:
                self._wake.get(timeout=min(remaining, WALL_CLOCK_RECHECK_SECONDS))
                return
            except queue.Empty:
                continue

    def _run_child(self, request: RunChild) -> ChildEnded:
        """A sub-loop's child runs here: its requests are served in turn, as the run's."""
        child = request.child
        inner = child.next_request()
        while not isinstance(inner, Finish):
            child.submit(self._serve(inner))
            inner = child.next_request()
        return child.ended(inner)

    def _run_branches(self, request: RunBranches) -> None:
        """A `parallel:` fan-out: its branches run side by side (`branch_threads`)."""
        from little_loops.fsm.engine.branch_servers import SerialBranchServer
        from little_loops.fsm.engine.branch_threads import drive_branches

        drive_branches(
            request.fanout,
            self._open_branch_server,
            SerialBranchServer(self),
            self._branch_servers,
        )

    def _open_branch_server(self, lock: threading.Lock) -> BranchServer | None:
        runner = copied_runner(self.action_runner)
        if runner is None:
            return None
        server = FSMExecutor(
            self.fsm,
            action_runner=runner,
            handoff_handler=self.handoff_handler,
            log_dir=self.log_dir,
            checkpointer=self.checkpointer,
            clock=self.clock,
            env=self.env,
            choices=self.choices,
        )
        server.guards.loops_dir = self.guards.loops_dir
        if self._shutdown_requested:
            server.request_shutdown()
        tell = getattr(self.action_runner, "on_group_running", None)
        from little_loops.fsm.engine.branch_servers import ExecutorBranchServer

        return ExecutorBranchServer(server, runner, self._branch_groups, tell, lock)

    def _serve_sub_loop(
        self, request: LoadChild | AttachWorktree | DetachWorktree | AddBranchWorktree
    ) -> Any:
        from little_loops.fsm.engine.child_loader import (
            add_branch_worktree,
            attach_worktree,
            detach_worktree,
            load_child,
        )
        from little_loops.fsm.engine.parallel_requests import AddBranchWorktree
        from little_loops.fsm.engine.sub_loop_requests import AttachWorktree, LoadChild

        loops_dir = self.guards.loops_dir or Path(".loops")
        if isinstance(request, AddBranchWorktree):
            return add_branch_worktree(request.branch, loops_dir, request.label, request.fresh)
        if isinstance(request, LoadChild):
            return load_child(request.name, loops_dir, context_keys=request.context_keys)
        if isinstance(request, AttachWorktree):
            return attach_worktree(request.branch, loops_dir, request.label)
        return detach_worktree(request.path)

    @contextlib.contextmanager
    def _working_in(self, cwd: Path | None) -> Iterator[None]:
        """Run an action in `cwd` (a sub-loop's worktree) when the runner has a `cwd`."""
        runner: Any = self.action_runner
        if cwd is None or not hasattr(runner, "cwd"):
            yield
            return
        before, runner.cwd = runner.cwd, cwd
        try:
            yield
        finally:
            runner.cwd = before

    def _serve(self, request: Request) -> Any:
        """Do the I/O `request` asks for; return its result."""
        if isinstance(request, RunAction):
            with self._working_in(request.cwd):
                return call_runner(
                    self.action_runner,
                    request.action,
                    request.timeout,
                    request.slash,
                    request.scan,
                    self.output_callback,
                    request.log_path,
                    request.resume_session,
                    claude_flags=request.claude_flags,
                    idle_timeout=request.idle_timeout,
                    host=request.host,
                    model=request.model,
                )
        return self._serve_occasional(request)

    def _serve_occasional(self, request: Request) -> Any:
        """A request a run makes only when a feature asks (judge with I/O, checkpoint,
        fingerprint, wait, hand off, and the features of `_serve_feature`): their modules
        are imported at the first such request, so that a plain run does not load them."""
        from little_loops.fsm.engine.handoff_requests import HandOff
        from little_loops.fsm.engine.judge_requests import EvaluateWithIO
        from little_loops.fsm.engine.wait_requests import Sleep, WaitUntil
        from little_loops.fsm.engine.workspace_requests import (
            Checkpoint,
            FingerprintPaths,
            InspectWorkspace,
        )

        if isinstance(request, EvaluateWithIO):
            return judge(request.state, request.ctx, request.step, request.llm)
        if isinstance(request, Checkpoint):
            assert self.checkpointer is not None
            return self.checkpointer.checkpoint(
                request.state, request.iteration, reason=request.reason
            )
        if isinstance(request, InspectWorkspace):
            return self._workspace_fingerprint()
        if isinstance(request, FingerprintPaths):
            from little_loops.fsm.process.path_fingerprint import paths_fingerprint

            return paths_fingerprint(request.paths, request.exclude)
        if isinstance(request, Sleep):
            # `request_shutdown` cuts the wait short.
            with contextlib.suppress(queue.Empty):
                self._wake.get(timeout=request.seconds)
            return None
        if isinstance(request, WaitUntil):
            self._wait_until(request.until)
            return None
        if isinstance(request, HandOff):
            assert self.handoff_handler is not None
            return self.handoff_handler.handle(request.loop_name, request.continuation)
        return self._serve_feature(request)

    def _serve_feature(self, request: Request) -> Any:
        """A request of a feature a plain loop never reaches (an approval, a sub-loop, a
        fan-out): the modules that serve it are imported here, at its first request, so
        that a plain run does not load them at start-up."""
        from little_loops.fsm.engine.approval_requests import AwaitApproval
        from little_loops.fsm.engine.parallel_requests import AddBranchWorktree
        from little_loops.fsm.engine.requests import RunBranches, RunChild
        from little_loops.fsm.engine.sub_loop_requests import (
            AttachWorktree,
            DetachWorktree,
            LoadChild,
        )

        if isinstance(request, AwaitApproval):
            from little_loops.fsm.engine.approval_wait import wait_for_answer

            return wait_for_answer(
                request, self.approvals, self.clock, self._wake, self._stop_requested
            )
        if isinstance(request, RunChild):
            return self._run_child(request)
        if isinstance(request, RunBranches):
            return self._run_branches(request)
        assert isinstance(
            request, LoadChild | AttachWorktree | DetachWorktree | AddBranchWorktree
        ), request
        return self._serve_sub_loop(request)
