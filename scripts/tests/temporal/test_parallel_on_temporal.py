"""A `parallel:` fan-out on the Temporal engine (issue 25 item 6), on the time-skipping
server: each item is a child workflow (so items spread over workers), with the same
results and routes as a local run of the same loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fixtures.cli_support import cli_env, run_cli, write_loop
from fixtures.processes import process_groups_with, processes_with
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import WorkflowHistory
    from workflow_support import STABLE_KEYS, checkout_with, run_input, runs_for, timeless

    from little_loops.fsm.temporal.payloads import ResumeSignal, RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0

CHILD = """\
name: one
initial: work
states:
  work:
    action: "echo ${context.item}-${context.item_index} >> marks; test ${context.item} != bad"
    on_success: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""

FAN = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nbad\\nc"
      loop: one
      max_workers: 2
    on_success: done
    on_partial: triage
    on_failure: failed
  triage:
    action: "echo '${captured.go.verdict}' > verdict"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""


def fan_checkout(root: Path) -> Path:
    checkout = checkout_with(root, "fan", FAN)
    write_loop(checkout, "one", CHILD)
    return checkout


def _children(history: WorkflowHistory) -> list[tuple[str, str]]:
    started = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    return [
        (attributes.workflow_type.name, attributes.workflow_id)
        for event in history.events
        if event.event_type == started
        for attributes in [event.start_child_workflow_execution_initiated_event_attributes]
    ]


def _results(state: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = json.loads(state["captured"]["go"]["results"])
    for entry in results:  # durations and log paths differ between any two runs
        for capture in entry["captured"].values():
            capture.pop("log_path", None)
    return timeless(results)  # type: ignore[no-any-return]


def test_issue25_each_item_is_a_child_workflow_with_the_local_results_and_route(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    local = fan_checkout(tmp_path / "local")
    assert run_cli(local, "run", "fan", env=cli_env(tmp_path)).returncode == 0
    local_state = json.loads((local / ".loops/.running/fan.state.json").read_text())
    checkout = fan_checkout(tmp_path / "remote")
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]], WorkflowHistory]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "fan"))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            events = (await handle.query(LoopWorkflow.events, 0)).events
            return done, events, await handle.fetch_history()

    done, events, history = time_skipping.run(scenario())

    children = _children(history)
    assert [kind for kind, _ in children] == ["ll-loop.child"] * 3
    prefix = runs.workflow_id("fan")
    places = [child_id.removeprefix(prefix + "/").split("/")[0] for _, child_id in children]
    assert sorted(places) == [
        "go#0@1",
        "go#1@1",
        "go#2@1",
    ]
    assert all(child_id.startswith(prefix + "/") for _, child_id in children)
    assert [done.state[key] for key in STABLE_KEYS] == [local_state[key] for key in STABLE_KEYS]
    assert done.state["current_state"] == "done"
    assert (checkout / "verdict").read_text() == "partial\n"
    assert _results(done.state) == _results(local_state)
    assert [(e["item"], e["verdict"]) for e in _results(done.state)] == [
        ("a", "yes"),
        ("bad", "no"),
        ("c", "yes"),
    ]
    assert sorted((checkout / "marks").read_text().split()) == ["a-0", "bad-1", "c-2"]
    ends = sorted(
        (e["item_index"], e["verdict"]) for e in events if e["event"] == "parallel_branch_end"
    )
    assert ends == [(0, "yes"), (1, "no"), (2, "yes")]
    branch_routes = sorted(
        (e["branch"], e["to"]) for e in events if e["event"] == "route" and "branch" in e
    )
    assert branch_routes == [(0, "done"), (1, "failed"), (2, "done")]
    assert "parallel" not in done.state.get("head", {})


WAITING_CHILD = """\
name: one
initial: one
states:
  one:
    action: "echo one-${context.item} >> marks"
    next: two
  two:
    action: >-
      echo two-${context.item} >> marks;
      test ${context.item} = a || while [ ! -f go ]; do sleep 0.2; : MARKER; done
    next: three
  three:
    action: "echo three-${context.item} >> marks"
    next: done
  done: {terminal: true}
"""

WAITING_FAN = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nb\\nc"
      loop: one
      max_workers: 3
    on_success: done
    on_partial: failed
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_issue25_a_stop_mid_fanout_keeps_each_place_and_the_resume_goes_on_inside(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """A stop while `b` and `c` wait in `two` (`a` finished): the run ends interrupted
    with `a`'s result and the others' places; the resume (a new workflow run) never runs
    `a` again and goes on in `two` for the others, then routes as a local run would."""
    marker = f"fanwait{tmp_path.name[-6:]}"
    checkout = checkout_with(tmp_path / "co", "fan", WAITING_FAN)
    write_loop(checkout, "one", WAITING_CHILD.replace("MARKER", marker))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, RunOutcome]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "fan"))
            for _ in range(int(WAIT_SECONDS / 0.1)):
                if len(process_groups_with(marker)) >= 2 and _a_finished(checkout):
                    break
                await asyncio.sleep(0.1)
            assert len(process_groups_with(marker)) >= 2, "b and c did not start waiting"
            await asyncio.sleep(0.5)  # (a's end reaches the workflow)
            await runs.stop("fan")
            stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            (checkout / "go").write_text("", encoding="utf-8")
            resumed = await runs.start(run_input(runs, "fan", carry=stopped.carry))
            return stopped, await asyncio.wait_for(resumed.result(), WAIT_SECONDS)

    stopped, done = time_skipping.run(scenario())

    assert (stopped.state["status"], stopped.state["current_state"]) == ("interrupted", "go")
    parallel = stopped.state["head"]["parallel"]
    assert sorted(parallel["results"]) == ["0"]
    assert {k: v[0]["current_state"] for k, v in parallel["places"].items()} == {
        "1": "two",
        "2": "two",
    }
    assert (done.state["status"], done.state["current_state"]) == ("completed", "done")
    marks = (checkout / "marks").read_text().split()
    finished_a = ["one-a", "two-a", "three-a"]
    cut_off_and_resumed = ["one-b", "one-c", "two-b", "two-c", "two-b", "two-c"]
    assert sorted(marks) == sorted([*finished_a, *cut_off_and_resumed, "three-b", "three-c"])
    assert not processes_with(marker)


def _a_finished(checkout: Path) -> bool:
    marks = checkout / "marks"
    return marks.exists() and "three-a" in marks.read_text().split()


FAIL_FAST_CHILD = """\
name: one
initial: work
states:
  work:
    action: >-
      test ${context.item} != bad || exit 1;
      while [ ! -f never ]; do sleep 0.2; : MARKER; done
    on_success: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""


def test_issue25_fail_fast_cancels_the_running_items_child_workflows(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    marker = f"fastwait{tmp_path.name[-6:]}"
    fan = WAITING_FAN.replace("max_workers: 3", "max_workers: 2\n      fail_mode: fail_fast")
    fan = fan.replace('"a\\nb\\nc"', '"slow\\nbad\\nqueued"')
    checkout = checkout_with(tmp_path / "co", "fan", fan)
    write_loop(checkout, "one", FAIL_FAST_CHILD.replace("MARKER", marker))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> RunOutcome:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "fan"))
            return await asyncio.wait_for(handle.result(), WAIT_SECONDS)

    done = time_skipping.run(scenario())

    assert (done.state["status"], done.state["current_state"]) == ("completed", "failed")
    results = json.loads(done.state["captured"]["go"]["results"])
    assert [(e["item"], e["verdict"]) for e in results] == [
        ("slow", "cancelled"),
        ("bad", "no"),
        ("queued", "cancelled"),
    ]
    assert not processes_with(marker)


HANDING_OFF_CHILD = """\
name: one
initial: work
states:
  work:
    action: >-
      if [ ${context.item} = b ] && [ ! -f handed-b ]; then touch handed-b;
      echo 'CONTEXT_HANDOFF: go on with b'; else echo ${context.item} >> marks; fi
    next: done
  done: {terminal: true}
"""


def test_a_handoff_in_an_items_child_workflow_pauses_the_run_with_its_place(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """As on the local engine (test_parallel_pauses.py): the run waits for its
    continuation with b's place and its prompt kept; resumed, it goes on inside b."""
    checkout = checkout_with(tmp_path / "co", "fan", FAN.replace("bad", "b"))
    write_loop(checkout, "one", HANDING_OFF_CHILD)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, RunOutcome]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "fan"))
            paused = None
            for _ in range(int(WAIT_SECONDS / 0.1)):  # the workflow waits, paused
                paused = await handle.query(LoopWorkflow.outcome)
                if paused is not None:
                    break
                await asyncio.sleep(0.1)
            assert paused is not None, "the run did not pause"
            await handle.signal(LoopWorkflow.resume, ResumeSignal())
            return paused, await asyncio.wait_for(handle.result(), WAIT_SECONDS)

    paused, done = time_skipping.run(scenario())

    assert (paused.state["status"], paused.state["current_state"]) == (
        "awaiting_continuation",
        "go",
    )
    place = paused.state["head"]["parallel"]["places"]["1"][0]
    assert place["handoff_context"]["prompt"] == "go on with b"
    assert (done.state["status"], done.state["current_state"]) == ("completed", "done")
    assert sorted((checkout / "marks").read_text().split()) == ["a", "b", "c"]


def test_the_recorded_branch_pause_replays_with_its_patch_and_three_children() -> None:
    """`scenario-branch-pause` (recorded with `record_histories.py`): the `BRANCH_PAUSES`
    marker, and a child workflow for a, b, and b again after the resume."""
    from history_replay import HISTORIES_DIR, load_history, replay

    from little_loops.fsm.engine.revisions import BRANCH_PAUSES

    history = load_history(HISTORIES_DIR / "scenario-branch-pause.json")
    patches = [
        payload.data.decode()
        for event in history.events
        if event.HasField("marker_recorded_event_attributes")
        for payload in event.marker_recorded_event_attributes.details["patch-data"].payloads
    ]
    children = [
        event
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]

    assert asyncio.run(replay(history)).replay_failure is None
    assert any(BRANCH_PAUSES in patch for patch in patches)
    assert len(children) == 3
