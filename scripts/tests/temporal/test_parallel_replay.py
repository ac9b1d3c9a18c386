"""A recorded `parallel:` fan-out replays (issue 25 item 6): `parallel-demo`'s history
starts one child workflow per item, three at once, behind the `PARALLEL_BRANCHES` patch,
and a workflow that ran the items one at a time would not replay it."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.external_tools import require_tool
from fixtures.temporal_servers import find_temporalio

try:
    from history_replay import load_history, replay
    from parallel_replay_mutant import OneItemAtATime
except ImportError:  # no temporalio: `needs_temporalio` skips, or fails in CI, saying so
    pass

PARALLEL_DEMO = Path(__file__).resolve().parent / "histories" / "parallel-demo.json"


@pytest.fixture(autouse=True)
def needs_temporalio() -> None:
    require_tool(find_temporalio, why="replaying workflow histories needs temporalio")


def test_issue25_the_recorded_fanout_starts_three_child_workflows_at_once() -> None:
    history = json.loads(PARALLEL_DEMO.read_text(encoding="utf-8"))
    kinds = [event["eventType"] for event in history["events"]]
    started = "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED"
    assert kinds.count(started) == 3
    # all three started before any of them completed
    first_done = kinds.index("EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED")
    assert kinds[:first_done].count(started) == 3
    assert _patches(history) >= {"ll-loop:2026-11:parallel-branches"}


def _patches(history: dict[str, Any]) -> set[str]:
    """The `workflow.patched` names a history's markers record."""
    found = set()
    for event in history["events"]:
        details = event.get("markerRecordedEventAttributes", {}).get("details", {})
        for payload in details.get("patch-data", {}).get("payloads", []):
            found.add(json.loads(base64.b64decode(payload["data"]))["id"])
    return found


def test_issue25_the_recorded_fanout_replays_and_a_one_at_a_time_one_does_not() -> None:
    assert asyncio.run(replay(load_history(PARALLEL_DEMO))).replay_failure is None
    serial = asyncio.run(replay(load_history(PARALLEL_DEMO), OneItemAtATime))
    assert serial.replay_failure is not None
