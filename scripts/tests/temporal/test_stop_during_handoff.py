"""A `stop` that lands while a run hands off ends the workflow instead of leaving it
waiting for a `resume` that may never come (issue 29 item 12), and the run can still be
resumed: the continuation is kept and the resumed run finishes the loop.

The loop's action asks for a fresh session (`CONTEXT_HANDOFF`) with `on_handoff: spawn`:
the worker starts the continuation session, writing its output to the run's
`<loop>.handoff.log`. Here that log is a named pipe that nobody reads until the stop has
been asked for, so the hand-off is still under way when the stop lands (real files, real
processes; a stand-in `claude` that only records its arguments)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.client import WorkflowHandle
    from workflow_support import checkout_with, run_input, runs_for, unique

    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 60.0  # a failure's bound only: a run that does not end waits this long

SPAWNING_LOOP = """\
name: spawned
initial: work
on_handoff: spawn
states:
  work:
    action: >-
      if [ -f marker ]; then echo resumed; else touch marker;
      echo "CONTEXT_HANDOFF: Continue with module B"; fi
    on_success: done
    on_failure: work
  done:
    terminal: true
"""

RECORDING_CLAUDE = """\
#!{python}
import json, sys
with open({calls!r}, "a") as calls:
    calls.write(json.dumps(sys.argv[1:]) + "\\n")
"""


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `claude` that records each call's arguments in `calls.jsonl` (the worker runs
    here, in this process: it finds the stand-in through `LL_CLAUDE_BIN`)."""
    calls = tmp_path / "calls.jsonl"
    program = tmp_path / "bin" / "claude"
    program.parent.mkdir()
    program.write_text(RECORDING_CLAUDE.format(python=sys.executable, calls=str(calls)))
    program.chmod(0o755)
    monkeypatch.setenv("LL_CLAUDE_BIN", str(program))
    return calls


@contextlib.contextmanager
def held_handoff_log(checkout: Path) -> Iterator[Any]:
    """The run's handoff log as a named pipe: a session being spawned waits to open it
    until `release()` opens its reading end (kept open, then drained and closed)."""
    running = checkout / ".loops" / ".running"
    running.mkdir(parents=True, exist_ok=True)
    fifo = running / "spawned.handoff.log"
    os.mkfifo(fifo)
    reader: list[int] = []

    def release() -> None:
        if not reader:
            reader.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))

    try:
        yield release
    finally:
        for fd in reader:
            with contextlib.suppress(BlockingIOError):
                os.read(fd, 1 << 16)
            os.close(fd)


async def _wait_for_event(handle: WorkflowHandle[Any, Any], kind: str) -> None:
    for _ in range(int(WAIT_SECONDS / 0.05)):
        page = await handle.query(LoopWorkflow.events, 0)
        if any(event["event"] == kind for event in page.events):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind} event in {WAIT_SECONDS}s")


async def _until_taken(handle: WorkflowHandle[Any, Any], what: str) -> None:
    """Wait until the workflow's history shows a workflow task completed after the stop
    was asked for (a cancel request, or a signal): the run has taken the stop, so it
    lands while the hand-off is still held."""
    for _ in range(int(WAIT_SECONDS / 0.05)):
        events = [event async for event in handle.fetch_history_events()]
        asked = [
            index
            for index, event in enumerate(events)
            if event.HasField("workflow_execution_cancel_requested_event_attributes")
            or event.HasField("workflow_execution_signaled_event_attributes")
        ]
        later = events[asked[0] + 1 :] if asked else []
        if any(event.HasField("workflow_task_completed_event_attributes") for event in later):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the workflow never took {what} in {WAIT_SECONDS}s")


def test_a_stop_during_the_handoff_ends_the_workflow_and_resume_finishes_the_loop(
    time_skipping: TimeSkipping, tmp_path: Path, claude: Path
) -> None:
    checkout = checkout_with(tmp_path / "co", "spawned", SPAWNING_LOOP)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, RunOutcome]:
        with held_handoff_log(checkout) as release:
            async with build_worker(runs.client, runs.task_queue):
                try:
                    handle = await runs.start(run_input(runs, "spawned"))
                    await _wait_for_event(handle, "handoff_detected")
                    await runs.stop("spawned")
                    await _until_taken(handle, "the stop")
                    release()
                    # Without the fix the workflow waits for `resume` here, until the timeout.
                    stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
                    again = await runs.start(run_input(runs, "spawned", carry=stopped.carry))
                    done: RunOutcome = await asyncio.wait_for(again.result(), WAIT_SECONDS)
                finally:
                    release()  # a test failing early must not leave the worker's thread held
        return stopped, done

    stopped, done = time_skipping.run(scenario())
    # Stopped while handing off: the run stays paused on its handoff (as one stopped
    # while paused), with its continuation and no error, and the workflow has ended.
    assert (stopped.state["status"], stopped.state["terminated_by"]) == (
        "awaiting_continuation",
        "handoff",
    )
    assert stopped.state["continuation_prompt"] == "Continue with module B"
    assert "error" not in stopped.state
    assert stopped.result["final_state"] == "work"
    # The resumed run goes on from the handoff and finishes the loop.
    assert (done.state["status"], done.state["iteration"]) == ("completed", 2)
    assert done.result["terminated_by"] == "terminal"
    log = checkout / ".loops" / ".running" / "spawned.logs" / "2-work.log"
    assert log.read_text(encoding="utf-8") == "resumed\n"


PARENT_LOOP = """\
name: parent
initial: go
states:
  go:
    loop: child
    on_yes: done
    on_no: done
    on_error: fallback
  fallback:
    next: done
  done: {terminal: true}
"""

CHILD_LOOP = """\
name: child
initial: end
states:
  end: {terminal: true}
"""


def test_a_host_activity_that_fails_is_not_taken_for_a_stop(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """The counterpart: a host activity (here finding the sub-loop's file) that no worker
    takes fails the state with the reason; the run goes on by the state's `on_error`."""
    checkout = checkout_with(tmp_path / "co", "parent", PARENT_LOOP)
    checkout_with(checkout, "child", CHILD_LOOP)
    runs = runs_for(time_skipping, checkout)
    run = run_input(runs, "parent", schedule_to_start_seconds=1.0)
    run.task_queue = unique("nobody-polls")  # the activities' queue has no worker

    async def scenario() -> RunOutcome:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run)
            return await asyncio.wait_for(handle.result(), WAIT_SECONDS)

    outcome = time_skipping.run(scenario())
    # The state failed with the reason and its `on_error` route was taken: the run went on.
    assert (outcome.state["status"], outcome.state["terminated_by"]) == ("completed", "terminal")
    assert outcome.state["head"]["edge_counts"] == {"go->fallback": 1, "fallback->done": 1}
    assert outcome.state["captured"]["go"] == {
        "error": f"sub-loop 'child': no worker took the activity on task queue "
        f"'{run.task_queue}' within 1s (is `ll-loop worker` running in that checkout?)",
        "terminated_by": "error",
    }
