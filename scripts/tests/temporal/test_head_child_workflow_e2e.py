"""A HEAD sub-loop as a child workflow end to end (issue 21 item 3; spec ll-head-dialect.md
§4, §9b): a real `temporal server start-dev`, real `ll-loop worker` processes and the real
`ll-loop`. The worker is killed with SIGKILL while the child's action runs; the child
workflow goes on on the next worker (Temporal retries the cut-off action there), the
parent keeps waiting for the same child, and no child state that had finished runs again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fixtures.temporal_workers import Worker
from test_head_temporal_e2e import kill_the_worker_inside_the_child

try:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client, WorkflowHistory

    from little_loops.fsm.temporal.names import workflow_id_for
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass


async def _histories(env: dict[str, str], checkout: Path) -> list[WorkflowHistory]:
    """The parent's history, then the history of each child workflow it started."""
    client = await Client.connect(
        env["LL_TEMPORAL_ADDRESS"], namespace=env["LL_TEMPORAL_NAMESPACE"]
    )
    parent = await client.get_workflow_handle(workflow_id_for("parent", checkout)).fetch_history()
    started = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    children = [
        event.start_child_workflow_execution_initiated_event_attributes.workflow_id
        for event in parent.events
        if event.event_type == started
    ]
    return [parent] + [
        await client.get_workflow_handle(child).fetch_history() for child in children
    ]


def _actions(history: WorkflowHistory) -> list[int]:
    """The attempt of each `run_action` activity the history started, in order."""
    scheduled: dict[int, str] = {}
    attempts: list[int] = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            scheduled[event.event_id] = attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started: Any = event.activity_task_started_event_attributes
            if scheduled[started.scheduled_event_id] == "ll-loop.run_action":
                attempts.append(started.attempt)
    return attempts


def test_9b_a_worker_killed_inside_a_child_workflow_leaves_it_to_the_next_worker(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    checkout = kill_the_worker_inside_the_child(env, workers, tmp_path)

    parent, *children = asyncio.run(_histories(env, checkout))
    # One child workflow, never started again: the next worker took it over.
    assert len(children) == 1
    (child,) = children
    assert EventType.Name(child.events[-1].event_type) == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    # The parent ran only its own `report`; the child ran first, bump, the check the dead
    # worker was running (again, as a retry of the same activity), bump and check.
    assert _actions(parent) == [1]
    attempts = _actions(child)
    assert len(attempts) == 5 and attempts[:2] == [1, 1] and attempts[2] > 1, attempts
    steps = (checkout / "child-steps").read_text().splitlines()
    assert steps[:3] == ["first", "bump", "check"]
    assert steps.count("first") == 1
    assert steps[-2:] == ["bump", "check"]
    assert steps.count("bump") == 2
