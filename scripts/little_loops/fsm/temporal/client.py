"""The client side of the Temporal engine: start, follow, resume, stop and ask a run.

`LoopRuns` wraps a Temporal client for the loops of one checkout: the workflow id (the
loop lock) and the task queue come from `names`. `follow` feeds a run's events to a
callback as they happen (the same events a local run gives its display) until the run
ends or pauses, and returns how it did; it is done by `run_follow.RunFollower`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import temporalio.converter
from temporalio.client import (
    Client,
    WithStartWorkflowOperation,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from little_loops.fsm.errors import LoopError
from little_loops.fsm.model.run_choices import RunChoices
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.locking import LoopBusyError, normalise_scope, shown_path
from little_loops.fsm.temporal.approvals import APPROVAL_SIGNAL, ApprovalSignal
from little_loops.fsm.temporal.codec import BadKeyError, codec_from_env
from little_loops.fsm.temporal.names import (
    ServerSettings,
    host_name,
    scope_registry_id_for,
    task_queue_for,
    workflow_id_for,
)
from little_loops.fsm.temporal.payloads import (
    DEFAULT_CONTINUE_AS_NEW_EVERY,
    Carry,
    ResumeSignal,
    RunInput,
    RunOutcome,
)
from little_loops.fsm.temporal.presence import (
    NoWorkflowWorkerError,
    is_unanswered,
    wait_for_workflow_worker,
    workflow_worker_polls,
)
from little_loops.fsm.temporal.run_follow import FOLLOW_POLL_SECONDS, RunFollower
from little_loops.fsm.temporal.scope_registry import (
    RegistryInput,
    ScopeClaim,
    ScopeConflict,
    ScopeRegistry,
)
from little_loops.fsm.temporal.timeouts import Timeouts
from little_loops.fsm.temporal.workflow import LoopWorkflow

__all__ = [
    "FOLLOW_POLL_SECONDS",
    "LoopRunningError",
    "LoopRuns",
    "NoWorkflowWorkerError",
    "ScopeTakenError",
    "TemporalEngineError",
    "connect",
    "referenced_env",
]

QUEUE_POLL_SECONDS = 2.0
CLOSING_POLL_SECONDS = 0.2
"""How often a client waiting for an ending workflow to close asks the server."""
"""How often a run queued behind another's scope (`--queue`) asks the registry again."""
_ENV_REFERENCE = re.compile(r"\$\{env\.([A-Za-z_][A-Za-z0-9_]*)\}")
_OPEN = WorkflowExecutionStatus.RUNNING
_CONTINUED = WorkflowExecutionStatus.CONTINUED_AS_NEW


class TemporalEngineError(LoopError):
    """The Temporal engine cannot do what was asked; the message says why in one line."""


class LoopRunningError(LoopBusyError):
    """A run of the loop is open on the server already (the loop lock is taken: exit 6)."""


class ScopeTakenError(LoopBusyError):
    """A run on the server works on a path this loop's `scope` overlaps (exit 6), as
    `locking.ScopeBusyError` locally."""

    def __init__(self, loop_name: str, conflict: ScopeConflict) -> None:
        super().__init__(
            f"Loop {loop_name} shares scope '{shown_path(conflict.path)}' with running loop "
            f"{conflict.loop} (workflow {conflict.holder})"
        )
        self.conflict = conflict

    def user_lines(self) -> list[str]:
        return [str(self), "  to wait until it ends instead: add --queue"]


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
            f"(namespace {settings.namespace}): {connect_problem(str(exc))}"
        ) from None


_CONNECT_PROBLEMS = (
    ("Connection refused", "connection refused (is it running? set LL_TEMPORAL_ADDRESS)"),
    ("dns error", "no such host (set LL_TEMPORAL_ADDRESS)"),
    ("timed out", "no answer (is it running? set LL_TEMPORAL_ADDRESS)"),
)


def connect_problem(detail: str) -> str:
    """The client's connect error in a few words (it is a Rust transport error of several
    hundred characters); unknown ones are kept whole."""
    for marker, words in _CONNECT_PROBLEMS:
        if marker.lower() in detail.lower():
            return words
    return detail


def referenced_env(loop: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The values of the `${env.X}` the loop refers to: only these go to the server."""
    names = set(_ENV_REFERENCE.findall(repr(loop)))
    return {name: environ[name] for name in sorted(names) if name in environ}


@dataclass
class LoopRuns:
    """The runs of one checkout's loops on one Temporal server; `timeouts`: how long its
    queries wait for a worker, and the activity limits of the runs it starts."""

    client: Client
    checkout: Path
    loops_dir: Path
    task_queue: str = ""
    timeouts: Timeouts = field(default_factory=Timeouts)

    def __post_init__(self) -> None:
        self.task_queue = self.task_queue or task_queue_for(self.checkout)

    def workflow_id(self, loop_name: str) -> str:
        return workflow_id_for(loop_name, self.checkout)

    def handle(self, loop_name: str) -> WorkflowHandle[Any, Any]:
        return self.client.get_workflow_handle_for(LoopWorkflow.run, self.workflow_id(loop_name))

    def run_input(
        self,
        fsm: FSMLoop,
        environ: Mapping[str, str],
        *,
        context_overrides: Mapping[str, str] | None = None,
        carry: Carry | None = None,
        resume: ResumeSignal | None = None,
        continue_as_new_every: int = DEFAULT_CONTINUE_AS_NEW_EVERY,
        schedule_to_start_seconds: float | None = None,
        heartbeat_seconds: float | None = None,
        keep_logs: bool = True,
        budget_override: float | None = None,
        notify_override: str | None = None,
        choices: RunChoices | None = None,
    ) -> RunInput:
        """The workflow's input for a run of `fsm` (the options: `RunInput`'s fields; the
        activity timeouts default to this client's `timeouts`)."""
        loop = fsm.to_dict()
        timeouts = self.timeouts
        return RunInput(
            loop=loop,
            checkout=str(self.checkout.resolve()),
            loops_dir=_relative_to(self.loops_dir, self.checkout),
            task_queue=self.task_queue,
            host=host_name(),
            env=referenced_env(loop, environ),
            context_overrides=dict(context_overrides or {}),
            carry=carry,
            resume=resume,
            continue_as_new_every=continue_as_new_every,
            schedule_to_start_seconds=timeouts.schedule_to_start_seconds
            if schedule_to_start_seconds is None
            else schedule_to_start_seconds,
            heartbeat_seconds=timeouts.heartbeat_seconds
            if heartbeat_seconds is None
            else heartbeat_seconds,
            keep_logs=keep_logs,
            budget_override=budget_override,
            notify_override=notify_override,
            scope_registry=self.scope_registry_id() if fsm.scope else None,
            dialect=fsm.dialect,
            choices=choices if choices is not None else RunChoices(),
        )

    # -- scope (`scope_registry`) --------------------------------------------------------

    def scope_registry_id(self) -> str:
        return scope_registry_id_for(self.checkout)

    async def claim_scope(
        self,
        fsm: FSMLoop,
        *,
        queue: bool = False,
        on_wait: Callable[[str], None] | None = None,
        poll_seconds: float = QUEUE_POLL_SECONDS,
    ) -> None:
        """Claim the loop's `scope` for its run (nothing to do without one).

        A conflict raises `ScopeTakenError`, or with `queue` waits until the scope is
        free (`on_wait` told once, in one line). A holder that no longer runs (it was
        terminated before it could release) is released and the claim made again.
        """
        if not fsm.scope:
            return
        # The registry is a workflow: its claims are decided by a workflow worker.
        await wait_for_workflow_worker(
            self.client, self.task_queue, on_wait=on_wait or (lambda _: None)
        )
        claim = ScopeClaim(self.workflow_id(fsm.name), fsm.name, self._normalised(fsm.scope))
        announced = False
        while True:
            conflict = await self.claim(claim)
            if conflict is None:
                return
            if not await self._holds_on(conflict.holder):
                await self.release_scope(conflict.holder)
                continue
            if not queue:
                raise ScopeTakenError(fsm.name, conflict)
            if not announced and on_wait is not None:
                on_wait(
                    f"Loop {fsm.name} waits for running loop {conflict.loop} (workflow "
                    f"{conflict.holder}), which shares scope '{shown_path(conflict.path)}' "
                    "(Ctrl-C to give up)"
                )
                announced = True
            await asyncio.sleep(poll_seconds)

    async def release_scope(self, holder: str) -> None:
        """Free the scope the run `holder` (a loop's workflow id) claimed."""
        registry = self.client.get_workflow_handle_for(ScopeRegistry.run, self.scope_registry_id())
        with contextlib.suppress(RPCError):  # no registry: nothing is held
            await registry.signal(ScopeRegistry.release, holder)

    async def scope_claims(self) -> list[ScopeClaim]:
        """What the checkout's registry holds now (none when it never ran)."""
        registry = self.client.get_workflow_handle_for(ScopeRegistry.run, self.scope_registry_id())
        try:
            claims: list[ScopeClaim] = await registry.query(
                ScopeRegistry.claims, rpc_timeout=self.timeouts.query
            )
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return []
            raise
        return claims

    def _normalised(self, scope: list[str]) -> list[str]:
        return normalise_scope(scope, base=self.checkout.resolve())

    async def claim(self, claim: ScopeClaim) -> ScopeConflict | None:
        """One claim as the registry decides it: None (granted) or the conflict; the
        registry is started by the first claim."""
        start = WithStartWorkflowOperation(
            ScopeRegistry.run,
            RegistryInput(),
            id=self.scope_registry_id(),
            task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        conflict: ScopeConflict | None = await self.client.execute_update_with_start_workflow(
            ScopeRegistry.claim, claim, start_workflow_operation=start
        )
        return conflict

    async def _holds_on(self, holder: str) -> bool:
        """Whether the run `holder` still runs (and so may still use its scope)."""
        try:
            described = await self.client.get_workflow_handle(holder).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return described.status == _OPEN

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

    async def stop_requested(self, loop_name: str) -> bool:
        """Whether the loop's workflow is open with a stop (cancellation) asked of it: it
        is ending (its action being killed, its end being told) and closes soon."""
        described = await self.describe(loop_name)
        if described is None or described.status != _OPEN:
            return False
        return bool(described.raw_description.workflow_extended_info.cancel_requested)

    async def until_closed(self, loop_name: str, seconds: float) -> bool:
        """Wait until the loop's workflow is closed, at most `seconds`; whether it is."""
        deadline = asyncio.get_running_loop().time() + seconds
        while await self.is_open(loop_name):
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(CLOSING_POLL_SECONDS)
        return True

    async def status(self, loop_name: str) -> dict[str, Any] | None:
        """The state-file fields of the latest run (None: no run of this loop here).
        An open run that no worker answers for raises `NoWorkflowWorkerError`."""
        described = await self.describe(loop_name)
        if described is None:
            return None
        if described.status == _OPEN:
            state: dict[str, Any] | None = await self.ask(loop_name, LoopWorkflow.status)
            return state
        outcome = await self.closed_outcome(loop_name)
        return outcome.state if outcome is not None else None

    async def ask(self, loop_name: str, query: Any, *args: Any) -> Any:
        """A query of the loop's latest run (a worker answers it, for a closed run too);
        `NoWorkflowWorkerError` at once when no worker polls for the checkout's workflows,
        or when none answers in time."""
        if not await self.workflow_worker_polls():
            raise NoWorkflowWorkerError(self.task_queue)
        try:
            return await self.handle(loop_name).query(query, *args, rpc_timeout=self.timeouts.query)
        except RPCError as exc:
            if is_unanswered(exc):
                polling = await self.workflow_worker_polls()
                raise NoWorkflowWorkerError(self.task_queue, polling=polling) from None
            raise

    async def workflow_worker_polls(self) -> bool:
        """Whether a worker runs the workflows of the checkout's queue (`presence`)."""
        return await workflow_worker_polls(self.client, self.task_queue)

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

    async def answer(self, loop_name: str, signal: ApprovalSignal) -> None:
        """The answer to the `human_approval` question the run waits on (`approvals`)."""
        await self.handle(loop_name).signal(APPROVAL_SIGNAL, signal)

    async def follow(
        self,
        loop_name: str,
        on_event: Callable[[dict[str, Any]], None],
        *,
        since: int = 0,
        poll_seconds: float = FOLLOW_POLL_SECONDS,
        on_wait: Callable[[str], None] | None = None,
        stopping: Callable[[], bool] = lambda: False,
    ) -> RunOutcome:
        """Feed the run's events from number `since` to `on_event` until it ends or
        pauses; return how it did (`run_follow.RunFollower.follow`)."""
        return await RunFollower(self).follow(
            loop_name,
            on_event,
            since=since,
            poll_seconds=poll_seconds,
            on_wait=on_wait,
            stopping=stopping,
        )

    async def ended(self, loop_name: str) -> RunOutcome | None:
        """How the run ended, when it has (its result is kept by the server: no worker
        needed); None while it runs."""
        described = await self.describe(loop_name)
        if described is None or described.status in (_OPEN, _CONTINUED):
            return None
        outcome = await self.closed_outcome(loop_name)
        if outcome is None:
            name = described.status.name if described.status else "unknown"
            raise TemporalEngineError(
                f"the workflow {self.workflow_id(loop_name)} ended without an outcome ({name})"
            )
        return outcome


def _relative_to(path: Path, checkout: Path) -> str:
    """`path` relative to the checkout when inside it (log paths then read as locally)."""
    absolute, root = path.resolve(), checkout.resolve()
    return str(absolute.relative_to(root)) if absolute.is_relative_to(root) else str(absolute)
