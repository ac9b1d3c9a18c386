"""`LoopWorkflow`: one run of a loop as a Temporal workflow, driving the run core.

The workflow holds no copy of the loop's logic: it builds the same `RunCore` as the local
engine (clock = workflow time, environment = the snapshot in the input) and serves its
requests (`_serve`, one branch per request type): actions, judging with host I/O,
checkpoints, the stall guard's work-tree fingerprint and a spawned handoff session become
activities on the checkout's task queue; a backoff or a usage-limit wait is a workflow
timer. The loop's `notify` command is called by an activity on the host too. Everything
else (routing, guards, pure evaluators, signals) runs here, deterministically.

- A handoff pauses the run (status `awaiting_continuation`) until the `resume` signal,
  which may carry a new prompt and `max_continuations`.
- Cancelling the workflow is `stop`. The request is part of the workflow's state the
  moment it arrives (`workflow.cancellation_reason()`, `_stop_asked`): the run core sees
  it as a shutdown, so nothing is scheduled after it. The running action's activity is
  cancelled (its process group killed) when the cancellation reaches it; one that
  finished first keeps its result and the run stops before the next state, as locally.
  The run ends `interrupted`, resumable by a new workflow run.
- An action that Temporal ran again after a worker or server failure is told by its
  activity (the `action_retry` signal) and kept as an event (`action_retry`).
- A `human_approval` state waits for the `approval` signal with a durable timer for its
  timeout (`approvals`); status `awaiting_approval` meanwhile.
- `status` answers with the state file's fields (`LoopState`); `events(since)` gives the
  events from number `since` on, so a client can show progress as a local run does.
- Every `continue_as_new_every` states the run continues as new, carrying its cursor
  and guards, so the history stays bounded.
- A HEAD sub-loop's child (`RunChild`) runs as a child workflow (`child_workflow`,
  `sub_loop_children`): its actions are in its own history, its events and place come
  back as `child_progress` signals, and a `stop` of this run stops it too.

Upgrades: a change that alters which activities or timers a run asks for is guarded by
`workflow.patched` (the run core's changes through its `revised` hook, named in
`engine.revisions`; the workflow's own below), so a history recorded before it replays.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    TemporalError,
    TimeoutType,
    is_cancelled_exception,
)
from temporalio.exceptions import (
    TimeoutError as TemporalTimeoutError,
)

with workflow.unsafe.imports_passed_through():
    from pathlib import Path

    from little_loops.fsm.engine import events
    from little_loops.fsm.engine.approval_requests import AwaitApproval
    from little_loops.fsm.engine.context import RunCursor
    from little_loops.fsm.engine.core import RunCore
    from little_loops.fsm.engine.evaluation_step import Judgement
    from little_loops.fsm.engine.handoff_requests import HandOff
    from little_loops.fsm.engine.host_failover import HOST_SWITCH
    from little_loops.fsm.engine.judge_requests import EvaluateWithIO
    from little_loops.fsm.engine.parallel_requests import AddBranchWorktree
    from little_loops.fsm.engine.requests import Request, RunBranches, RunChild
    from little_loops.fsm.engine.run_guards import RunGuards
    from little_loops.fsm.engine.run_requests import Finish, RunAction
    from little_loops.fsm.engine.sub_loop_requests import (
        AttachWorktree,
        ChildEnded,
        ChildLoadFailed,
        DetachWorktree,
        LoadChild,
        LoadedChild,
        WorktreeAttached,
    )
    from little_loops.fsm.engine.wait_requests import Sleep, WaitUntil
    from little_loops.fsm.engine.workspace_requests import (
        Checkpoint,
        FingerprintPaths,
        InspectWorkspace,
    )
    from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler, HandoffResult
    from little_loops.fsm.model.head_loop import loop_from_dict
    from little_loops.fsm.process.checkpoint import CheckpointResult
    from little_loops.fsm.process.runner import CANCELLED_EXIT_CODE, CANCELLED_MESSAGE, ActionResult
    from little_loops.fsm.schema import DEFAULT_LOGS_KEEP, FSMLoop
    from little_loops.fsm.signal_detector import SignalDetector
    from little_loops.fsm.store.run_record import logs_in_use
    from little_loops.fsm.store.state_files import RUNNING_DIR
    from little_loops.fsm.temporal.action_retry import ActionRetry
    from little_loops.fsm.temporal.approvals import (
        APPROVAL_SIGNAL,
        APPROVALS,
        ApprovalSignal,
        ApprovalWaits,
    )
    from little_loops.fsm.temporal.parallel_branches import run_branches
    from little_loops.fsm.temporal.payloads import (
        ActionInput,
        ActionOutput,
        CheckpointInput,
        ChildInput,
        ChildOutput,
        ChildProgress,
        EventsPage,
        JudgeInput,
        NotifyInput,
        PathsInput,
        ResumeSignal,
        RunInput,
        RunOutcome,
        SpawnInput,
        SpawnOutput,
        WorkspaceInput,
        WorktreeInput,
        WorktreeOutput,
        cursor_from_dict,
        guards_from_dict,
    )
    from little_loops.fsm.temporal.run_record import RunRecord
    from little_loops.fsm.temporal.sub_loop_children import (
        CHILD_WORKFLOWS,
        PROGRESS_SIGNAL,
        ChildWorkflows,
    )

__all__ = ["WORKFLOW_NAME", "WORKTREE_ON_TEMPORAL", "LoopWorkflow"]

# A `worktree:` sub-loop of a run from before sub-loops became child workflows (replayed).
WORKTREE_ON_TEMPORAL = (
    "a sub-loop's worktree: is not supported on the Temporal engine (run this loop locally)"
)

WORKFLOW_NAME = "ll-loop"
EVENTS_KEPT = 5000
"""Events the workflow keeps for `events` queries (older ones are in the history)."""
CARRIED_EVENT_BYTES = 256 * 1024
"""The newest events, up to this size, go on to the next run at a continue-as-new (a
bounded part of a payload far below Temporal's 2 MB limit)."""

_ACTION_MARGIN_SECONDS = 60.0  # the runner times the action out itself; this is a backstop
_SHORT_ACTIVITY = timedelta(minutes=10)
_RETRIES = RetryPolicy(maximum_attempts=5)
_NOTIFY_TIMEOUT = timedelta(minutes=3)  # the command is bounded to 60 s on the host
_ONCE = RetryPolicy(maximum_attempts=1)  # a notification retried could be told twice

NOTIFY = "ll-loop:2026-11:notify"
"""`workflow.patched` name: the notify command is called (before it, never on Temporal)."""

STOP_KEPT = "ll-loop:2026-11:stop-kept"
"""`workflow.patched` name: a stop is kept from the moment it arrives (before it, a stop
that reached neither a running activity nor a timer was lost), and a stop while judging
or committing lets that activity finish instead of cancelling it."""

NOTIFIED_EVENTS = frozenset({events.LIMIT_WAIT, events.LIMIT_WAIT_END, events.APPROVAL_NEEDED})
"""Events told as they happen (the end of the run is told once its outcome is set)."""

HOST_SWITCH_NOTIFY = "ll-host-switch-notify"
"""The patch under which a `host_switch` event is told to the notify command."""


class WorkflowClock:
    """The core's clocks, read from workflow time (deterministic on replay)."""

    def monotonic(self) -> float:
        return workflow.time()

    def wall(self) -> float:
        return workflow.now().timestamp()


@workflow.defn(name=WORKFLOW_NAME)
class LoopWorkflow:
    """See the module docstring."""

    def __init__(self) -> None:
        self._events: list[dict[str, Any]] = []
        self._first_event = 0  # the number of `_events[0]`
        self._resume: ResumeSignal | None = None
        self._outcome: RunOutcome | None = None
        self._record: RunRecord | None = None
        self._core: RunCore | None = None
        self._elapsed_ms = 0
        self._states_here = 0  # states entered in this workflow run (continue-as-new)
        self._rolling_over = False
        self._quiet_start = False  # a continued run does not announce a second start
        self._activities = 0  # activities scheduled in this workflow run
        self._to_tell: list[NotifyInput] = []  # notifications not sent yet, in order
        self._telling: asyncio.Task[None] | None = None  # sends them, one at a time
        self._children = ChildWorkflows()  # the sub-loops' child workflows it waits for
        self._held_completion: dict[str, Any] | None = None  # see `_keep_held_completion`
        self._approvals = ApprovalWaits()  # answers to `human_approval` questions

    # -- signals and queries ------------------------------------------------------------

    @workflow.signal
    def resume(self, signal: ResumeSignal) -> None:
        self._resume = signal

    @workflow.signal(name=PROGRESS_SIGNAL)
    def child_progress(self, progress: ChildProgress) -> None:
        """A sub-loop's child workflow tells its events and place (`sub_loop_children`)."""
        self._children.relay(progress)

    @workflow.signal(name="action_retry")
    def action_retry(self, retry: ActionRetry) -> None:
        """An action's activity runs again (its activity says so as it starts): kept as
        an event of the run. Changes no command: old histories replay as they were."""
        event = retry.event(workflow.now().isoformat())
        if self._record is not None:
            self._record.note(event)
        self._keep_event(event)  # the worker that runs the retry logs it

    @workflow.signal(name=APPROVAL_SIGNAL)
    async def approval(self, signal: ApprovalSignal) -> None:
        """`ll-loop approve`/`reject`: the answer to the question the run waits on, or
        that a sub-loop's child workflow under way waits on (passed on to it)."""
        self._approvals.receive(signal)
        await self._children.forward(APPROVAL_SIGNAL, signal)

    @workflow.query
    def status(self) -> dict[str, Any] | None:
        """The state file's fields, as the run stands (None before it starts)."""
        if self._outcome is not None and self._resume is None:
            return self._outcome.state
        if self._record is None or self._core is None:
            return None
        core = self._core
        return self._record.state_dict(core.cursor, core.guards, self._elapsed_ms)

    @workflow.query
    def outcome(self) -> RunOutcome | None:
        """How the run ended or paused (None while it runs)."""
        return self._outcome if self._resume is None else None

    @workflow.query
    def events(self, since: int) -> EventsPage:
        start = max(since - self._first_event, 0)
        return EventsPage(
            first=self._first_event + start,
            events=self._events[start:],
            total=self._first_event + len(self._events),
        )

    # -- the run ------------------------------------------------------------------------

    @workflow.run
    async def run(self, run: RunInput) -> RunOutcome:
        self._input = run
        fsm = self._fsm = loop_from_dict(run.loop, run.dialect)
        record = self._record = RunRecord(fsm, run.host, dict(run.context_overrides))
        record.budget_override, record.notify_override = run.budget_override, run.notify_override
        guards = self._guards(fsm)
        cursor = RunCursor(fsm.initial)
        carry = run.carry
        if carry is not None:
            self._events = list(carry.recent_events)
            self._first_event = carry.event_offset - len(self._events)
            record.recall_retries(self._events)
            cursor = cursor_from_dict(carry.cursor)
            guards_from_dict(guards, carry.guards)
            record.take_carry(carry)
            self._elapsed_ms = carry.cursor.get("elapsed_ms", 0)
            if carry.status == "running":
                self._quiet_start = True  # continued as new: the same run goes on
            else:
                cursor = self._resumed(cursor, guards, run.resume or ResumeSignal())
        while True:
            finish = await self._drive(self._new_core(cursor, guards))
            if self._rolling_over and not self._stop_asked():
                await self._notified()
                if not self._stop_asked():  # a stop meanwhile ends the run here
                    workflow.continue_as_new(self._continued_input())
            self._keep_held_completion()
            self._outcome = self._finished(finish)
            await self._release_scope()
            await self._notify_end(self._outcome)
            if not self._pauses(finish):
                return self._outcome
            signal = await self._wait_for_resume()
            if signal is None:  # stopped while paused: it stays paused
                return self._outcome
            assert self._core is not None
            cursor = self._resumed(self._core.cursor, guards, signal)
            self._outcome = None
            self._resume = None

    def _guards(self, fsm: FSMLoop) -> RunGuards:
        return RunGuards(fsm)  # its work-tree fingerprint is an activity (`InspectWorkspace`)

    def _new_core(self, cursor: RunCursor, guards: RunGuards) -> RunCore:
        run, fsm = self._input, self._fsm
        logs = Path(run.loops_dir) / RUNNING_DIR / f"{fsm.name}.logs"
        core = RunCore(
            fsm,
            clock=WorkflowClock(),
            cursor=cursor,
            guards=guards,
            emit=self._on_event,
            env=dict(run.env),
            signal_detector=SignalDetector(),
            handoff_handler=HandoffHandler(HandoffBehavior(fsm.on_handoff)),
            log_dir=logs if run.keep_logs and self._logs_keep() else None,
            checkpoints=fsm.checkpoint == "git",
            stop_requested=self._stop_or_rollover,
            revised=self._revised,
            choices=run.choices,
        )
        self._core = core
        return core

    def _stop_or_rollover(self) -> bool:
        """The core stops before its next state: a stop arrived, or it is time to
        continue as new (a stop wins: the run then ends `interrupted`)."""
        return self._stop_asked() or self._rollover_due()

    def _stop_asked(self) -> bool:
        """Whether `stop` (the workflow's cancellation) has arrived. Read from the
        workflow's own state, so a stop that no activity or timer saw is not lost; a run
        recorded before `STOP_KEPT` replays as it ran (it looked only at those)."""
        return workflow.cancellation_reason() is not None and workflow.patched(STOP_KEPT)

    def _revised(self, name: str) -> bool:
        """Whether a named change of the run core (`engine.revisions`) applies: yes for a
        run that reaches it after the upgrade, no when replaying a history from before."""
        return workflow.patched(name)

    async def _drive(self, core: RunCore) -> Finish:
        request = core.next_request()
        while not isinstance(request, Finish):
            core.submit(await self._serve(core, request))
            request = core.next_request()
        return request

    async def _serve(self, core: RunCore, request: Request) -> Any:
        """Do what `request` asks (one branch per request type); return its result."""
        if isinstance(request, RunAction | Sleep | WaitUntil) and self._stop_asked():
            return _cancelled_action() if isinstance(request, RunAction) else None
        if isinstance(request, RunAction):
            return await self._run_action(core, request)
        if isinstance(request, EvaluateWithIO):
            return await self._judge(core, request)
        if isinstance(request, Checkpoint):
            return await self._checkpoint(core, request)
        if isinstance(request, InspectWorkspace):
            return await self._inspect_workspace(core)
        if isinstance(request, FingerprintPaths):
            return await self._fingerprint_paths(core, request)
        if isinstance(request, Sleep):
            return await self._sleep(core, request.seconds)
        if isinstance(request, WaitUntil):  # a usage limit's reset, as a durable timer
            return await self._sleep(core, max(request.until - workflow.now().timestamp(), 0))
        if isinstance(request, AwaitApproval) and workflow.patched(APPROVALS):
            return await self._approvals.wait(request, self._stop_asked)
        if isinstance(request, HandOff):
            return await self._hand_off(core, request)
        if isinstance(request, LoadChild):
            return await self._load_child(core, request)
        if isinstance(request, RunChild):
            return await self._run_child(core, request)
        if isinstance(request, AttachWorktree):
            return await self._attach_worktree(core, request)
        if isinstance(request, DetachWorktree):
            return await self._detach_worktree(core, request)
        if isinstance(request, RunBranches):  # issue 25 (`parallel_branches`)
            serve = lambda inner: self._serve(core, inner)  # noqa: E731
            return await run_branches(request, serve, core.request_shutdown)
        if isinstance(request, AddBranchWorktree):
            return await self._add_branch_worktree(core, request)
        raise TypeError(f"the Temporal engine cannot serve {type(request).__name__}")

    # -- the requests -------------------------------------------------------------------

    async def _run_action(self, core: RunCore, request: RunAction) -> ActionResult:
        run = self._input
        action = ActionInput(
            action=request.action,
            timeout=request.timeout,
            slash=request.slash,
            checkout=run.checkout,
            log_path=str(request.log_path) if request.log_path else None,
            resume_session=request.resume_session,
            claude_flags=list(request.claude_flags),
            idle_timeout=request.idle_timeout,
            cwd=str(request.cwd) if request.cwd is not None else None,
            host=request.host,
            model=request.model,
            logs_keep=self._logs_keep(),
            logs_in_use=logs_in_use(core.cursor),
        )
        try:
            output: ActionOutput = await workflow.execute_activity(
                "ll-loop.run_action",
                action,
                result_type=ActionOutput,
                activity_id=self._activity_id(core, "action"),
                task_queue=run.task_queue,
                schedule_to_start_timeout=timedelta(seconds=run.schedule_to_start_seconds),
                start_to_close_timeout=timedelta(seconds=request.timeout + _ACTION_MARGIN_SECONDS),
                heartbeat_timeout=timedelta(seconds=run.heartbeat_seconds),
                retry_policy=_RETRIES,
                cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        except (asyncio.CancelledError, ActivityError) as exc:
            if not is_cancelled_exception(exc):
                return _failed_action(self._activity_failure(exc))
            core.request_shutdown()  # `stop`: the action was cut off and runs again on resume
            return _cancelled_action()
        if request.scan is not None:
            for line in output.signal_lines:  # what the activity saw as the output streamed
                request.scan.feed(line)
        return output.result

    def _activity_failure(self, exc: BaseException) -> str:
        """Why an activity gave no result: a dead or missing worker, said plainly."""
        cause = exc.__cause__ if isinstance(exc, ActivityError) else exc
        queue = self._input.task_queue
        if isinstance(cause, TemporalTimeoutError) and cause.type is TimeoutType.SCHEDULE_TO_START:
            waited = self._input.schedule_to_start_seconds
            return (
                f"no worker took the activity on task queue '{queue}' within {waited:g}s "
                "(is `ll-loop worker` running in that checkout?)"
            )
        return f"the activity failed on task queue '{queue}': {cause}"

    async def _judge(self, core: RunCore, request: EvaluateWithIO) -> Judgement:
        judge = JudgeInput(
            loop=self._input.loop,
            state=core.cursor.current_state,
            ctx=_ctx_dict(request),
            action=request.step.action,
            slash=request.step.slash,
            checkout=self._input.checkout,
            dialect=self._input.dialect,
        )
        try:
            # `[verdict, details]` from a worker before spending was reported (a run in
            # flight across an upgrade), `[verdict, details, spending]` since.
            verdict, details, *spent = await self._host_activity("ll-loop.judge", judge, list, core)
        except ActivityError as exc:
            failure = f"Evaluation failed: {self._activity_failure(exc)}"
            return Judgement("error", {"error": failure})
        return Judgement(str(verdict), dict(details), spent[0] if spent else None)

    async def _checkpoint(self, core: RunCore, request: Checkpoint) -> CheckpointResult:
        run = self._input
        checkpoint = CheckpointInput(
            loop_name=self._fsm.name,
            state=request.state,
            iteration=request.iteration,
            reason=request.reason,
            checkout=run.checkout,
            loops_dir=run.loops_dir,
        )
        try:
            result: CheckpointResult = await self._host_activity(
                "ll-loop.checkpoint", checkpoint, CheckpointResult, core
            )
        except ActivityError as exc:
            return CheckpointResult("failed", warning=self._activity_failure(exc))
        return result

    async def _inspect_workspace(self, core: RunCore) -> str | None:
        run = self._input
        workspace = WorkspaceInput(
            checkout=run.checkout,
            loops_dir=run.loops_dir,
            progress_paths=list(self._fsm.progress_paths),
        )
        try:
            fingerprint: str | None = await self._host_activity(
                "ll-loop.inspect_workspace", workspace, str, core
            )
        except ActivityError:
            return None  # as a git that fails locally: the files are not watched
        return fingerprint

    async def _fingerprint_paths(self, core: RunCore, request: FingerprintPaths) -> str | None:
        """HEAD's circuit progress paths, on the checkout's host (None when that failed:
        the window is then compared without them)."""
        paths = PathsInput(self._input.checkout, list(request.paths), list(request.exclude))
        try:
            fingerprint: str = await self._host_activity(
                "ll-loop.fingerprint_paths", paths, str, core
            )
        except ActivityError:
            return None
        return fingerprint

    async def _load_child(self, core: RunCore, request: LoadChild) -> Any:
        """A HEAD sub-loop, loaded on the checkout's host; its states then run here as
        part of this run (their place in its carry), each action an activity as usual."""
        run = self._input
        child = ChildInput(request.name, run.checkout, run.loops_dir, list(request.context_keys))
        try:
            loaded: ChildOutput = await self._host_activity(
                "ll-loop.load_child", child, ChildOutput, core
            )
        except ActivityError as exc:
            return ChildLoadFailed(f"sub-loop '{request.name}': {self._activity_failure(exc)}")
        if loaded.loop is None:
            return ChildLoadFailed(loaded.error or f"sub-loop '{request.name}' not loaded")
        return LoadedChild(loop_from_dict(loaded.loop, loaded.dialect), loaded.path or "")

    async def _run_child(self, core: RunCore, request: RunChild) -> ChildEnded:
        """A HEAD sub-loop's child runs as a child workflow (`sub_loop_children`); a run
        from before that change runs it here, its requests served as this run's."""
        if workflow.patched(CHILD_WORKFLOWS):
            return await self._children.run(self._top_run(), request, core.request_shutdown)
        child = request.child
        inner = child.next_request()
        while not isinstance(inner, Finish):
            child.submit(await self._serve(core, inner))
            inner = child.next_request()
        return child.ended(inner)

    async def _attach_worktree(
        self, core: RunCore, request: AttachWorktree
    ) -> WorktreeAttached | ChildLoadFailed:
        """A `worktree:` sub-loop's worktree, attached on the checkout's host (its child
        then runs as a child workflow); a run from before that change refuses it."""
        if not workflow.patched(CHILD_WORKFLOWS):
            return ChildLoadFailed(WORKTREE_ON_TEMPORAL)
        run = self._input
        asked = WorktreeInput(run.checkout, run.loops_dir, request.branch, request.label)
        try:
            attached: WorktreeOutput = await self._host_activity(
                "ll-loop.attach_worktree", asked, WorktreeOutput, core
            )
        except ActivityError as exc:
            failure = self._activity_failure(exc)
            return ChildLoadFailed(f"worktree of branch '{request.branch}': {failure}")
        if attached.path is None:
            return ChildLoadFailed(attached.error or f"no worktree of '{request.branch}'")
        return WorktreeAttached(Path(attached.path), Path(attached.origin or run.checkout))

    async def _add_branch_worktree(
        self, core: RunCore, request: AddBranchWorktree
    ) -> WorktreeAttached | ChildLoadFailed:
        """A `parallel:` item's worktree on its branch, on the checkout's host."""
        run = self._input
        asked = WorktreeInput(
            run.checkout, run.loops_dir, request.branch, request.label, fresh=request.fresh
        )
        try:
            attached: WorktreeOutput = await self._host_activity(
                "ll-loop.add_branch_worktree", asked, WorktreeOutput, core
            )
        except ActivityError as exc:
            return ChildLoadFailed(self._activity_failure(exc))
        if attached.path is None:
            return ChildLoadFailed(attached.error or f"no worktree of '{request.branch}'")
        return WorktreeAttached(Path(attached.path), Path(attached.origin or run.checkout))

    async def _detach_worktree(self, core: RunCore, request: DetachWorktree) -> str | None:
        """Remove a sub-loop's worktree on the checkout's host; None, or why not."""
        run = self._input
        asked = WorktreeInput(run.checkout, run.loops_dir, path=str(request.path))
        try:
            failure: str | None = await self._host_activity(
                "ll-loop.detach_worktree", asked, str, core
            )
        except ActivityError as exc:
            return self._activity_failure(exc)
        return failure

    def _top_run(self) -> RunInput:
        """The top-level run's input, for its sub-loops' child workflows (without where
        this workflow run started from: a child starts from its own place)."""
        return dataclasses.replace(self._input, carry=None, resume=None)

    def _logs_keep(self) -> int:
        keep = self._fsm.logs_keep
        return DEFAULT_LOGS_KEEP if keep is None else keep

    async def _hand_off(self, core: RunCore, request: HandOff) -> HandoffResult:
        behavior = HandoffBehavior(self._fsm.on_handoff)
        if behavior is not HandoffBehavior.SPAWN:
            return HandoffResult(behavior, request.continuation)
        run = self._input
        spawn = SpawnInput(
            loop_name=request.loop_name,
            continuation=request.continuation,
            checkout=run.checkout,
            running_dir=str(Path(run.loops_dir) / RUNNING_DIR),
        )
        try:
            spawned: SpawnOutput = await self._host_activity(
                "ll-loop.spawn_handoff", spawn, SpawnOutput, core
            )
        except ActivityError as exc:
            return HandoffResult(behavior, request.continuation, error=self._activity_failure(exc))
        return HandoffResult(behavior, request.continuation, error=spawned.error)

    async def _host_activity(self, name: str, arg: Any, result_type: type, core: RunCore) -> Any:
        """A short activity on the checkout's host. A `stop` while it runs lets it finish
        (judging or committing half-way helps no one); the run stops after the state."""
        run = self._input
        options: dict[str, Any] = {
            "task_queue": run.task_queue,
            "result_type": result_type,
            "schedule_to_start_timeout": timedelta(seconds=run.schedule_to_start_seconds),
            "start_to_close_timeout": _SHORT_ACTIVITY,
            "retry_policy": _RETRIES,
            "activity_id": self._activity_id(core, name.removeprefix("ll-loop.")),
        }
        handle = workflow.start_activity(name, arg, **options)
        try:
            return await asyncio.shield(handle)
        except asyncio.CancelledError:
            if self._stop_asked():
                return await handle  # it finishes; the core stops before the next state
            handle.cancel()  # as before `STOP_KEPT`: the stop cancels it
        try:
            return await handle
        except asyncio.CancelledError:
            core.request_shutdown()
            return await workflow.execute_activity(name, arg, **options)

    def _activity_id(self, core: RunCore, kind: str) -> str:
        """`<n>:<state>:<kind>`: a replay whose routing took another state at the same
        place then fails (Temporal compares activity ids), instead of passing unnoticed."""
        self._activities += 1
        return f"{self._activities}:{core.cursor.current_state}:{kind}"

    async def _sleep(self, core: RunCore, seconds: float) -> None:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            core.request_shutdown()

    # -- ending, pausing, resuming, continuing as new -------------------------------------

    def _finished(self, finish: Finish) -> RunOutcome:
        result, record = finish.result, self._record
        assert record is not None and self._core is not None
        terminating = HandoffBehavior(self._fsm.on_handoff) is HandoffBehavior.TERMINATE
        record.ended(result, handoff_terminates=terminating)
        self._elapsed_ms = result.duration_ms
        cursor = self._core.cursor
        state = record.final_state(result, cursor, self._core.guards)
        carry = record.carry(cursor, self._core.guards, self._event_count())
        carry.cursor["elapsed_ms"] = result.duration_ms
        return RunOutcome(
            state=record.with_retries(state.to_dict()), result=result.to_dict(), carry=carry
        )

    def _pauses(self, finish: Finish) -> bool:
        """A handoff that is not terminated waits for `resume` (pause, or spawn: the new
        session resumes it); a stopped run does not."""
        assert self._record is not None
        return self._record.status == "awaiting_continuation" and not self._stopping()

    def _stopping(self) -> bool:
        return self._core is not None and self._core.shutdown_requested

    async def _wait_for_resume(self) -> ResumeSignal | None:
        try:
            await workflow.wait_condition(lambda: self._resume is not None)
        except asyncio.CancelledError:
            return None
        return self._resume

    def _resumed(self, cursor: RunCursor, guards: RunGuards, signal: ResumeSignal) -> RunCursor:
        """Go on from a paused or ended run, as a local `resume` does (`store.run_record`)."""
        record = self._record
        assert record is not None
        record.take_resume(signal)
        now = workflow.now()
        resumed = record.resume(
            cursor,
            now_ms=int(now.timestamp() * 1000),
            elapsed_ms=self._elapsed_ms,
            now=now.isoformat(),
            prompt=signal.prompt,
        )
        if resumed.cut_off:
            guards.visits.forget_one(cursor.current_state)  # it is entered again
        self._keep_event(resumed.event)
        return resumed.cursor

    def _rollover_due(self) -> bool:
        """Time to continue as new: the core then stops before its next state."""
        every = self._input.continue_as_new_every
        due = (every > 0 and self._states_here >= every) or (
            self._states_here > 0 and workflow.info().is_continue_as_new_suggested()
        )
        self._rolling_over = self._rolling_over or due
        return self._rolling_over

    def _continued_input(self) -> RunInput:
        record, core = self._record, self._core
        assert record is not None and core is not None
        record.status = "running"
        carry = record.carry(core.cursor, core.guards, self._event_count())
        carry.cursor["elapsed_ms"] = core.elapsed_ms()
        carry.recent_events = self._recent_events()
        fsm = self._fsm
        loop = dict(
            self._input.loop,
            max_continuations=fsm.max_continuations,
            max_cost_usd=fsm.max_cost_usd,
            notify=fsm.notify,
        )
        return dataclasses.replace(
            self._input,
            loop=loop,
            carry=carry,
            resume=None,
            budget_override=record.budget_override,
            notify_override=record.notify_override,
        )

    async def _release_scope(self) -> None:
        """The run ended or paused: its `scope` is free for others (`scope_registry`), as a
        local run's lock is dropped then; a resume claims it again. Runs started before
        scopes were kept on Temporal have no registry in their input, so their histories
        replay without this signal."""
        registry = self._input.scope_registry
        if not registry or not self._fsm.scope:
            return
        holder = workflow.info().workflow_id
        try:
            await workflow.get_external_workflow_handle(registry).signal("release", holder)
        except (asyncio.CancelledError, TemporalError) as exc:
            # No registry to tell (it was terminated): it holds nothing then. A claim left
            # behind is released by the next client whose claim it is in the way of.
            workflow.logger.warning("the scope of %s was not released: %s", holder, exc)

    # -- telling a person (`notify`) -----------------------------------------------------

    def _notify(
        self, event: dict[str, Any] | None = None, state: dict[str, Any] | None = None
    ) -> None:
        """Tell the notify command on the host, when the loop has one (and the run reached
        this code after the upgrade that brought it: `NOTIFY`). `event`: a usage-limit
        wait's, or a `host_switch`; without it, the end or pause that `state` describes.
        The calls go out one after the other, in order, each after the last one's command
        ended: each finds `LL_STATE_FILE` as it was when it was told."""
        command = self._fsm.notify
        if not command or not workflow.patched(NOTIFY):
            return
        run = self._input
        told = NotifyInput(command, self._fsm.name, run.checkout, run.loops_dir, event, state)
        self._to_tell.append(told)
        if self._telling is None:
            self._telling = asyncio.create_task(self._tell_in_order())

    async def _tell_in_order(self) -> None:
        run = self._input
        while self._to_tell:
            told = self._to_tell.pop(0)
            self._activities += 1
            try:
                await workflow.execute_activity(
                    "ll-loop.notify",
                    told,
                    task_queue=run.task_queue,
                    activity_id=f"{self._activities}:notify",
                    schedule_to_start_timeout=timedelta(seconds=run.schedule_to_start_seconds),
                    start_to_close_timeout=_NOTIFY_TIMEOUT,
                    retry_policy=_ONCE,
                )
            except (ActivityError, asyncio.CancelledError) as exc:
                workflow.logger.warning("the notify command was not called: %s", exc)
        self._telling = None

    async def _notify_end(self, outcome: RunOutcome) -> None:
        """Tell how the run ended or paused (not a continue-as-new: the run goes on)."""
        self._notify(state=outcome.state)
        await self._notified()

    async def _notified(self) -> None:
        """Wait until every notification told so far has gone out."""
        with contextlib.suppress(asyncio.CancelledError):  # stopped meanwhile: they go on
            await workflow.wait_condition(lambda: self._telling is None)

    # -- events -------------------------------------------------------------------------

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == events.LOOP_COMPLETE and self._rolling_over:
            self._held_completion = event  # the run goes on in the next workflow run
            return
        if kind == events.LOOP_START and self._quiet_start:
            self._quiet_start = False
            return
        if kind == events.STATE_ENTER:
            self._states_here += 1
        assert self._record is not None
        self._record.note(event)
        if self._core is not None:
            self._elapsed_ms = self._core.elapsed_ms()
        self._keep_event(event)
        if kind in NOTIFIED_EVENTS or self._host_switch_told(kind):
            self._notify(event=event, state=self.status())  # the state as it stands now

    @staticmethod
    def _host_switch_told(kind: object) -> bool:
        """Issue 24: a `host_switch` is told too (histories before it never had one)."""
        return kind == HOST_SWITCH and workflow.patched(HOST_SWITCH_NOTIFY)

    def _keep_held_completion(self) -> None:
        """A run stopped as it was to continue as new ends here: its completion counts."""
        held, self._held_completion = self._held_completion, None
        if held is not None:
            assert self._record is not None
            self._record.note(held)
            self._keep_event(held)

    def _keep_event(self, event: dict[str, Any]) -> None:
        self._events.append(event)
        if len(self._events) > EVENTS_KEPT:
            drop = len(self._events) - EVENTS_KEPT
            del self._events[:drop]
            self._first_event += drop

    def _recent_events(self) -> list[dict[str, Any]]:
        """The newest events whose JSON fits in `CARRIED_EVENT_BYTES`."""
        size, count = 0, 0
        for event in reversed(self._events):
            size += len(json.dumps(event, default=str))
            if size > CARRIED_EVENT_BYTES:
                break
            count += 1
        return self._events[len(self._events) - count :]

    def _event_count(self) -> int:
        return self._first_event + len(self._events)


def _ctx_dict(request: EvaluateWithIO) -> dict[str, Any]:
    ctx = dataclasses.asdict(request.ctx)
    ctx["env"] = dict(request.ctx.env) if request.ctx.env is not None else None
    return ctx


def _cancelled_action() -> ActionResult:
    """An action a stop cut off (or kept from starting): it runs again on resume."""
    return ActionResult(
        output="",
        stderr=CANCELLED_MESSAGE,
        exit_code=CANCELLED_EXIT_CODE,
        duration_ms=0,
        error=CANCELLED_MESSAGE,
        cancelled=True,
    )


def _failed_action(message: str) -> ActionResult:
    return ActionResult(output="", stderr=message, exit_code=1, duration_ms=0, error=message)
