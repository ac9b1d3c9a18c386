"""The activities: the I/O of a run, done by the worker on the host that has the checkout.

`run_action` runs one action with the local runner (`DefaultActionRunner`, cwd = the
checkout): output streams into the action's log on the host, lines carrying a signal
marker are picked out as they stream, and the result that goes back to the server holds
only bounded tails (`OUTPUT_TAIL_BYTES`), far below Temporal's 2 MB payload limit. While
the action runs the activity heartbeats its process group; a cancelled activity (the
workflow was stopped) kills that group, and a retried one (its worker died) first stops
the group the dead attempt left running on this host, so the action never runs twice at
once; afterwards it prunes the run's logs to the last `logs_keep` actions, as locally.
A retried action is never silent: its activity tells the workflow why it runs again
(`action_retry`) and says so in the worker's log before the action starts.
`judge`, `checkpoint`, `spawn_handoff` and `inspect_workspace` (the stall guard's
work-tree fingerprint) are the other requests that need the host; `notify` calls the
loop's notify command here, where the person's machine and credentials are.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import socket
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.api.enums.v1 import TimeoutType

from little_loops.fsm.engine.child_loader import load_child as load_child_file
from little_loops.fsm.engine.evaluation_step import judge as judge_step
from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.engine.sub_loop_requests import ChildLoadFailed
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.model.head_loop import loop_from_dict
from little_loops.fsm.process.background_groups import wait_for_group_end
from little_loops.fsm.process.checkpoint import CheckpointResult, GitCheckpointer
from little_loops.fsm.process.output_files import stderr_log_path
from little_loops.fsm.process.path_fingerprint import paths_fingerprint
from little_loops.fsm.process.process_groups import ActionGroup, read_stat
from little_loops.fsm.process.runner import KILL_GRACE_SECONDS, DefaultActionRunner
from little_loops.fsm.process.workspace import WorkspaceWatcher
from little_loops.fsm.signal_detector import SignalDetector
from little_loops.fsm.store.log_retention import LogRetention
from little_loops.fsm.store.notifier import RunNotifier
from little_loops.fsm.store.state_files import (
    RUNNING_DIR,
    LoopState,
    write_file_atomically,
)
from little_loops.fsm.temporal import kept_groups
from little_loops.fsm.temporal.action_retry import (
    ActionRetry,
    LastAttempt,
    retry_reason,
    state_of_activity,
)
from little_loops.fsm.temporal.payloads import (
    ActionInput,
    ActionOutput,
    CheckpointInput,
    ChildInput,
    ChildOutput,
    JudgeInput,
    NotifyInput,
    PathsInput,
    SpawnInput,
    SpawnOutput,
    WorkspaceInput,
)

__all__ = [
    "ACTIVITIES",
    "HEARTBEAT_EVERY_SECONDS",
    "OUTPUT_TAIL_BYTES",
    "TEMPORAL_STATE_SUFFIX",
    "checkpoint",
    "fingerprint_paths",
    "inspect_workspace",
    "judge",
    "load_child",
    "notify",
    "run_action",
    "spawn_handoff",
]

OUTPUT_TAIL_BYTES = 64 * 1024
"""Bytes of stdout (and of stderr) an action's result carries to the server."""

HEARTBEAT_EVERY_SECONDS = 1.0
"""How often a running action heartbeats (the worker throttles what reaches the server)."""

MAX_SIGNAL_LINES = 32
"""Marker lines sent back per action: the first of each kind is all the core acts on."""

TEMPORAL_STATE_SUFFIX = ".temporal-state.json"
"""`<loop>.temporal-state.json` in the run folder: the state the notify command's
`LL_STATE_FILE` names for a Temporal run (its own file: the local engine's state file of
the same loop is left alone)."""

RETRY_RPC_TIMEOUT = timedelta(seconds=5)
"""How long a retried action waits to learn and tell why it runs again (it runs anyway)."""

NOTIFY_WAIT_SECONDS = 75.0
"""How long `notify` waits for the command's supervisor (which bounds the command to
`NOTIFY_TIMEOUT_SECONDS`), so the worker keeps no zombie."""


@activity.defn(name="ll-loop.run_action")
async def run_action(request: ActionInput) -> ActionOutput:
    """Run one action; see the module docstring."""
    if activity.info().attempt > 1:
        await _tell_retry(activity.info())
    _stop_left_over(activity.info().heartbeat_details)
    cwd = request.cwd or request.checkout  # a `worktree:` sub-loop's action: its worktree
    runner = DefaultActionRunner(cwd=cwd, output_cap=OUTPUT_TAIL_BYTES)
    groups: list[ActionGroup] = []
    kept = kept_groups.current()
    runner.on_group_running = _noting(groups, kept)
    if kept is not None:
        runner.group_notice_seconds = 0.0  # in the worker's ledger before it can die
    marker_lines = _MarkerLines(SignalDetector())
    log_path = _in_checkout(request.checkout, request.log_path)
    running = asyncio.ensure_future(
        asyncio.to_thread(
            runner.run,
            request.action,
            request.timeout,
            request.slash,
            on_text=marker_lines.feed,
            log_path=log_path,
            resume_session=request.resume_session,
            claude_flags=tuple(request.claude_flags),
            idle_timeout=request.idle_timeout,
            host=request.host,
            model=request.model,
        )
    )
    try:
        while not running.done():
            activity.heartbeat(_group_details(groups))
            await asyncio.wait({running}, timeout=HEARTBEAT_EVERY_SECONDS)
    except asyncio.CancelledError:
        runner.cancel()  # kills the action's process group
        with contextlib.suppress(Exception):
            await running
        runner.stop_background()
        if kept is not None:  # the run was stopped: what it kept ends too
            kept.keep(activity.info().workflow_id or "", runner, groups)
            await asyncio.to_thread(kept.release, activity.info().workflow_id or "")
        raise
    except BaseException:
        runner.stop_background()
        if kept is not None:
            kept.keep(activity.info().workflow_id or "", runner, groups)
        raise
    result = await running
    if kept is None:
        runner.stop_background()  # no worker to keep it: it ends with the action
    else:  # kept until the run ends or pauses, as locally (`kept_groups`)
        kept.keep(activity.info().workflow_id or "", runner, groups)
    if log_path is not None and request.logs_keep > 0:
        _prune_logs(log_path, request.logs_keep, request.logs_in_use, result.log_path)
    if result.log_path is not None and request.log_path is not None:
        result.log_path = request.log_path  # as the loop names it (relative, as locally)
    return ActionOutput(result, marker_lines.lines)


def _noting(
    groups: list[ActionGroup], kept: kept_groups.KeptGroups | None
) -> Callable[[ActionGroup], None]:
    """The runner's `on_group_running`: remember the group for the heartbeat, and in the
    worker's ledger (its watchdog stops it should the worker die)."""

    def note(group: ActionGroup) -> None:
        groups.append(group)
        if kept is not None:
            kept.running(group)

    return note


def _prune_logs(log_path: Path, keep: int, in_use: list[str], written: str | None) -> None:
    """Keep the logs of the last `keep` actions in the run's log folder, sparing this
    action's and those in use (`log_retention`, as the local engine does after each
    action). The folder is read afresh each time: a worker may have run the last actions
    of this run or not."""
    if written is None and not stderr_log_path(log_path).exists():
        return  # a silent action left no log
    LogRetention(log_path.parent, keep).add(log_path, in_use)


def _in_checkout(checkout: str, path: str | None) -> Path | None:
    """`path` (relative to the checkout, as the local engine names it) on this host."""
    return Path(checkout) / path if path is not None else None


class _MarkerLines:
    """The lines of a stream that carry a signal marker (at most `MAX_SIGNAL_LINES`)."""

    def __init__(self, detector: SignalDetector) -> None:
        self.markers = [p.marker for p in detector.patterns if p.marker is not None]
        self.lines: list[str] = []

    def feed(self, block: str) -> None:
        if len(self.lines) >= MAX_SIGNAL_LINES or not any(m in block for m in self.markers):
            return
        for line in block.removesuffix("\n").split("\n"):
            if any(marker in line for marker in self.markers):
                self.lines.append(line)
        del self.lines[MAX_SIGNAL_LINES:]


def _group_details(groups: list[ActionGroup]) -> dict[str, Any]:
    """What a retry needs of this attempt: this worker (host and pid) and, once the
    action runs, its process group."""
    worker = {"host": socket.gethostname(), "worker_pid": os.getpid()}
    return {**worker, **groups[-1].to_dict()} if groups else worker


def _stop_left_over(details: Sequence[Any]) -> None:
    """A retry after a dead worker: stop the action group the last attempt left running
    here (when it was on this host) before the action starts again."""
    if not details or not isinstance(details[-1], dict):
        return
    recorded = details[-1]
    if "pgid" not in recorded or recorded.get("host") != socket.gethostname():
        return  # another host: its processes died with it or are not ours to see
    group = ActionGroup.from_dict(recorded)
    if not group.alive():
        return
    activity.logger.warning("stopping the action left running by a dead worker: %s", group)
    _signal_group(group.pgid, signal.SIGTERM)
    if not wait_for_group_end(group.pgid, KILL_GRACE_SECONDS):
        _signal_group(group.pgid, signal.SIGKILL)
        wait_for_group_end(group.pgid, KILL_GRACE_SECONDS)


async def _tell_retry(info: activity.Info) -> None:
    """This attempt runs the action again: say why in the worker's log and tell the
    workflow (`action_retry`). Best effort: the action runs whatever happens here."""
    last = await _last_attempt(info)
    retry = ActionRetry(
        state_of_activity(info.activity_id), info.attempt, retry_reason(last, socket.gethostname())
    )
    activity.logger.warning("%s", retry.said())
    try:
        handle = activity.client().get_workflow_handle(
            info.workflow_id or "", run_id=info.workflow_run_id
        )
        await handle.signal("action_retry", retry, rpc_timeout=RETRY_RPC_TIMEOUT)
    except Exception as exc:  # telling must never keep the action from running
        activity.logger.warning("the workflow was not told of the retry: %s", exc)


async def _last_attempt(info: activity.Info) -> LastAttempt:
    """The previous attempt: its worker from its last heartbeat, and how Temporal says
    it ended (from the workflow's pending activity, when the server answers)."""
    details = info.heartbeat_details
    recorded = details[-1] if details and isinstance(details[-1], dict) else {}
    host, pid = recorded.get("host"), recorded.get("worker_pid")
    pid = pid if isinstance(pid, int) else None
    alive = pid is not None and host == socket.gethostname() and _process_runs(pid)
    failure, timeout = await _last_failure(info)
    return LastAttempt(host if isinstance(host, str) else None, pid, alive, failure, timeout)


async def _last_failure(info: activity.Info) -> tuple[str | None, str | None]:
    """(the failure text when the last attempt raised, the timeout that ended it)."""
    try:
        handle = activity.client().get_workflow_handle(
            info.workflow_id or "", run_id=info.workflow_run_id
        )
        described = await handle.describe(rpc_timeout=RETRY_RPC_TIMEOUT)
    except Exception:  # the heartbeat's facts are enough then
        return None, None
    for pending in described.raw_description.pending_activities:
        if pending.activity_id == info.activity_id and pending.HasField("last_failure"):
            failure = pending.last_failure
            if failure.HasField("timeout_failure_info"):
                kind = TimeoutType.Name(failure.timeout_failure_info.timeout_type)
                return None, kind.removeprefix("TIMEOUT_TYPE_").lower()
            return failure.message or None, None
    return None, None


def _process_runs(pid: int) -> bool:
    """`pid` runs on this host (a zombie no longer does)."""
    stat = read_stat(pid)
    return stat is not None and stat.state != "Z"


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


@activity.defn(name="ll-loop.judge")
async def judge(request: JudgeInput) -> list[Any]:
    """Judge a state with host I/O (the LLM judge, a file, a truncated output's log):
    `[verdict, details, spending]` (`evaluation_step.Judgement` as a list)."""
    fsm = loop_from_dict(request.loop, request.dialect)
    state = fsm.states[request.state]
    ctx = InterpolationContext(**request.ctx)
    action = request.action
    if action is not None and action.log_path is not None:
        # The log is named relative to the checkout, as locally; read it there.
        log_path = _in_checkout(request.checkout, action.log_path)
        action = dataclasses.replace(action, log_path=str(log_path))
    step = Step(action=action, slash=request.slash)
    # Relative paths (`return_metadata`'s file) are read from the worker's working
    # directory: `ll-loop worker` runs in its checkout.
    judged = await asyncio.to_thread(judge_step, state, ctx, step, fsm.llm)
    return [judged.verdict, judged.details, judged.spending]


@activity.defn(name="ll-loop.checkpoint")
async def checkpoint(request: CheckpointInput) -> CheckpointResult:
    checkpointer = GitCheckpointer(
        request.loop_name,
        workdir=Path(request.checkout),
        loops_dir=_in_checkout(request.checkout, request.loops_dir),
    )
    return await asyncio.to_thread(
        checkpointer.checkpoint, request.state, request.iteration, reason=request.reason
    )


@activity.defn(name="ll-loop.spawn_handoff")
async def spawn_handoff(request: SpawnInput) -> SpawnOutput:
    """Start the continuation claude session here; it resumes the workflow by signal."""
    handler = HandoffHandler(
        HandoffBehavior.SPAWN, log_dir=_in_checkout(request.checkout, request.running_dir)
    )
    handled = await asyncio.to_thread(handler.handle, request.loop_name, request.continuation)
    process = handled.spawned_process
    return SpawnOutput(pid=process.pid if process is not None else None, error=handled.error)


@activity.defn(name="ll-loop.inspect_workspace")
async def inspect_workspace(request: WorkspaceInput) -> str | None:
    """The stall guard's fingerprint of the checkout's files (None: nothing watched)."""
    watcher = WorkspaceWatcher(
        Path(request.checkout),
        loops_dir=Path(request.loops_dir),
        progress_paths=request.progress_paths,
    )
    return await asyncio.to_thread(watcher.fingerprint)


@activity.defn(name="ll-loop.fingerprint_paths")
async def fingerprint_paths(request: PathsInput) -> str:
    """HEAD's `circuit.repeated_failure.progress_paths` fingerprint, in the checkout."""
    checkout = Path(request.checkout)
    return await asyncio.to_thread(paths_fingerprint, request.paths, request.exclude, checkout)


@activity.defn(name="ll-loop.load_child")
async def load_child(request: ChildInput) -> ChildOutput:
    """Find and load a sub-loop's file in the checkout (§4.1), as a local run does."""
    checkout = Path(request.checkout)
    loops_dir = _in_checkout(request.checkout, request.loops_dir)
    assert loops_dir is not None
    keys = tuple(request.context_keys)
    loaded = await asyncio.to_thread(
        load_child_file, request.name, loops_dir, context_keys=keys, cwd=checkout
    )
    if isinstance(loaded, ChildLoadFailed):
        return ChildOutput(error=loaded.message)
    return ChildOutput(loop=loaded.loop.to_dict(), dialect=loaded.loop.dialect, path=loaded.path)


@activity.defn(name="ll-loop.notify")
async def notify(request: NotifyInput) -> None:
    """Call the notify command as the local engine does (`store.notifier`): for a
    usage-limit wait's event, or for the end or pause of the run; the run's state as it
    stands is first written where `LL_STATE_FILE` points. Waits for the command
    (bounded), never raises for it: a failing notify command never fails a run."""
    running = _in_checkout(request.checkout, str(Path(request.loops_dir) / RUNNING_DIR))
    assert running is not None
    running.mkdir(parents=True, exist_ok=True)
    state_file = running / f"{request.loop_name}{TEMPORAL_STATE_SUFFIX}"
    notifier = RunNotifier(
        command=request.command,
        loop_name=request.loop_name,
        state_file=state_file,
        log_path=running / f"{request.loop_name}.notify.log",
        cwd=Path(request.checkout),  # as a local run's command runs in its checkout
    )
    if request.state is not None:
        text = json.dumps(request.state, indent=2) + "\n"
        await asyncio.to_thread(write_file_atomically, state_file, text)
    if request.event is not None:
        notifier.on_event(request.event)
    elif request.state is not None:
        notifier.on_end(LoopState.from_dict(request.state))
    await asyncio.to_thread(notifier.wait, NOTIFY_WAIT_SECONDS)


ACTIVITIES: list[Callable[..., Any]] = [
    run_action,
    judge,
    checkpoint,
    spawn_handoff,
    inspect_workspace,
    fingerprint_paths,
    load_child,
    notify,
]
