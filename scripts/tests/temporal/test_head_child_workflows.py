"""On the Temporal engine a HEAD sub-loop is a child workflow (issue 21 item 3; spec
ll-head-dialect.md §4, §4.7, §9b), on the time-skipping server: the parent's history
starts a child workflow and holds none of the child's actions, which are in the child's
own history; the run ends, captures and tells its events (with `depth`) as a local run
does; `status` shows where the child is while it runs; a stop of the parent ends the
child too, and the resume goes on inside the child in a new child workflow."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fixtures.cli_support import cli_env, run_cli, write_loop
from fixtures.processes import processes_with
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client, WorkflowHistory
    from workflow_support import (
        STABLE_KEYS,
        checkout_with,
        head_checkout,
        run_input,
        runs_for,
        timeless,
        unique,
    )

    from little_loops.fsm.temporal.payloads import ResumeSignal, RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0
CHILD_STEPS = "first\nbump\ncheck\nbump\ncheck\n"


def _activities(history: WorkflowHistory) -> list[str]:
    """The activity types a history scheduled, in order."""
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.event_type == scheduled
    ]


def _children(history: WorkflowHistory) -> list[tuple[str, str]]:
    """(workflow type, workflow id) of each child workflow a history started."""
    started = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    return [
        (attributes.workflow_type.name, attributes.workflow_id)
        for event in history.events
        if event.event_type == started
        for attributes in [event.start_child_workflow_execution_initiated_event_attributes]
    ]


async def _history(client: Client, workflow_id: str) -> WorkflowHistory:
    return await client.get_workflow_handle(workflow_id).fetch_history()


def _child_trace(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The child's events (depth 1) as (event, state, verdict/to), without times."""
    return [
        (event["event"], event.get("state"), event.get("to"), event.get("terminated_by"))
        for event in events
        if event.get("depth") == 1
    ]


def test_4_a_sub_loop_is_a_child_workflow_whose_actions_are_in_its_own_history(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    local = head_checkout(tmp_path / "local")
    assert run_cli(local, "run", "parent", env=cli_env(tmp_path)).returncode == 0
    running = local / ".loops/.running"
    local_state = json.loads((running / "parent.state.json").read_text())
    local_events = [json.loads(line) for line in (running / "parent.events.jsonl").open()]
    checkout = head_checkout(tmp_path / "remote")
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]], WorkflowHistory, Any]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            events = (await handle.query(LoopWorkflow.events, 0)).events
            parent = await handle.fetch_history()
            ((_, child_id),) = _children(parent)
            return done, events, parent, await _history(runs.client, child_id)

    done, events, parent, child = time_skipping.run(scenario())

    ((kind, child_id),) = _children(parent)
    assert kind == "ll-loop.child"
    assert child_id.startswith(f"{runs.workflow_id('parent')}/count@1/")
    # The parent loads the child and runs its own `report`; the child's five actions are
    # in the child's history.
    assert _activities(parent) == ["ll-loop.load_child", "ll-loop.run_action"]
    assert _activities(child) == ["ll-loop.run_action"] * 5
    assert (checkout / "child-steps").read_text() == CHILD_STEPS
    assert [done.state[key] for key in STABLE_KEYS] == [local_state[key] for key in STABLE_KEYS]
    assert done.state["captured"]["said"]["output"] == "reached 2"
    assert timeless(done.state["captured"]) == timeless(local_state["captured"])
    assert _child_trace(events) == _child_trace(local_events)
    assert done.state["head"].get("sub_loops", []) == []


async def _only_child(client: Client, parent: Any) -> tuple[str, WorkflowHistory]:
    """The id and history of the one child workflow of `parent`'s latest run."""
    ((_, child_id),) = _children(await parent.fetch_history())
    return child_id, await _history(client, child_id)


def _closed_by(history: WorkflowHistory) -> str:
    """How a workflow run closed (the name of its last event's type)."""
    return EventType.Name(history.events[-1].event_type)


def test_9b_a_stop_of_the_parent_ends_its_child_workflow_and_the_resume_goes_on_inside_it(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    marker = unique("childwait")
    checkout = head_checkout(tmp_path, f"while [ ! -f go ]; do sleep 0.2; : {marker}; done")
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> dict[str, Any]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            for _ in range(int(WAIT_SECONDS / 0.1)):
                if processes_with(marker):
                    break
                await asyncio.sleep(0.1)
            assert processes_with(marker), "the child's check did not start"
            seen = {
                "status": await handle.query(LoopWorkflow.status),
                "events": (await handle.query(LoopWorkflow.events, 0)).events,
            }
            await runs.stop("parent")
            seen["stopped"] = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            seen["first"] = await _only_child(runs.client, handle)
            (checkout / "go").write_text("", encoding="utf-8")
            carry = seen["stopped"].carry
            resumed = await runs.start(run_input(runs, "parent", carry=carry))
            seen["done"] = await asyncio.wait_for(resumed.result(), WAIT_SECONDS)
            seen["second"] = await _only_child(runs.client, resumed)
            return seen

    seen = time_skipping.run(scenario())

    # While the child waits, the parent's status shows where the child is, and its
    # events hold the child's (depth 1) as they came.
    status = seen["status"]
    assert (status["status"], status["current_state"]) == ("running", "count")
    (place,) = status["head"]["sub_loops"]
    assert (place["loop_name"], place["current_state"]) == ("child", "check")
    entered = [e["state"] for e in seen["events"] if e["event"] == "state_enter"]
    assert entered == ["count", "first", "bump", "check"]
    assert [e.get("depth") for e in seen["events"] if e["event"] == "state_enter"] == [
        None,
        1,
        1,
        1,
    ]
    # The stop ended the child workflow (its action cancelled) and the parent, the
    # child's place kept; the resume ran a new child workflow from `check` on.
    stopped, done = seen["stopped"], seen["done"]
    assert stopped.state["status"] == "interrupted"
    (saved,) = stopped.state["head"]["sub_loops"]
    assert saved["current_state"] == "check"
    (first_id, first), (second_id, second) = seen["first"], seen["second"]
    assert first_id != second_id
    assert _closed_by(first) == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    assert "EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED" in {
        EventType.Name(event.event_type) for event in first.events
    }
    assert _activities(first) == ["ll-loop.run_action"] * 3  # first, bump, check (cut off)
    assert _activities(second) == ["ll-loop.run_action"] * 3  # check, bump, check
    assert done.state["status"] == "completed"
    assert done.state["captured"]["said"]["output"] == "reached 2"
    steps = (checkout / "child-steps").read_text().splitlines()
    assert steps == ["first", "bump", "check", "check", "bump", "check"]


HANDOFF_PARENT = """\
name: parent
initial: before
states:
  before:
    action: "echo before >> marks"
    next: go
  go:
    loop: child
    on_yes: after
    on_no: failed
  after:
    action: "echo after >> marks"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""

HANDOFF_CHILD = """\
name: child
initial: one
states:
  one:
    action: "echo one >> marks"
    next: ask
  ask:
    action: >-
      echo ask >> marks;
      test -f handed-off || { touch handed-off; echo 'CONTEXT_HANDOFF: carry on'; }
    next: done
  done:
    terminal: true
"""


def test_9f_a_handoff_in_a_child_workflow_pauses_the_run_and_resume_reruns_only_its_state(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "parent", HANDOFF_PARENT)
    write_loop(checkout, "child", HANDOFF_CHILD)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, RunOutcome, WorkflowHistory]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            paused = None
            for _ in range(int(WAIT_SECONDS / 0.1)):
                paused = await handle.query(LoopWorkflow.outcome)
                if paused is not None:
                    break
                await asyncio.sleep(0.1)
            assert paused is not None, "the run did not pause"
            await handle.signal(LoopWorkflow.resume, ResumeSignal())
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return paused, done, await handle.fetch_history()

    paused, done, history = time_skipping.run(scenario())

    assert (paused.state["status"], paused.state["current_state"]) == (
        "awaiting_continuation",
        "go",
    )
    (record,) = paused.state["head"]["sub_loops"]
    assert record["current_state"] == "ask"
    assert record["handoff_context"] == {"prompt": "carry on", "count": 1, "state": "ask"}
    assert done.state["status"] == "completed"
    assert done.state["current_state"] == "done"
    # Two child workflows, one per entry into the child; the second starts at `ask`.
    assert [kind for kind, _ in _children(history)] == ["ll-loop.child", "ll-loop.child"]
    marks = (checkout / "marks").read_text().splitlines()
    assert marks == ["before", "one", "ask", "ask", "after"]


NESTED_PARENT = """\
name: parent
initial: go
states:
  go:
    loop: mid
    on_yes: done
    on_no: failed
  done: {terminal: true}
  failed: {terminal: true}
"""

NESTED_MID = """\
name: mid
initial: before
states:
  before:
    action: "echo mid-before >> marks"
    next: inner
  inner:
    loop: leaf
    on_yes: after
    on_no: failed
  after:
    action: "echo mid-after >> marks"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""

NESTED_LEAF = """\
name: leaf
initial: one
states:
  one:
    action: "echo leaf-one >> marks"
    next: wait
  wait:
    action: "echo leaf-wait >> marks; WAIT"
    next: done
  done: {terminal: true}
"""


def test_9b_a_grandchild_is_a_child_workflow_of_the_child_and_resume_lands_inside_it(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    marker = unique("leafwait")
    checkout = checkout_with(tmp_path, "parent", NESTED_PARENT)
    write_loop(checkout, "mid", NESTED_MID)
    wait = f"while [ ! -f go ]; do sleep 0.2; : {marker}; done"
    write_loop(checkout, "leaf", NESTED_LEAF.replace("WAIT", wait))
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> dict[str, Any]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            for _ in range(int(WAIT_SECONDS / 0.1)):
                if processes_with(marker):
                    break
                await asyncio.sleep(0.1)
            assert processes_with(marker), "the leaf's wait did not start"
            # The grandchild's events reach the parent after its action has started (a
            # loaded machine showed the query a moment before `wait`'s state_enter).
            events: list[dict[str, Any]] = []
            for _ in range(int(WAIT_SECONDS / 0.1)):
                events = (await handle.query(LoopWorkflow.events, 0)).events
                if any(e["event"] == "state_enter" and e["state"] == "wait" for e in events):
                    break
                await asyncio.sleep(0.1)
            seen: dict[str, Any] = {"events": events}
            await runs.stop("parent")
            seen["stopped"] = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            _, mid = await _only_child(runs.client, handle)
            seen["grandchildren"] = _children(mid)
            (checkout / "go").write_text("", encoding="utf-8")
            carry = seen["stopped"].carry
            resumed = await runs.start(run_input(runs, "parent", carry=carry))
            seen["done"] = await asyncio.wait_for(resumed.result(), WAIT_SECONDS)
            return seen

    seen = time_skipping.run(scenario())

    entered = [(e["state"], e.get("depth")) for e in seen["events"] if e["event"] == "state_enter"]
    assert entered == [("go", None), ("before", 1), ("inner", 1), ("one", 2), ("wait", 2)]
    ((kind, _),) = seen["grandchildren"]
    assert kind == "ll-loop.child"
    stopped = seen["stopped"]
    assert stopped.state["status"] == "interrupted"
    mid_place, leaf_place = stopped.state["head"]["sub_loops"]
    assert (mid_place["loop_name"], mid_place["current_state"]) == ("mid", "inner")
    assert (leaf_place["loop_name"], leaf_place["current_state"]) == ("leaf", "wait")
    assert seen["done"].state["status"] == "completed"
    marks = (checkout / "marks").read_text().splitlines()
    assert marks == ["mid-before", "leaf-one", "leaf-wait", "leaf-wait", "mid-after"]
