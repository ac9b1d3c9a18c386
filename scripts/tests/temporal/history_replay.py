"""Recorded workflow histories of the example loops, and replaying them (issue 15 item 3).

A history is what the Temporal server keeps of one workflow run: every decision the
workflow made (activities scheduled, timers, signals, continue-as-new). Replaying it
against the current `LoopWorkflow` re-runs the workflow code over the recorded results;
a change that makes the code decide differently (routing, evaluation, the order of
activities) fails the replay with a nondeterminism error. Runs in flight survive an
upgrade only if their histories still replay, so such a change must be guarded with
`workflow.patched`.

`histories/<loop>.json` holds one history per example loop in `.loops/` that runs
without Claude, in Temporal's JSON form (`WorkflowHistory.to_json()`, the same as
`temporal workflow show --output json`). Record them again with
`python scripts/tests/temporal/record_histories.py [LOOP ...]` after an intended,
patched change, and keep the old files of loops whose runs may still be in flight.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from temporalio.client import Client, WorkflowHandle
from temporalio.client import WorkflowHistory as ClientHistory
from temporalio.worker import Replayer, WorkflowReplayResult

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


def run_input(project: Path, loop_name: str, task_queue: str) -> RunInput:
    """What the workflow gets for a run of `.loops/<loop_name>.yaml` in `project`."""
    loop = load_loop(project / ".loops" / f"{loop_name}.yaml")
    return RunInput(
        loop=loop.to_dict(),
        checkout=str(project),
        loops_dir=str(project / ".loops"),
        task_queue=task_queue,
        host="recorder",
    )


async def record(client: Client, project: Path, loop_name: str) -> Recording:
    """Run `loop_name` in `project` with a worker in this process, resuming each pause
    with a prompt, and fetch the run's history once it has ended."""
    task_queue = f"record-{loop_name}-{uuid.uuid4().hex[:8]}"
    async with build_worker(client, task_queue):
        handle = await client.start_workflow(
            LoopWorkflow.run,
            run_input(project, loop_name, task_queue),
            id=f"record-{loop_name}-{uuid.uuid4().hex[:8]}",
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
