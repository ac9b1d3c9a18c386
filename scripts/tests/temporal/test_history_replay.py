"""Recorded histories of the example loops replay against the current workflow code
(issue 15 item 3; history_replay.py says why and how to record them again)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from fixtures.external_tools import require_tool
from fixtures.temporal_servers import DevServer, find_temporalio

try:
    from history_replay import (
        example_history_files,
        examples_without_claude,
        load_history,
        project_with_examples,
        record,
        replay,
    )
    from replay_mutant import FewerActions, OtherStateSameSlot, UnguardedRevisions
    from temporalio.client import Client
except ImportError:  # no temporalio: `needs_temporalio` skips, or fails in CI, saying so
    pass

HISTORIES_DIR = Path(__file__).resolve().parent / "histories"


@pytest.fixture(autouse=True)
def needs_temporalio() -> None:
    def found() -> Path:
        find_temporalio()
        return HISTORIES_DIR

    require_tool(found, why="replaying workflow histories needs temporalio")


@pytest.mark.parametrize("path", sorted(HISTORIES_DIR.glob("*.json")), ids=lambda path: path.stem)
def test_recorded_history_replays_against_the_current_workflow(path: Path) -> None:
    result = asyncio.run(replay(load_history(path)))

    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_every_example_that_runs_without_claude_has_a_recorded_history() -> None:
    recorded = {path.stem for path in example_history_files()}

    assert recorded == set(examples_without_claude()), (
        "record them: python scripts/tests/temporal/record_histories.py"
    )


def test_a_routing_change_that_runs_fewer_actions_fails_the_replay() -> None:
    result = asyncio.run(replay(load_history(HISTORIES_DIR / "hello.json"), FewerActions))

    assert result.replay_failure is not None
    assert "nondetermin" in str(result.replay_failure).lower()


def test_a_routing_change_that_runs_another_state_in_the_same_place_fails_the_replay() -> None:
    history = load_history(HISTORIES_DIR / "hello.json")
    result = asyncio.run(replay(history, OtherStateSameSlot))

    assert result.replay_failure is not None
    # Same number of actions: what tells them apart is the state in the activity id.
    assert type(result.replay_failure).__name__ == "NondeterminismError"
    assert (
        "Nondeterminism error: Activity id of scheduled event '4:wave:action' does not match "
        "activity id of activity command '4:bump:action'"
    ) in str(result.replay_failure)


def test_the_run_cores_changes_are_what_keeps_older_histories_replaying() -> None:
    """`stall-demo` was recorded before the stall guard asked the host for the work tree
    (`revisions.WORKSPACE_FINGERPRINT`). It replays (above) because the workflow answers
    `workflow.patched`; taking the change unguarded breaks that replay."""
    history = load_history(HISTORIES_DIR / "stall-demo.json")
    result = asyncio.run(replay(history, UnguardedRevisions))

    assert result.replay_failure is not None
    assert "inspect_workspace" in str(result.replay_failure)


def test_a_fresh_recording_replays(temporal_dev_server: DevServer, tmp_path: Path) -> None:
    async def scenario() -> object:
        client = await Client.connect(
            temporal_dev_server.address, namespace=temporal_dev_server.namespace
        )
        return await record(client, project_with_examples(tmp_path), "hello")

    recording = asyncio.run(scenario())

    assert recording.outcome.state["status"] == "completed"
    assert recording.resumes == 1  # hello paused once on its handoff and was resumed
    assert asyncio.run(replay(recording.history)).replay_failure is None


@pytest.mark.parametrize(
    ("name", "event_type"),
    [
        ("scenario-continue-as-new-first", "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"),
        ("scenario-stop", "EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED"),
        ("hello", "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"),
    ],
)
def test_a_recorded_history_covers_the_path_it_is_kept_for(name: str, event_type: str) -> None:
    history = json.loads((HISTORIES_DIR / f"{name}.json").read_text(encoding="utf-8"))

    assert event_type in {event["eventType"] for event in history["events"]}
