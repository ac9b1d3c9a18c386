"""Recorded workflow histories of the example loops, and replaying them (issue 15 item 3).

A history is what the Temporal server keeps of one workflow run: every decision the
workflow made (activities scheduled, timers, signals, continue-as-new). Replaying it
against the current `LoopWorkflow` re-runs the workflow code over the recorded results;
a change that makes the code decide differently (routing, evaluation, the order of
activities) fails the replay with a nondeterminism error. Runs in flight survive an
upgrade only if their histories still replay, so such a change must be guarded with
`workflow.patched`.

`histories/<loop>.json` holds one history per example loop in `.loops/` that runs
without Claude, and `histories/scenario-*.json` the paths no example takes: the two
workflow runs of a loop that continued as new, a run stopped during an action, one
stopped as its action ended (the stop kept from the workflow's state, `STOP_KEPT`), and
`subloop-demo` with its sub-loop as a child workflow (its own `subloop-demo.json` was
recorded before, when the child ran inside the parent's workflow, and is kept). They
are in Temporal's JSON form (`WorkflowHistory.to_json()`, the same as
`temporal workflow show --output json`). Record them again with
`python scripts/tests/temporal/record_histories.py [LOOP ...]` after an intended,
patched change, and keep the old files of loops whose runs may still be in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.client import WorkflowHistory as ClientHistory
from temporalio.worker import Replayer, WorkflowReplayResult

from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.run_dir import run_dir_context
from little_loops.fsm.temporal.client import LoopRuns
from little_loops.fsm.temporal.payloads import ResumeSignal, RunInput, RunOutcome
from little_loops.fsm.temporal.worker import build_worker, workflow_runner
from little_loops.fsm.temporal.workflow import LoopWorkflow
from little_loops.fsm.validation import load_loop

REPO_ROOT = Path(__file__).resolve().parents[3]
LOOPS_DIR = REPO_ROOT / ".loops"
HISTORIES_DIR = Path(__file__).resolve().parent / "histories"
RESUME_PROMPT = "recorded resume"
MAX_RESUMES = 5  # a paused example is resumed this often at most while recording
WAIT_SECONDS = 120.0


@dataclass(frozen=True)
class Recording:
    """One recorded run: its loop, its history, and how it ended."""

    loop_name: str
    history: ClientHistory
    outcome: RunOutcome
    resumes: int


def examples_without_claude() -> list[str]:
    """The example loops that run without Claude (the rule of test_examples.py)."""
    from test_examples import needs_claude

    names = []
    for path in sorted(LOOPS_DIR.glob("*.yaml")):
        loop = load_loop(path)
        if not needs_claude(loop):
            names.append(loop.name)
    return names


def history_files() -> list[Path]:
    return sorted(HISTORIES_DIR.glob("*.json"))


def example_history_files() -> list[Path]:
    return [path for path in history_files() if not path.stem.startswith("scenario-")]


def load_history(path: Path) -> ClientHistory:
    return ClientHistory.from_json(f"recorded-{path.stem}", path.read_text(encoding="utf-8"))


def save_history(history: ClientHistory, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(history.to_json() + "\n", encoding="utf-8")


def replayer(workflow: type = LoopWorkflow) -> Replayer:
    """A replayer of the loop workflow with the worker's own sandbox settings."""
    return Replayer(workflows=[workflow], workflow_runner=workflow_runner())


async def replay(history: ClientHistory, workflow: type = LoopWorkflow) -> WorkflowReplayResult:
    """Replay `history`; the result's `replay_failure` is None when it replayed."""
    return await replayer(workflow).replay_workflow(history, raise_on_replay_failure=False)


# --- recording --------------------------------------------------------------------------


def project_with_examples(directory: Path) -> Path:
    """A project in `directory` with a copy of the example loops (and their scripts)."""
    ignore = shutil.ignore_patterns(".running", ".history")
    shutil.copytree(LOOPS_DIR, directory / ".loops", ignore=ignore)
    return directory


def run_input(client: Client, project: Path, loop_name: str, task_queue: str) -> RunInput:
    """What the CLI gives the workflow for a run of `.loops/<loop_name>.yaml` in `project`."""
    loop = load_loop(project / ".loops" / f"{loop_name}.yaml")
    loop.context.update(run_dir_context(loop, project / ".loops"))  # as `ll-loop run` does
    runs = LoopRuns(client, project, project / ".loops", task_queue)
    return runs.run_input(loop, {})


def loop_input(
    client: Client, project: Path, loop: dict[str, Any], task_queue: str, **options: Any
) -> RunInput:
    runs = LoopRuns(client, project, project / ".loops", task_queue)
    return runs.run_input(FSMLoop.from_dict(loop), {}, **options)


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def record(
    client: Client, project: Path, loop_name: str, workflow_id: str | None = None
) -> Recording:
    """Run `loop_name` in `project` with a worker in this process, resuming each pause
    with a prompt, and fetch the run's history once it has ended. `workflow_id`: the
    run's (default: a fresh one), for a history whose commands name it."""
    task_queue = _unique(f"record-{loop_name}")
    async with build_worker(client, task_queue):
        handle = await client.start_workflow(
            LoopWorkflow.run,
            run_input(client, project, loop_name, task_queue),
            id=workflow_id or _unique(f"record-{loop_name}"),
            task_queue=task_queue,
        )
        outcome, resumes = await _until_done(handle)
        history = await handle.fetch_history()
    return Recording(loop_name, history, outcome, resumes)


async def _until_done(handle: WorkflowHandle[LoopWorkflow, RunOutcome]) -> tuple[RunOutcome, int]:
    result = asyncio.ensure_future(handle.result())
    resumes = 0
    async with asyncio.timeout(WAIT_SECONDS):
        while not result.done():
            outcome = await handle.query(LoopWorkflow.outcome)
            paused = outcome is not None and outcome.state["status"] == "awaiting_continuation"
            if paused and resumes < MAX_RESUMES:
                resumes += 1
                await handle.signal(LoopWorkflow.resume, ResumeSignal(prompt=RESUME_PROMPT))
            await asyncio.wait({result}, timeout=0.1)
        return result.result(), resumes


# --- scenarios no example takes --------------------------------------------------------

SPIN_LOOP: dict[str, Any] = {
    "name": "spin",
    "initial": "run",
    "max_iterations": 5,
    "states": {"run": {"action": "true", "next": "run"}, "done": {"terminal": True}},
}
LONG_ACTION_LOOP: dict[str, Any] = {
    "name": "long",
    "initial": "wait",
    "states": {"wait": {"action": "sleep 600", "next": "done"}, "done": {"terminal": True}},
}


async def record_continue_as_new(client: Client, project: Path) -> dict[str, ClientHistory]:
    """Five actions, continuing as new every two states: the first and the last run."""
    task_queue = _unique("record-spin")
    run = loop_input(client, project, SPIN_LOOP, task_queue, continue_as_new_every=2)
    async with build_worker(client, task_queue):
        handle = await client.start_workflow(
            LoopWorkflow.run, run, id=_unique("record-spin"), task_queue=task_queue
        )
        await asyncio.wait_for(handle.result(), WAIT_SECONDS)
        first_run = client.get_workflow_handle(handle.id, run_id=handle.result_run_id)
        first = await first_run.fetch_history()
        last = await client.get_workflow_handle(handle.id).fetch_history()  # the latest run
    return {"scenario-continue-as-new-first": first, "scenario-continue-as-new-last": last}


async def record_stop(client: Client, project: Path) -> dict[str, ClientHistory]:
    """A run cancelled (`stop`) while its action runs."""
    task_queue = _unique("record-stop")
    run = loop_input(client, project, LONG_ACTION_LOOP, task_queue)
    async with build_worker(client, task_queue):
        handle = await client.start_workflow(
            LoopWorkflow.run, run, id=_unique("record-stop"), task_queue=task_queue
        )
        await _until_action_runs(handle)
        await handle.cancel()
        with contextlib.suppress(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), WAIT_SECONDS)
        history = await handle.fetch_history()
    return {"scenario-stop": history}


KEPT_STOP_LOOP: dict[str, Any] = {
    "name": "kept",
    "initial": "first",
    "states": {
        # Ends as soon as the recorder has asked for the stop: before it reaches the action.
        "first": {"action": "while [ ! -e stop-sent ]; do sleep 0.02; done", "next": "second"},
        "second": {"action": "true", "next": "done"},
        "done": {"terminal": True},
    },
}


async def record_kept_stop(client: Client, project: Path) -> dict[str, ClientHistory]:
    """A run cancelled (`stop`) as its action ends, before the cancellation reaches the
    action: the action's result is kept and the run ends before `second` (`STOP_KEPT`)."""
    task_queue = _unique("record-kept")
    run = loop_input(client, project, KEPT_STOP_LOOP, task_queue)
    async with build_worker(client, task_queue):
        handle = await client.start_workflow(
            LoopWorkflow.run, run, id=_unique("record-kept"), task_queue=task_queue
        )
        await _until_action_runs(handle)
        await handle.cancel()
        await _until_cancel_requested(handle)  # the workflow took the stop before the end
        (project / "stop-sent").touch()
        await asyncio.wait_for(handle.result(), WAIT_SECONDS)
        history = await handle.fetch_history()
    (project / "stop-sent").unlink()
    return {"scenario-stop-kept": history}


async def _until_action_runs(handle: WorkflowHandle[Any, Any]) -> None:
    started = PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            pending = (await handle.describe()).raw_description.pending_activities
            if any(activity.state == started for activity in pending):
                return
            await asyncio.sleep(0.1)


async def _until_cancel_requested(handle: WorkflowHandle[Any, Any]) -> None:
    requested = PendingActivityState.PENDING_ACTIVITY_STATE_CANCEL_REQUESTED
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            pending = (await handle.describe()).raw_description.pending_activities
            if any(activity.state == requested for activity in pending):
                return
            await asyncio.sleep(0.02)


async def record_child_workflow(client: Client, project: Path) -> dict[str, ClientHistory]:
    """`subloop-demo` since a sub-loop is a child workflow (`CHILD_WORKFLOWS`): the
    parent's history, which starts the child's workflow (its own history is not kept:
    the replay test replays the loop workflow). The child's id is made of the parent's,
    so the run has the id `load_history` gives its replay."""
    name = "scenario-subloop-child-workflow"
    recording = await record(client, project, "subloop-demo", workflow_id=f"recorded-{name}")
    return {name: recording.history}


APPROVAL_LOOP: dict[str, Any] = {
    "name": "approval",
    "initial": "review",
    "states": {
        "review": {
            "action_type": "human_approval",
            "action": "Ship it?",
            "timeout": 3600,
            "route": {"yes": "ship", "no": "done"},
        },
        "ship": {"action": "true", "next": "done"},
        "done": {"terminal": True},
    },
}


async def record_approval(client: Client, project: Path) -> dict[str, ClientHistory]:
    """A `human_approval` state (issue 26 item 2): asked, its timeout's durable timer
    started, answered `yes` by the `approval` signal (`APPROVALS`)."""
    from little_loops.fsm.temporal.approvals import APPROVAL_SIGNAL, ApprovalSignal

    task_queue = _unique("record-approval")
    run = loop_input(client, project, APPROVAL_LOOP, task_queue)
    async with build_worker(client, task_queue):
        handle = await client.start_workflow(
            LoopWorkflow.run, run, id=_unique("record-approval"), task_queue=task_queue
        )
        async with asyncio.timeout(WAIT_SECONDS):
            while (state := await handle.query(LoopWorkflow.status)) is None or (
                state["status"] != "awaiting_approval"
            ):
                await asyncio.sleep(0.1)
        asked = state["head"]["approval"]
        answer = ApprovalSignal(asked["state"], asked["asked_at"], "yes")
        await handle.signal(APPROVAL_SIGNAL, answer)
        await asyncio.wait_for(handle.result(), WAIT_SECONDS)
        history = await handle.fetch_history()
    return {"scenario-approval": history}


BRANCH_PAUSE_FAN = """\
name: branch-pause
initial: go
states:
  go:
    parallel: {items: "a\\nb", loop: branch-pause-one, max_workers: 2}
    on_yes: done
    on_partial: done
    on_no: done
  done: {terminal: true}
"""

BRANCH_PAUSE_ONE = """\
name: branch-pause-one
initial: work
states:
  work:
    action: >-
      if [ ${context.item} = b ] && [ ! -f handed-b ]; then touch handed-b;
      echo 'CONTEXT_HANDOFF: go on with b'; else echo ${context.item}; fi
    next: done
  done: {terminal: true}
"""


async def record_branch_pause(client: Client, project: Path) -> dict[str, ClientHistory]:
    """A handoff inside an item of a fan-out (`BRANCH_PAUSES`): the run pauses with the
    item's place, is resumed, and goes on inside that item's new child workflow."""
    name = "scenario-branch-pause"
    for loop, text in (("branch-pause", BRANCH_PAUSE_FAN), ("branch-pause-one", BRANCH_PAUSE_ONE)):
        (project / ".loops" / f"{loop}.yaml").write_text(text, encoding="utf-8")
    recording = await record(client, project, "branch-pause", workflow_id=f"recorded-{name}")
    return {name: recording.history}


SCENARIOS = (
    record_continue_as_new,
    record_stop,
    record_kept_stop,
    record_child_workflow,
    record_approval,
    record_branch_pause,
)
