"""The activities: the I/O of a run, done by the worker on the host that has the checkout.

`run_action` runs one action with the local runner (`DefaultActionRunner`, cwd = the
checkout): output streams into the action's log on the host, lines carrying a signal
marker are picked out as they stream, and the result that goes back to the server holds
only bounded tails (`OUTPUT_TAIL_BYTES`), far below Temporal's 2 MB payload limit. While
the action runs the activity heartbeats its process group; a cancelled activity (the
workflow was stopped) kills that group, and a retried one (its worker died) first stops
the group the dead attempt left running on this host, so the action never runs twice at
once. `judge`, `checkpoint` and `spawn_handoff` are the other requests that need the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from temporalio import activity

from little_loops.fsm.engine.evaluation_step import judge as judge_step
from little_loops.fsm.engine.step_result import Step
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.process.background_groups import wait_for_group_end
from little_loops.fsm.process.checkpoint import CheckpointResult, GitCheckpointer
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.process.runner import KILL_GRACE_SECONDS, DefaultActionRunner
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import SignalDetector
from little_loops.fsm.temporal.payloads import (
    ActionInput,
    ActionOutput,
    CheckpointInput,
    JudgeInput,
    SpawnInput,
    SpawnOutput,
)

__all__ = [
    "ACTIVITIES",
    "HEARTBEAT_EVERY_SECONDS",
    "OUTPUT_TAIL_BYTES",
    "checkpoint",
    "judge",
    "run_action",
    "spawn_handoff",
]

OUTPUT_TAIL_BYTES = 64 * 1024
"""Bytes of stdout (and of stderr) an action's result carries to the server."""

HEARTBEAT_EVERY_SECONDS = 1.0
"""How often a running action heartbeats (the worker throttles what reaches the server)."""

MAX_SIGNAL_LINES = 32
"""Marker lines sent back per action: the first of each kind is all the core acts on."""


@activity.defn(name="ll-loop.run_action")
async def run_action(request: ActionInput) -> ActionOutput:
    """Run one action; see the module docstring."""
    _stop_left_over(activity.info().heartbeat_details)
    runner = DefaultActionRunner(cwd=request.checkout, output_cap=OUTPUT_TAIL_BYTES)
    groups: list[ActionGroup] = []
    runner.on_group_running = groups.append
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
        raise
    result = await running
    runner.stop_background()  # what the action left behind ends with it here
    if result.log_path is not None and request.log_path is not None:
        result.log_path = request.log_path  # as the loop names it (relative, as locally)
    return ActionOutput(result, marker_lines.lines)


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


def _group_details(groups: list[ActionGroup]) -> dict[str, Any] | None:
    if not groups:
        return None
    return {"host": socket.gethostname(), **groups[-1].to_dict()}


def _stop_left_over(details: Sequence[Any]) -> None:
    """A retry after a dead worker: stop the action group the last attempt left running
    here (when it was on this host) before the action starts again."""
    if not details or not isinstance(details[-1], dict):
        return
    recorded = details[-1]
    if recorded.get("host") != socket.gethostname():
        return  # another host: its processes died with it or are not ours to see
    group = ActionGroup.from_dict(recorded)
    if not group.alive():
        return
    activity.logger.warning("stopping the action left running by a dead worker: %s", group)
    _signal_group(group.pgid, signal.SIGTERM)
    if not wait_for_group_end(group.pgid, KILL_GRACE_SECONDS):
        _signal_group(group.pgid, signal.SIGKILL)
        wait_for_group_end(group.pgid, KILL_GRACE_SECONDS)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


@activity.defn(name="ll-loop.judge")
async def judge(request: JudgeInput) -> list[Any]:
    """Judge a state with host I/O (the LLM judge, a file, a truncated output's log):
    `[verdict, details, spending]` (`evaluation_step.Judgement` as a list)."""
    fsm = FSMLoop.from_dict(request.loop)
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


ACTIVITIES: list[Callable[..., Any]] = [run_action, judge, checkpoint, spawn_handoff]
