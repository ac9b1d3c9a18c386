"""Runs recorded before a sub-loop became a child workflow keep running their children in
their own workflow when replayed (issue 21 item 3, spec ll-head-dialect.md §4): the
`CHILD_WORKFLOWS` patch is what keeps `subloop-demo`'s recorded history replaying."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fixtures.external_tools import require_tool
from fixtures.temporal_servers import find_temporalio

try:
    from child_replay_mutant import UnguardedChildWorkflows
    from history_replay import load_history, replay
except ImportError:  # no temporalio: `needs_temporalio` skips, or fails in CI, saying so
    pass

SUBLOOP_DEMO = Path(__file__).resolve().parent / "histories" / "subloop-demo.json"


@pytest.fixture(autouse=True)
def needs_temporalio() -> None:
    require_tool(find_temporalio, why="replaying workflow histories needs temporalio")


def test_4_the_recorded_subloop_demo_ran_its_child_inside_its_own_workflow() -> None:
    history = json.loads(SUBLOOP_DEMO.read_text(encoding="utf-8"))
    kinds = {event["eventType"] for event in history["events"]}

    assert "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED" not in kinds
    assert "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" in kinds


def test_4_the_child_workflow_patch_is_what_keeps_the_recorded_subloop_demo_replaying() -> None:
    assert asyncio.run(replay(load_history(SUBLOOP_DEMO))).replay_failure is None

    unguarded = asyncio.run(replay(load_history(SUBLOOP_DEMO), UnguardedChildWorkflows))

    assert unguarded.replay_failure is not None
    assert "nondetermin" in str(unguarded.replay_failure).lower()


def test_4_a_history_recorded_since_then_starts_the_child_workflow_and_replays() -> None:
    path = SUBLOOP_DEMO.with_name("scenario-subloop-child-workflow.json")
    kinds = {event["eventType"] for event in json.loads(path.read_text(encoding="utf-8"))["events"]}

    assert "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED" in kinds
    assert "EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED" in kinds
    assert "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED" in kinds  # the child's progress
    assert asyncio.run(replay(load_history(path))).replay_failure is None
