"""The stop kept from the workflow's state is an upgrade guarded by `workflow.patched`
(`STOP_KEPT`; docs/scaling.md §9, issue 28): a run recorded before it, whose stop was
lost, replays as it ran; the run recorded after it keeps replaying the new way.

`scenario-stop-lost-before-stop-kept.json` was recorded with the code before the change
(the stop arrived as the action ended: the run went on to `completed`);
`scenario-stop-kept.json` with the change (`history_replay.record_kept_stop`). Both replay
against the current workflow (`test_history_replay.py` replays every history)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fixtures.external_tools import require_tool
from fixtures.temporal_servers import find_temporalio

try:
    from history_replay import load_history, replay
    from stop_kept_mutants import StopNotKept, UnguardedStopKept
except ImportError:  # no temporalio: `needs_temporalio` skips, or fails in CI, saying so
    pass

HISTORIES_DIR = Path(__file__).resolve().parent / "histories"
LOST = HISTORIES_DIR / "scenario-stop-lost-before-stop-kept.json"
KEPT = HISTORIES_DIR / "scenario-stop-kept.json"


@pytest.fixture(autouse=True)
def needs_temporalio() -> None:
    def found() -> Path:
        find_temporalio()
        return HISTORIES_DIR

    require_tool(found, why="replaying workflow histories needs temporalio")


def activities_and_markers(path: Path) -> list[str]:
    history = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for event in history["events"]:
        scheduled = event.get("activityTaskScheduledEventAttributes")
        marker = event.get("markerRecordedEventAttributes")
        if scheduled is not None:
            found.append(scheduled["activityId"])
        elif marker is not None:
            found.append(marker["markerName"])
        elif event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED":
            found.append("stop")
    return found


def test_the_recorded_histories_are_the_lost_stop_and_the_kept_one() -> None:
    assert activities_and_markers(LOST) == ["1:first:action", "stop", "2:second:action"]
    assert activities_and_markers(KEPT) == ["1:first:action", "stop", "core_patch"]


def test_a_run_recorded_before_the_change_fails_to_replay_without_the_guard() -> None:
    """What the guard is for: the unguarded change would stop where the run went on."""
    result = asyncio.run(replay(load_history(LOST), UnguardedStopKept))

    assert result.replay_failure is not None
    assert "nondetermin" in str(result.replay_failure).lower()


def test_a_run_that_kept_its_stop_fails_to_replay_on_code_that_loses_it() -> None:
    result = asyncio.run(replay(load_history(KEPT), StopNotKept))

    assert result.replay_failure is not None
