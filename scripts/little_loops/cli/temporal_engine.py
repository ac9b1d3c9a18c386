"""`--engine temporal`: `run`, `resume`, `status`, `stop`, `list --running`, `history` and
`ll-loop worker` against a Temporal server (`little_loops.fsm.temporal`). The dispatch
reaches the first six through `temporal_backend.TemporalBackend` (the `RunBackend` seam).

Each command is one plain function returning an exit code, as for the local engine, and
prints what the local command prints: a run's progress comes from the events the workflow
exposes (fed to the same `ProgressDisplay`), its end from the same `report_run`. The
server comes from `LL_TEMPORAL_ADDRESS` / `LL_TEMPORAL_NAMESPACE` (worker: its flags).

temporalio is imported here only, when the Temporal engine is asked for. Its client can
crash at interpreter exit (temporalio sdk-python #300) and change the exit code, so the
entry point ends the process with `exit_now` once a command has used it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from little_loops.cli.cap_text import cap_line
from little_loops.cli.engine_choice import ENGINE_ENV, engine_choice, require_temporal
from little_loops.cli.exit_codes import FAILED, INTERRUPTED, OK, USAGE
from little_loops.cli.output import Logger, write_error_line, write_line
from little_loops.cli.resolve import LOOPS_DIR, load_resolved, loop_name_for
from little_loops.fsm.engine.events import LOOP_RESUME, LOOP_START
from little_loops.fsm.errors import LoopError
from little_loops.fsm.model.approval import AWAITING_APPROVAL
from little_loops.fsm.model.approval_records import ApprovalAnswer
from little_loops.fsm.store.state_files import RUNNING_DIR

if TYPE_CHECKING:
    from little_loops.cli.history_query import EventFilter
    from little_loops.cli.run_options import RunOptions
    from little_loops.fsm.model.run_settings import RunSettings
    from little_loops.fsm.schema import FSMLoop
    from little_loops.fsm.store.loop_state import LoopState
    from little_loops.fsm.temporal.client import LoopRuns
    from little_loops.fsm.temporal.payloads import ResumeSignal, RunOutcome

__all__ = [
    "ENGINE_ENV",
    "engine_choice",
    "exit_now",
    "history_temporal",
    "list_running_temporal",
    "resume_temporal",
    "run_temporal",
    "status_temporal",
    "stop_temporal",
    "worker_command",
]

T = TypeVar("T")

used = False
"""Whether a Temporal client was made in this process (see `exit_now`)."""


def exit_now(code: int) -> None:
    """Flush and end the process with `code`, skipping the interpreter's shutdown, where
    the Temporal client may crash and change the exit code (sdk-python #300)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _run_async(make: Callable[[LoopRuns], Awaitable[T]]) -> T:
    """Connect to the server, build the checkout's `LoopRuns` and run `make` with them."""
    global used
    used = True
    from little_loops.fsm.temporal.client import LoopRuns, connect
    from little_loops.fsm.temporal.names import ServerSettings
    from little_loops.fsm.temporal.timeouts import Timeouts

    timeouts = Timeouts.from_env()  # `LL_TEMPORAL_*_SECONDS`: a bad one said before connecting

    async def main() -> T:
        client = await connect(ServerSettings.resolve())
        return await make(LoopRuns(client, Path.cwd(), LOOPS_DIR, timeouts=timeouts))

    return asyncio.run(main())


# --- run and resume --------------------------------------------------------------------


def run_temporal(loop_arg: str, options: RunOptions, *, detach: bool = False) -> int:
    """`ll-loop run --engine temporal <loop>`: start the workflow; follow it unless
    `detach`."""
    from little_loops.cli.cmd_run import UsageError, load_for_run

    try:
        _, loop, kept = load_for_run(loop_arg, options)  # with a HEAD file's inputs
    except UsageError as exc:
        write_error_line(str(exc))
        return USAGE
    from little_loops.fsm.store.run_dir import run_dir_context

    run_dir = run_dir_context(loop, LOOPS_DIR)  # HEAD: kept like --context values on resume
    fsm = dataclasses.replace(loop, context={**loop.context, **run_dir})
    kept = {**kept, **run_dir}
    settings = options.settings

    async def start(runs: LoopRuns) -> int:
        run = runs.run_input(
            fsm,
            os.environ,
            context_overrides=kept,
            budget_override=settings.max_cost_usd,
            notify_override=settings.notify,
            choices=settings.choices,
        )
        _mark_and_check_local(runs, fsm)
        await _claim_scope(runs, fsm, options)
        await _start_claimed(runs, fsm, run)
        if detach:
            return await _say_detached(runs, fsm.name, options.quiet)
        preamble = [f"Running loop: {fsm.name}", cap_line(fsm), ""]
        return await _follow_and_report(runs, loop_arg, fsm, options, preamble, since=0)

    return _run_async(start)


def resume_temporal(loop_arg: str, options: RunOptions, *, prompt: str | None = None) -> int:
    """`ll-loop resume --engine temporal <loop>`: signal a paused workflow, or start a
    new workflow run from where a stopped or ended one left off."""
    _, loaded = load_resolved(loop_arg)
    name = loaded.name

    async def resume(runs: LoopRuns) -> int:
        from little_loops.cli.cmd_run import resume_header
        from little_loops.cli.cross_engine import refuse_if_local

        # Said first: the loop runs here, whatever the server has of it.
        refuse_if_local(LOOPS_DIR / RUNNING_DIR, name, loaded.scope, runs.checkout.resolve())

        saved = _saved_state(await _status_once_closed(runs, name))  # as it was before the resume
        if await runs.is_open(name):
            since, fsm = await _resume_open(runs, loaded, options, prompt)
        else:
            since, fsm = await _resume_closed(runs, loaded, options, prompt)
        if saved is not None and prompt:  # the header says what the action receives
            saved = dataclasses.replace(saved, continuation_prompt=prompt)
        preamble = resume_header(saved, fsm) if saved is not None else []
        return await _follow_and_report(runs, loop_arg, fsm, options, preamble, since=since)

    return _run_async(resume)


CLOSING_WAIT_SECONDS = 90.0
"""How long `resume` waits for a run that is ending to close (its end is told first: a
`notify` command may take up to 60 s)."""
STILL_OPEN = ("running", "awaiting_continuation")


async def _status_once_closed(runs: LoopRuns, name: str) -> dict[str, Any] | None:
    """The run's state, after waiting for its workflow to close when it is ending: `stop`
    (or Ctrl-C) returns once the server has the stop, and a run that ended tells its end
    before its workflow closes, so a `resume` right after either would find the workflow
    still open. A user means the stopped or ended run: resume it once it has closed."""
    state = await runs.status(name)
    ended = state is not None and state.get("status") not in STILL_OPEN
    if await runs.is_open(name) and (ended or await runs.stop_requested(name)):
        await runs.until_closed(name, CLOSING_WAIT_SECONDS)
        state = await runs.status(name)
    return state


async def _resume_open(
    runs: LoopRuns, loaded: FSMLoop, options: RunOptions, prompt: str | None
) -> tuple[int, FSMLoop]:
    """The workflow is open: it must be paused; signal it. Returns the first new event
    and the loop as the resumed run has it."""
    from little_loops.fsm.temporal.workflow import LoopWorkflow

    state = _saved_state(await runs.status(loaded.name))
    if state is None or state.status != "awaiting_continuation":
        raise LoopError(
            f"loop '{loaded.name}' is running on Temporal "
            f"(workflow {runs.workflow_id(loaded.name)})"
        )
    settings, fsm = _resumable(loaded, state, options)
    page = await runs.ask(fsm.name, LoopWorkflow.events, 1 << 62)
    _mark_and_check_local(runs, fsm)
    await _claim_scope(runs, fsm, options)
    await runs.resume(fsm.name, _resume_signal(settings, prompt))
    return int(page.total), fsm


async def _resume_closed(
    runs: LoopRuns, loaded: FSMLoop, options: RunOptions, prompt: str | None
) -> tuple[int, FSMLoop]:
    """The last workflow run closed: start a new one from its carry."""
    outcome = await runs.closed_outcome(loaded.name)
    state = _saved_state(outcome.state if outcome is not None else None)
    if outcome is None or state is None:
        raise LoopError(f"Nothing to resume for: {loaded.name}")
    settings, fsm = _resumable(loaded, state, options)
    run = runs.run_input(
        fsm,
        os.environ,
        context_overrides=state.context_overrides,
        carry=outcome.carry,
        budget_override=settings.max_cost_usd,
        notify_override=settings.notify,
        choices=settings.choices,
        resume=_resume_signal(settings, prompt),
    )
    _mark_and_check_local(runs, fsm)
    await _claim_scope(runs, fsm, options)
    await _start_claimed(runs, fsm, run)
    return outcome.carry.event_offset, fsm


def _resumable(
    loaded: FSMLoop, state: LoopState, options: RunOptions
) -> tuple[RunSettings, FSMLoop]:
    """The resumed run's settings (its `--max-cost` and `--notify` hold again unless given
    anew, as a local resume keeps them) and its loop with them; `LoopError` if the saved
    run cannot be resumed."""
    from little_loops.fsm.store.persistent_executor import resume_refusal

    settings = options.settings.resumed(
        max_cost_usd=state.max_cost_usd, notify=state.notify, max_tokens=state.max_tokens
    )
    fsm = settings.applied_to(loaded)
    reason = resume_refusal(state, fsm, LOOPS_DIR / RUNNING_DIR)
    if reason is not None:
        raise LoopError(reason)
    return settings, fsm


def _resume_signal(settings: RunSettings, prompt: str | None) -> ResumeSignal:
    from little_loops.fsm.temporal.payloads import ResumeSignal

    return ResumeSignal(
        prompt=prompt,
        max_continuations=settings.max_continuations,
        max_cost_usd=settings.max_cost_usd,
        notify=settings.notify,
    )


def _mark_and_check_local(runs: LoopRuns, fsm: FSMLoop) -> None:
    """Say in `.loops/.running/` that the loop runs on Temporal, then refuse (exit 6)
    while a local run holds the loop's lock or a scope it overlaps (`cross_engine`)."""
    from little_loops.cli.cross_engine import refuse_if_local
    from little_loops.fsm.store.locking import LoopBusyError, normalise_scope
    from little_loops.fsm.store.temporal_markers import (
        TemporalMarker,
        read_markers,
        remove_marker,
        write_marker,
    )
    from little_loops.fsm.temporal.names import ServerSettings

    running_dir = LOOPS_DIR / RUNNING_DIR
    base = runs.checkout.resolve()
    server = ServerSettings.resolve()
    workflow_id = runs.workflow_id(fsm.name)
    scope = tuple(normalise_scope(fsm.scope, base=base))
    had_marker = bool(read_markers(running_dir, [fsm.name]))
    marker = TemporalMarker(fsm.name, workflow_id, server.address, server.namespace, scope)
    write_marker(running_dir, marker)
    try:
        refuse_if_local(running_dir, fsm.name, fsm.scope, base)
    except LoopBusyError:
        if not had_marker:
            remove_marker(running_dir, fsm.name, workflow_id)
        raise


async def _unmark_if_closed(runs: LoopRuns, name: str) -> None:
    """The run ended (not paused): local runs of the loop may start again."""
    from little_loops.fsm.store.temporal_markers import remove_marker

    with contextlib.suppress(Exception):
        if not await runs.is_open(name):
            remove_marker(LOOPS_DIR / RUNNING_DIR, name, runs.workflow_id(name))


async def _claim_scope(runs: LoopRuns, fsm: Any, options: RunOptions) -> None:
    """The loop's `scope`, claimed for this run: refused (exit 6) while another run on the
    server shares it, or waited for with `--queue`, as locally."""
    await runs.claim_scope(fsm, queue=options.queue, on_wait=Logger(quiet=options.quiet).warning)


async def _start_claimed(runs: LoopRuns, fsm: Any, run: Any) -> None:
    """Start the workflow; a start that fails gives its scope back, unless the loop runs
    already (that run holds the claim, under the same workflow id)."""
    from little_loops.fsm.temporal.client import LoopRunningError

    try:
        await runs.start(run)
    except LoopRunningError:
        raise
    except BaseException:
        if fsm.scope:
            await runs.release_scope(runs.workflow_id(fsm.name))
        raise


def _saved_state(data: dict[str, Any] | None) -> Any:
    from little_loops.fsm.persistence import LoopState

    return LoopState.from_dict(data) if data is not None else None


async def _follow_and_report(
    runs: LoopRuns,
    loop_arg: str,
    fsm: Any,
    options: RunOptions,
    preamble: list[str],
    *,
    since: int,
) -> int:
    """Show the run's progress as a local run shows it, then its summary and exit code.
    Ctrl-C and SIGTERM stop the run (workflow cancellation), as they stop a local one."""
    from little_loops.cli.cmd_run import progress_display
    from little_loops.cli.run_report import report_run
    from little_loops.fsm.executor import ExecutionResult
    from little_loops.fsm.temporal.presence import NoWorkflowWorkerError, stop_pending

    display = progress_display(fsm, options)
    display.preamble = preamble
    loop = asyncio.get_running_loop()
    stops: list[asyncio.Future[None]] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(
            signum, lambda: stops.append(asyncio.ensure_future(runs.stop(fsm.name)))
        )
    logger = Logger(quiet=options.quiet)
    try:
        outcome: RunOutcome = await runs.follow(
            fsm.name, display, since=since, on_wait=logger.warning, stopping=lambda: bool(stops)
        )
    except NoWorkflowWorkerError:
        if not stops:
            raise
        await asyncio.gather(*stops)  # the server has the stop: it holds for the next worker
        logger.warning(stop_pending(fsm.name, runs.task_queue))
        return INTERRUPTED
    await _unmark_if_closed(runs, fsm.name)
    result = ExecutionResult(**outcome.result)
    # The summary's "Resume with: ll-loop resume ..." must reach this engine again.
    same_engine = (
        loop_arg if os.environ.get(ENGINE_ENV) == "temporal" else f"{loop_arg} --engine temporal"
    )
    return report_run(result, fsm, same_engine, display, quiet=options.quiet)


async def _say_detached(runs: LoopRuns, name: str, quiet: bool) -> int:
    from little_loops.fsm.temporal.presence import NoWorkflowWorkerError

    logger = Logger(quiet=quiet)
    logger.success(
        f"Started {name} on Temporal (workflow {runs.workflow_id(name)}, "
        f"task queue {runs.task_queue})"
    )
    if not quiet:
        write_line(f"  status: ll-loop status --engine temporal {name}")
        write_line(f"  stop:   ll-loop stop --engine temporal {name}")
    if not await runs.workflow_worker_polls():
        logger.warning(str(NoWorkflowWorkerError(runs.task_queue)))
    return OK


# --- status, stop, list, history -------------------------------------------------------


def status_temporal(loop_arg: str, *, as_json: bool = False) -> int:
    """`ll-loop status --engine temporal <loop>`: the workflow's state-file fields."""
    from little_loops.cli.cmd_inspect import status_lines

    name = loop_name_for(loop_arg)

    async def ask(runs: LoopRuns) -> dict[str, Any] | None:
        return await runs.status(name)

    data = _run_async(ask)
    if data is None:
        Logger().error(f"No state found for: {loop_arg}")
        return FAILED
    if as_json:
        write_line(json.dumps(data, indent=2))
        return OK
    from little_loops.fsm.temporal.action_retry import retry_status_lines

    # Actions Temporal ran again after a worker or server failure are said, never silent.
    for line in [
        *status_lines(_saved_state(data), loop_arg),
        *retry_status_lines(data.get("action_retries")),
    ]:
        write_line(line)
    return OK


def stop_temporal(loop_arg: str) -> int:
    """`ll-loop stop --engine temporal <loop>`: cancel the open workflow."""
    name = loop_name_for(loop_arg)

    async def stop(runs: LoopRuns) -> int:
        from little_loops.fsm.temporal.presence import stop_pending

        if not await runs.is_open(name):
            Logger().error(f"Loop {name} is not running on Temporal")
            return FAILED
        await runs.stop(name)
        if not await runs.workflow_worker_polls():
            Logger().warning(stop_pending(name, runs.task_queue, runs.workflow_id(name)))
            return OK
        Logger().success(f"Stopping {name} (workflow {runs.workflow_id(name)})")
        return OK

    return _run_async(stop)


def answer_temporal(loop_arg: str, answer: ApprovalAnswer) -> int:
    """`ll-loop approve|reject --engine temporal <loop>`: signal the answer to the
    question the open workflow waits on (exit 1 with one line when none waits)."""
    from little_loops.cli.cmd_approve import answered_line, nothing_waits
    from little_loops.fsm.store.approval_inbox import pending_question
    from little_loops.fsm.temporal.approvals import ApprovalSignal

    name = loop_name_for(loop_arg)

    async def send(runs: LoopRuns) -> int:
        state = await runs.status(name) if await runs.is_open(name) else None
        pending = pending_question((state or {}).get("head"))
        if state is None or pending is None or state.get("status") != AWAITING_APPROVAL:
            Logger().error(nothing_waits(name))
            return FAILED
        await runs.answer(name, ApprovalSignal.of(pending, answer))
        Logger().success(answered_line(answer, pending))
        return OK

    return _run_async(send)


def list_running_temporal(*, as_json: bool = False) -> int:
    """`ll-loop list --running --engine temporal`: the open loop workflows on the server."""

    async def listed(runs: LoopRuns) -> list[tuple[str, dict[str, Any] | None]]:
        from little_loops.fsm.temporal.presence import workflow_worker_polls
        from little_loops.fsm.temporal.workflow import LoopWorkflow

        query = 'WorkflowType = "ll-loop" AND ExecutionStatus = "Running"'
        found = []
        async for execution in runs.client.list_workflows(query):
            status = None
            if await workflow_worker_polls(runs.client, execution.task_queue):
                handle = runs.client.get_workflow_handle(execution.id)
                status = await _status_or_none(handle, LoopWorkflow, runs.timeouts.query)
            found.append((execution.id, status))
        return sorted(found)

    runs = _run_async(listed)
    if as_json:
        write_line(json.dumps([{"workflow_id": wid, **(state or {})} for wid, state in runs]))
    elif not runs:
        write_line("No running loops")
    else:
        write_line("Unfinished runs:")
        for workflow_id, data in runs:
            state = _saved_state(data)
            where = workflow_id.split("@", 1)[-1]
            if state is None:
                write_line(f"  {workflow_id}: no worker answers (is `ll-loop worker` running?)")
                continue
            write_line(
                f"  {state.loop_name}: {state.current_state} "
                f"(iteration {state.current_iteration()}) - {state.status} [{where}]"
            )
    return OK


LIST_QUERY_SECONDS = 5.0
"""How long `list --running` waits for a run's worker to answer its status."""


async def _status_or_none(handle: Any, workflow: Any, query: timedelta) -> dict[str, Any] | None:
    """A run's status, or None when no worker answers (its checkout has none running)
    within `LIST_QUERY_SECONDS` (or the client's query deadline, when shorter)."""
    from temporalio.client import WorkflowQueryFailedError
    from temporalio.service import RPCError

    try:
        status: dict[str, Any] | None = await handle.query(
            workflow.status, rpc_timeout=min(timedelta(seconds=LIST_QUERY_SECONDS), query)
        )
    except (RPCError, WorkflowQueryFailedError):
        return None
    return status


def history_temporal(
    loop_arg: str, *, tail: int = 50, output: str = "lines", query: EventFilter | None = None
) -> int:
    """`ll-loop history --engine temporal <loop>`: the events the workflow kept."""
    from little_loops.cli.cmd_history import print_events
    from little_loops.cli.history_query import EventFilter

    name = loop_name_for(loop_arg)

    async def events(runs: LoopRuns) -> list[dict[str, Any]]:
        from little_loops.fsm.temporal.workflow import LoopWorkflow

        if await runs.describe(name) is None:
            return []
        page = await runs.ask(name, LoopWorkflow.events, 0)
        return list(page.events)

    found = _run_async(events)
    if not found:  # exit 1, as locally (issue 23 item 14)
        write_line("[]" if output == "json" else f"No history for: {loop_arg}")
        return FAILED
    print_events(found, tail, output, query or EventFilter())
    return OK


def report_temporal(loop_arg: str, *, since: datetime | None, as_json: bool) -> int:
    """`ll-loop report --engine temporal <loop>`: the latest workflow run's figures, from
    its status and the events its workflow kept (asked of a worker, as `history` does)."""
    from little_loops.cli.cmd_report import show_report
    from little_loops.fsm.store.run_report import run_started_since, workflow_run

    name = loop_name_for(loop_arg)

    async def kept(runs: LoopRuns) -> tuple[dict[str, Any], list[dict[str, Any]], int] | None:
        from little_loops.fsm.temporal.workflow import LoopWorkflow

        state = await runs.status(name)
        if state is None:
            return None
        page = await runs.ask(name, LoopWorkflow.events, 0)
        return state, list(page.events), page.total

    found = _run_async(kept)
    runs = []
    if found is not None:
        state, events, total = found
        run = workflow_run(name, state, events)
        if since is None or run_started_since(run, since):
            runs.append(run)
        if len(events) < total and not as_json:
            Logger().warning(
                f"per-state figures from the last {len(events)} of {total} events "
                "(the run's totals are whole)"
            )
    nothing = f"No run of '{name}' on Temporal{'' if since is None else ' since then'}"
    return show_report([name], runs, since=since, as_json=as_json, nothing=nothing)


def watch_temporal(loop_arg: str, *, verbose: bool = False, wait: bool = False) -> int:
    """`ll-loop watch --engine temporal <loop>`: follow the open workflow's run as `run`
    shows it, from its last start (issue 23 item 6). Ctrl-C stops the watching only; a
    run that is not under way prints its summary (with `--wait`: waits for one)."""
    _, fsm = load_resolved(loop_arg)
    same_engine = (
        loop_arg if os.environ.get(ENGINE_ENV) == "temporal" else f"{loop_arg} --engine temporal"
    )

    async def watch(runs: LoopRuns) -> int:
        while not await runs.is_open(fsm.name):
            if not wait:
                return await _print_not_under_way(runs, fsm, loop_arg, same_engine)
            await asyncio.sleep(WATCH_POLL_SECONDS)
        return await _watch_open(runs, fsm, same_engine, verbose)

    try:
        return _run_async(watch)
    except KeyboardInterrupt:
        write_error_line(
            f"Stopped watching; {fsm.name} is not affected (ll-loop status {same_engine}; "
            f"stop it with: ll-loop stop {same_engine})"
        )
        return INTERRUPTED


WATCH_POLL_SECONDS = 1.0
"""How often `watch --wait` asks the server whether a run of the loop is open."""


async def _print_not_under_way(runs: LoopRuns, fsm: Any, loop_arg: str, same_engine: str) -> int:
    from little_loops.cli.cmd_watch import print_ended_summary

    saved = _saved_state(await runs.status(fsm.name)) if await runs.describe(fsm.name) else None
    if saved is None:
        Logger().error(f"No run of {fsm.name} on Temporal ({loop_arg})")
        return FAILED
    return print_ended_summary(saved, fsm, same_engine)


async def _watch_open(runs: LoopRuns, fsm: Any, same_engine: str, verbose: bool) -> int:
    from little_loops.cli.cmd_run import progress_display
    from little_loops.cli.run_options import RunOptions
    from little_loops.cli.run_report import report_run
    from little_loops.fsm.executor import ExecutionResult
    from little_loops.fsm.temporal.workflow import LoopWorkflow

    page = await runs.ask(fsm.name, LoopWorkflow.events, 0)
    starts = [
        page.first + index
        for index, event in enumerate(page.events)
        if event.get("event") in (LOOP_START, LOOP_RESUME) and not event.get("depth")
    ]
    display = progress_display(fsm, RunOptions(verbose=verbose))
    display.preamble = [f"Watching loop: {fsm.name} (on Temporal)", cap_line(fsm), ""]
    outcome = await runs.follow(
        fsm.name, display, since=starts[-1] if starts else page.first, on_wait=Logger().warning
    )
    return report_run(ExecutionResult(**outcome.result), fsm, same_engine, display)


# --- the worker ------------------------------------------------------------------------


def worker_command(
    *,
    address: str | None = None,
    namespace: str | None = None,
    task_queue: str | None = None,
    workflows: bool = True,
    activities: bool = True,
) -> int:
    """`ll-loop worker`: run this checkout's workflows and activities (or one of the two)
    until stopped."""
    require_temporal()
    global used
    used = True
    from little_loops.fsm.temporal.client import connect
    from little_loops.fsm.temporal.names import ServerSettings, task_queue_for
    from little_loops.fsm.temporal.timeouts import Timeouts
    from little_loops.fsm.temporal.worker import Roles, build_worker
    from little_loops.fsm.temporal.worker_groups import worker_groups

    roles = Roles(workflows=workflows, activities=activities)
    settings = ServerSettings.resolve(address, namespace)
    # Its own limit is the sticky queue's; a handoff session it spawns (`ll-loop resume`)
    # inherits the others with its environment: a bad one is said now.
    timeouts = Timeouts.from_env()
    queue = task_queue or task_queue_for(Path.cwd())
    # A spawned handoff session (`on_handoff: spawn`) runs `ll-loop resume <loop>`: it
    # must resume the workflow on this server.
    os.environ.update(
        {
            ENGINE_ENV: "temporal",
            "LL_TEMPORAL_ADDRESS": settings.address,
            "LL_TEMPORAL_NAMESPACE": settings.namespace,
        }
    )

    async def serve() -> None:
        client = await connect(settings)
        worker = build_worker(client, queue, roles, timeouts)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, lambda: asyncio.ensure_future(worker.shutdown()))
        if not roles.activities:  # runs no action: has none to keep or stop
            await _serve(worker, client, queue, settings, roles)
            return
        running_dir = Path.cwd() / LOOPS_DIR / RUNNING_DIR
        async with worker_groups(client, running_dir, Logger().warning):
            await _serve(worker, client, queue, settings, roles)

    asyncio.run(serve())
    return OK


async def _serve(worker: Any, client: Any, queue: str, settings: Any, roles: Any) -> None:
    """Run the worker; say so once the server has its first poll."""
    from little_loops.fsm.temporal.presence import polls_as

    running = asyncio.ensure_future(worker.run())
    # Said once the server has the worker's first poll: from then on a run started
    # in the checkout finds it (a script may wait for this line).
    while not running.done() and not await polls_as(client, queue, workflows=roles.workflows):
        await asyncio.sleep(0.05)
    if not running.done():
        Logger().success(
            f"Worker for task queue {queue} on {settings.address} "
            f"(namespace {settings.namespace}): {roles.describe()}"
        )
        sys.stdout.flush()
    await running
