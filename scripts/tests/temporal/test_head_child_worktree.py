"""A `worktree:` sub-loop on the Temporal engine (spec ll-head-dialect.md §4.6; issue 21
item 3), on the time-skipping server: the parent's workflow attaches a fresh worktree of
the branch on the checkout's host, the child workflow's actions run in it, and it is
removed afterwards (the branch stays), with the same captures and events as a local run."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

from fixtures.cli_support import cli_env, run_cli, write_loop
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.api.enums.v1 import EventType
    from workflow_support import checkout_with, run_input, runs_for

    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0

PARENT = """\
name: parent
initial: go
states:
  go:
    loop: where
    worktree: " ${context.branch} "
    with: {run_dir: "runs/x/"}
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
context:
  branch: feature
"""

WHERE_CHILD = """\
name: where
initial: look
states:
  look:
    action: "git rev-parse --abbrev-ref HEAD; cat only-on-feature; echo ${context.run_dir}"
    capture: seen
    next: done
  done:
    terminal: true
"""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _repo(root: Path) -> Path:
    """A checkout with the parent and child loops, whose branch `feature` has a file
    `main` lacks."""
    checkout = checkout_with(root, "parent", PARENT)
    write_loop(checkout, "where", WHERE_CHILD)
    _git(checkout, "init", "-q", "-b", "main")
    (checkout / ".gitignore").write_text(".loops/\n")
    _git(checkout, "add", ".gitignore")
    _git(checkout, "commit", "-q", "-m", "first")
    _git(checkout, "checkout", "-q", "-b", "feature")
    (checkout / "only-on-feature").write_text("feature file\n")
    _git(checkout, "add", "only-on-feature")
    _git(checkout, "commit", "-q", "-m", "feature")
    _git(checkout, "checkout", "-q", "main")
    return checkout


def _worktree_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {key: event[key] for key in ("event", "branch", "path")}
        for event in events
        if event["event"].startswith("sub_loop_worktree")
    ]


def test_4_6_a_worktree_sub_loop_runs_its_child_workflow_in_a_worktree_of_the_branch(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    local = _repo(tmp_path / "local")
    assert run_cli(local, "run", "parent", env=cli_env(tmp_path)).returncode == 0
    running = local / ".loops/.running"
    local_state = json.loads((running / "parent.state.json").read_text())
    local_events = [json.loads(line) for line in (running / "parent.events.jsonl").open()]
    checkout = _repo(tmp_path / "remote")
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]], list[str], int]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            events = (await handle.query(LoopWorkflow.events, 0)).events
            history = await handle.fetch_history()
        scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        activities = [
            event.activity_task_scheduled_event_attributes.activity_type.name
            for event in history.events
            if event.event_type == scheduled
        ]
        started = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
        children = sum(1 for event in history.events if event.event_type == started)
        return done, events, activities, children

    done, events, activities, children = time_skipping.run(scenario())

    assert done.state["status"] == "completed"
    seen = done.state["captured"]["go"]["seen"]["output"]
    assert seen == f"feature\nfeature file\n{checkout}/runs/x/\n"
    assert (
        local_state["captured"]["go"]["seen"]["output"]
        == f"feature\nfeature file\n{local}/runs/x/\n"
    )
    # Attached and removed on the host around the child workflow, as locally.
    assert activities == [
        "ll-loop.load_child",
        "ll-loop.attach_worktree",
        "ll-loop.detach_worktree",
    ]
    assert children == 1
    told = _worktree_events(events)
    path = told[0]["path"]
    assert path.startswith(str(checkout / ".loops" / ".worktrees" / "parent-go-"))
    assert told == [
        {"event": "sub_loop_worktree_attached", "branch": "feature", "path": path},
        {"event": "sub_loop_worktree_detached", "branch": "feature", "path": path},
    ]
    assert [event["event"] for event in _worktree_events(local_events)] == [
        event["event"] for event in told
    ]
    assert not Path(path).exists()
    assert "feature" in _git(checkout, "branch", "--list", "feature")
    assert not (checkout / "only-on-feature").exists()
