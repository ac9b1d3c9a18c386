"""What a Temporal run does on the checkout's host besides actions, as a local run does it:
the stall guard's look at the work tree, pruning the action logs to `logs_keep`, and the
`notify` command (time-skipping test server, real processes, a local run beside it)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_env, run_cli
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer
    from workflow_support import checkout_with, limited_loop, run_input, runs_for

    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker, workflow_runner
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

from little_loops.fsm.persistence import StatePersistence

WAIT_SECONDS = 120.0


def _run_on_temporal(
    time_skipping: TimeSkipping, checkout: Path, name: str
) -> tuple[RunOutcome, WorkflowHistory]:
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, WorkflowHistory]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, name))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return done, await handle.fetch_history()

    return time_skipping.run(scenario())


def _run_locally(checkout: Path, name: str, home: Path) -> dict[str, Any]:
    run_cli(checkout, "run", name, env=cli_env(home), timeout=WAIT_SECONDS)
    state = StatePersistence(name, checkout / ".loops").load_state()
    assert state is not None
    return state.to_dict()


def _activity_types(history: WorkflowHistory) -> list[str]:
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == scheduled
    ]


def _replays(time_skipping: TimeSkipping, history: WorkflowHistory) -> None:
    replayer = Replayer(workflows=[LoopWorkflow], workflow_runner=workflow_runner())
    time_skipping.run(replayer.replay_workflow(history))


# --- the stall guard looks at the work tree on the host ----------------------------------

GRIND = """\
name: grind
initial: work
max_iterations: 6
stall_threshold: 2
progress_paths: [progress.txt]
states:
  work:
    action: "ACTION; echo the same words; exit 1"
    evaluate: {type: exit_code}
    on_success: done
    on_failure: work
  done:
    terminal: true
"""


@pytest.mark.parametrize(
    ("action", "ending", "iterations"),
    [
        ("echo step >> progress.txt", "max_iterations", 6),  # files change: progress
        ("true", "stalled", 2),  # nothing changes: stalled at the threshold
    ],
    ids=["changes-files", "changes-nothing"],
)
def test_the_stall_guard_looks_at_the_work_tree_on_the_host_as_locally(
    time_skipping: TimeSkipping, tmp_path: Path, action: str, ending: str, iterations: int
) -> None:
    """Each round says the same words and fails; only the files tell work from going
    round, and the workflow sees them through the worker, as a local run does."""
    text = GRIND.replace("ACTION", action)
    local = _run_locally(checkout_with(tmp_path / "local", "grind", text), "grind", tmp_path)
    done, history = _run_on_temporal(
        time_skipping, checkout_with(tmp_path / "remote", "grind", text), "grind"
    )

    assert local["terminated_by"] == ending
    assert (done.state["status"], done.state["terminated_by"]) == (
        local["status"],
        local["terminated_by"],
    )
    assert done.state["iteration"] == local["iteration"] == iterations
    assert "ll-loop.inspect_workspace" in _activity_types(history)
    _replays(time_skipping, history)


# --- logs_keep ---------------------------------------------------------------------------

COUNTER = """\
name: counter
initial: count
max_iterations: 5
logs_keep: 2
states:
  count:
    action: "echo tick >> ticks; wc -l < ticks; echo oops >&2"
    evaluate: {type: output_numeric, operator: ge, target: 5}
    on_success: done
    on_failure: count
  done:
    terminal: true
"""


def _logs(checkout: Path) -> list[str]:
    return sorted(path.name for path in (checkout / ".loops/.running/counter.logs").iterdir())


def test_the_logs_of_the_last_logs_keep_actions_stay_on_the_host_as_locally(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    local = checkout_with(tmp_path / "local", "counter", COUNTER)
    _run_locally(local, "counter", tmp_path)
    remote = checkout_with(tmp_path / "remote", "counter", COUNTER)
    done, _ = _run_on_temporal(time_skipping, remote, "counter")

    assert done.state["status"] == "completed"
    kept = ["4-count.log", "4-count.stderr.log", "5-count.log", "5-count.stderr.log"]
    assert _logs(local) == kept
    assert _logs(remote) == _logs(local)


# --- notify ------------------------------------------------------------------------------

TOLD = (
    'notify: >-\n  echo "$LL_EVENT $LL_STATUS '
    '$(grep -o \'"status": "[a-z_]*"\' "$LL_STATE_FILE" 2>/dev/null | cut -d\'"\' -f4) '
    '$(basename "$PWD")" >> told.txt\n'
)


def test_notify_tells_the_wait_and_the_end_from_the_host_in_order(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    text = limited_loop() + TOLD
    checkout = checkout_with(tmp_path / "remote", "limited", text)
    done, history = _run_on_temporal(time_skipping, checkout, "limited")

    assert done.state["status"] == "completed"
    told = (checkout / "told.txt").read_text(encoding="utf-8").splitlines()
    # Each line has the status in LL_STATE_FILE then, and the command ran in the
    # checkout (`remote`), as a local run's does.
    assert told == [
        "limit_wait_started waiting_for_limit waiting_for_limit remote",
        "limit_wait_ended running running remote",
        "completed completed completed remote",
    ]
    state_file = checkout / ".loops/.running/limited.temporal-state.json"
    assert json.loads(state_file.read_text(encoding="utf-8"))["status"] == "completed"
    log = (checkout / ".loops/.running/limited.notify.log").read_text(encoding="utf-8")
    assert len(log.splitlines()) == 3
    assert _activity_types(history).count("ll-loop.notify") == 3
    _replays(time_skipping, history)


def test_a_loop_without_notify_calls_nothing(time_skipping: TimeSkipping, tmp_path: Path) -> None:
    checkout = checkout_with(tmp_path, "limited", limited_loop())
    done, history = _run_on_temporal(time_skipping, checkout, "limited")

    assert done.state["status"] == "completed"
    assert "ll-loop.notify" not in _activity_types(history)
    assert not (checkout / ".loops/.running/limited.notify.log").exists()
