"""The client side of the Temporal engine: start, follow, resume, stop and ask a run.

`LoopRuns` wraps a Temporal client for the loops of one checkout: the workflow id (the
loop lock) and the task queue come from `names`. `follow` feeds a run's events to a
callback as they happen (the same events a local run gives its display) until the run
ends or pauses, and returns how it did.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import temporalio.converter
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from little_loops.fsm.errors import LoopError
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.locking import LoopBusyError
from little_loops.fsm.temporal.codec import BadKeyError, codec_from_env
from little_loops.fsm.temporal.names import (
    ServerSettings,
    host_name,
    task_queue_for,
    workflow_id_for,
)
from little_loops.fsm.temporal.payloads import ResumeSignal, RunInput, RunOutcome
from little_loops.fsm.temporal.workflow import LoopWorkflow

__all__ = [
    "FOLLOW_POLL_SECONDS",
    "LoopRunningError",
    "LoopRuns",
    "TemporalEngineError",
    "connect",
    "referenced_env",
]

FOLLOW_POLL_SECONDS = 0.2
QUERY_RETRIES = 20
_ENV_REFERENCE = re.compile(r"\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}")
_OPEN = WorkflowExecutionStatus.RUNNING


class TemporalEngineError(LoopError):
    """The Temporal engine cannot do what was asked; the message says why in one line."""


class LoopRunningError(LoopBusyError):
    """A run of the loop is open on the server already (the loop lock is taken: exit 6)."""


async def connect(settings: ServerSettings, environ: Mapping[str, str] | None = None) -> Client:
    """A client of the server; with `LL_TEMPORAL_KEY` set, every payload it (and a worker
    built on it) sends is encrypted (`codec`)."""
    try:
        codec = codec_from_env(os.environ if environ is None else environ)
    except BadKeyError as exc:
        raise TemporalEngineError(str(exc)) from None
    converter = temporalio.converter.default()
    if codec is not None:
        converter = dataclasses.replace(converter, payload_codec=codec)
    try:
        return await Client.connect(
            settings.address, namespace=settings.namespace, data_converter=converter
        )
    except RuntimeError as exc:
        raise TemporalEngineError(
            f"cannot reach the Temporal server at {settings.address} "
            f"(namespace {settings.namespace}): {exc}"
        ) from None


def referenced_env(loop: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The values of the `${env.X}` the loop refers to: only these go to the server."""
    names = set(_ENV_REFERENCE.findall(repr(loop)))
    return {name: environ[name] for name in sorted(names) if name in environ}


@dataclass
class LoopRuns:
    """The runs of one checkout's loops on one Temporal server."""

    client: Client
    checkout: Path
    loops_dir: Path
    task_queue: str = ""

    def __post_init__(self) -> None:
        self.task_queue = self.task_queue or task_queue_for(self.checkout)

    def workflow_id(self, loop_name: str) -> str:
        return workflow_id_for(loop_name, self.checkout)

    def handle(self, loop_name: str) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle_for(LoopWorkflow.run, self.workflow_id(loop_name))

    def run_input(self, fsm: FSMLoop, environ: Mapping[str, str], **options: Any) -> RunInput:
        loop = fsm.to_dict()
        return RunInput(
            loop=loop,
            checkout=str(self.checkout.resolve()),
            loops_dir=_relative_to(self.loops_dir, self.checkout),
            task_queue=self.task_queue,
            host=host_name(),
            env=referenced_env(loop, environ),
            **options,
        )

    async def start(self, run: RunInput) -> WorkflowHandle[Any, Any]:
        """Start the workflow; `LoopRunningError` when the loop already runs here."""
        name = str(run.loop["name"])
        try:
            return await self.client.start_workflow(
                LoopWorkflow.run,
                run,
                id=self.workflow_id(name),
                task_queue=self.task_queue,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
            )
        except WorkflowAlreadyStartedError:
            raise LoopRunningError(
                f"loop '{name}' is already running on Temporal (workflow {self.workflow_id(name)})"
            ) from None

    async def describe(self, loop_name: str) -> WorkflowExecutionDescription | None:
        """The latest workflow run of the loop here, or None when there never was one."""
        try:
            return await self.handle(loop_name).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return None
            raise

    async def is_open(self, loop_name: str) -> bool:
        described = await self.describe(loop_name)
        return described is not None and described.status == _OPEN

    async def status(self, loop_name: str) -> dict[str, Any] | None:
        """The state-file fields of the latest run (None: no run of this loop here)."""
        described = await self.describe(loop_name)
        if described is None:
            return None
        handle = self.handle(loop_name)
        if described.status == _OPEN:
            state: dict[str, Any] | None = await handle.query(LoopWorkflow.status)
            return state
        outcome = await self.closed_outcome(loop_name)
        return outcome.state if outcome is not None else None

    async def closed_outcome(self, loop_name: str) -> RunOutcome | None:
        """What the last, closed run returned (None: it failed or was terminated)."""
        try:
            outcome: RunOutcome = await self.handle(loop_name).result(follow_runs=False)
        except Exception:  # a failed, terminated or timed-out workflow left no outcome
            return None
        return outcome

    async def resume(self, loop_name: str, signal: ResumeSignal) -> None:
        await self.handle(loop_name).signal(LoopWorkflow.resume, signal)

    async def stop(self, loop_name: str) -> None:
        await self.handle(loop_name).cancel()

    async def follow(
        self,
        loop_name: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        since: int = 0,
        poll_seconds: float = FOLLOW_POLL_SECONDS,
    ) -> RunOutcome:
        """Feed the run's events from number `since` to `on_event` until it ends or
        pauses; return how it did."""
        handle = self.handle(loop_name)
        failures = 0
        while True:
            try:
                since = await self._deliver(handle, since, on_event)
                outcome = await self._outcome(handle)
            except RPCError:
                # A query that lands as the run continues as new (or as its worker
                # restarts) can fail: ask again, and give up only if it keeps failing.
                failures += 1
                if failures > QUERY_RETRIES:
                    raise
                await asyncio.sleep(poll_seconds)
                continue
            failures = 0
            if outcome is not None:
                await self._deliver(handle, since, on_event)
                return outcome
            await asyncio.sleep(poll_seconds)

    @staticmethod
    async def _deliver(
        handle: WorkflowHandle[Any, Any], since: int, on_event: Callable[[dict[str, Any]], None]
    ) -> int:
        page = await handle.query(LoopWorkflow.events, since)
        for event in page.events:
            on_event(event)
        return page.first + len(page.events)

    @staticmethod
    async def _outcome(handle: WorkflowHandle[Any, Any]) -> RunOutcome | None:
        """How the run ended or paused, or None while it runs.

        The workflow's `outcome` query answers for a closed run too. A run closed without
        one (failed, terminated) never will: that is an error. Not waiting on the result
        itself keeps a time-skipping test server's clock as it was.
        """
        outcome: RunOutcome | None = await handle.query(LoopWorkflow.outcome)
        if outcome is None:
            described = await handle.describe()
            if described.status not in (_OPEN, WorkflowExecutionStatus.CONTINUED_AS_NEW):
                name = described.status.name if described.status else "unknown"
                raise TemporalEngineError(
                    f"the workflow {handle.id} ended without an outcome ({name})"
                )
        return outcome


def _relative_to(path: Path, checkout: Path) -> str:
    """`path` relative to the checkout when inside it (log paths then read as locally)."""
    absolute, root = path.resolve(), checkout.resolve()
    return str(absolute.relative_to(root)) if absolute.is_relative_to(root) else str(absolute)
