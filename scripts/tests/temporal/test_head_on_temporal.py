"""Loops in little-loops' current dialect (HEAD) on the Temporal engine, on the time-skipping
server: the workflow builds them as HEAD loops (yes/no routes, failure terminals), loads a
sub-loop's file on the checkout's host and runs the child's states as part of the run, and a
stop while the child runs resumes inside the child (spec/ll-head-dialect.md §4, §9b), as a
local run does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fixtures.cli_support import cli_env, run_cli
from fixtures.processes import processes_with
from fixtures.temporal_servers import TimeSkipping

try:
    from workflow_support import (
        STABLE_KEYS,
        head_checkout,
        run_input,
        runs_for,
        timeless,
        unique,
    )

    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0


def _events(handle: Any) -> Any:
    return handle.query(LoopWorkflow.events, 0)


def test_a_head_loop_with_a_sub_loop_ends_on_temporal_as_it_does_locally(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    local = head_checkout(tmp_path / "local")
    assert run_cli(local, "run", "parent", env=cli_env(tmp_path)).returncode == 0
    local_state = json.loads((local / ".loops/.running/parent.state.json").read_text())
    checkout = head_checkout(tmp_path / "remote")
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]]]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return done, (await _events(handle)).events

    done, events = time_skipping.run(scenario())

    assert [done.state[key] for key in STABLE_KEYS] == [local_state[key] for key in STABLE_KEYS]
    assert done.state["current_state"] == "done"
    assert done.state["captured"]["said"]["output"] == "reached 2"
    assert timeless(done.state["captured"]) == timeless(local_state["captured"])
    child_events = [event for event in events if event.get("depth") == 1]
    assert {event["event"] for event in child_events} >= {"state_enter", "route"}
    assert (checkout / "child-steps").read_text() == "first\nbump\ncheck\nbump\ncheck\n"


def test_a_stop_inside_a_child_resumes_inside_the_child_without_running_its_finished_states(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    marker = unique("childwait")
    wait = f"while [ ! -f go ]; do sleep 0.2; : {marker}; done"
    checkout = head_checkout(tmp_path, wait)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, RunOutcome]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "parent"))
            for _ in range(int(WAIT_SECONDS / 0.1)):
                if processes_with(marker):
                    break
                await asyncio.sleep(0.1)
            assert processes_with(marker), "the child's check did not start"
            await runs.stop("parent")
            stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            (checkout / "go").write_text("", encoding="utf-8")
            resumed = await runs.start(run_input(runs, "parent", carry=stopped.carry))
            return stopped, await asyncio.wait_for(resumed.result(), WAIT_SECONDS)

    stopped, done = time_skipping.run(scenario())

    assert stopped.state["status"] == "interrupted"
    assert stopped.state["current_state"] == "count"
    (saved_child,) = stopped.state["head"]["sub_loops"]
    assert saved_child["current_state"] == "check"
    assert done.state["status"] == "completed"
    assert done.state["captured"]["said"]["output"] == "reached 2"
    # `first` and the first `bump` finished before the stop: neither ran again; the
    # check the stop cut off ran again.
    steps = (checkout / "child-steps").read_text().splitlines()
    assert steps == ["first", "bump", "check", "check", "bump", "check"]
