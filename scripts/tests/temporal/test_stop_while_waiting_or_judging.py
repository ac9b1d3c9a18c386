"""A stop while the workflow judges, or waits for a usage limit's reset (issue 28; spec:
ll-loop-cli.md `stop`, `resume`), on the time-skipping test server with an in-process
worker. The judge is a stand-in activity of the same name that waits until the test
lets it answer, so the stop lands while it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio import activity
    from temporalio.worker import Worker
    from workflow_support import checkout_with, limited_loop, run_input, runs_for

    from little_loops.fsm.temporal.activities import ACTIVITIES, judge
    from little_loops.fsm.temporal.payloads import JudgeInput, RunOutcome
    from little_loops.fsm.temporal.worker import workflow_runner
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0

# `work` is judged by a report file (`return_metadata` with a path: judged on the host).
JUDGED_LOOP = """\
name: judged
initial: work
states:
  work:
    action: "true"
    evaluate:
      type: return_metadata
      path: report.json
    on_success: after
    on_failure: done
    on_error: done
  after:
    action: "touch after-ran"
    next: done
  done:
    terminal: true
"""


class HeldJudge:
    """`ll-loop.judge` that says it is judging, then answers `success` once let go."""

    def __init__(self) -> None:
        self.judging = asyncio.Event()
        self.answer = asyncio.Event()

    @activity.defn(name="ll-loop.judge")
    async def judge(self, request: JudgeInput) -> list[Any]:
        self.judging.set()
        await self.answer.wait()
        return ["success", {"judged": request.state}, None]


def test_a_stop_while_judging_lets_the_judge_finish_and_stops_before_the_next_state(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "judged", JUDGED_LOOP)
    runs = runs_for(time_skipping, checkout)
    held = HeldJudge()
    others = [fn for fn in ACTIVITIES if fn is not judge]  # the stand-in judges

    async def scenario() -> tuple[RunOutcome, RunOutcome]:
        worker = Worker(
            runs.client,
            task_queue=runs.task_queue,
            workflows=[LoopWorkflow],
            activities=[*others, held.judge],
            workflow_runner=workflow_runner(),
        )
        async with worker:
            handle = await runs.start(run_input(runs, "judged"))
            await asyncio.wait_for(held.judging.wait(), WAIT_SECONDS)
            await runs.stop("judged")
            await asyncio.sleep(0.5)  # the cancellation is in the workflow's history
            held.answer.set()
            stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            resumed = await runs.start(run_input(runs, "judged", carry=stopped.carry))
            return stopped, await asyncio.wait_for(resumed.result(), WAIT_SECONDS)

    stopped, done = time_skipping.run(scenario())
    assert (stopped.state["status"], stopped.state["terminated_by"]) == ("interrupted", "signal")
    # The judge's verdict counted (not an error from a cancelled judge): routed to `after`.
    assert stopped.state["last_result"]["verdict"] == "success"
    assert stopped.state["current_state"] == "after"
    assert done.state["status"] == "completed"
    assert (checkout / "after-ran").exists()


def test_a_stop_during_a_usage_limit_wait_ends_the_run_at_once_and_resume_waits_again(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """The wait is a workflow timer: a stop cuts it short (this held before the issue too;
    kept here so the stop's new path does not lose it)."""
    checkout = checkout_with(tmp_path / "limited", "limited", limited_loop())
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, RunOutcome, list[str]]:
        async with Worker(
            runs.client,
            task_queue=runs.task_queue,
            workflows=[LoopWorkflow],
            activities=ACTIVITIES,
            workflow_runner=workflow_runner(),
        ):
            handle = await runs.start(run_input(runs, "limited"))
            await until_event(handle, "limit_wait")
            await runs.stop("limited")
            stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            resumed = await runs.start(run_input(runs, "limited", carry=stopped.carry))
            done = await asyncio.wait_for(resumed.result(), WAIT_SECONDS)
            page = await resumed.query(LoopWorkflow.events, 0)
            return stopped, done, [event["event"] for event in page.events]

    stopped, done, events = time_skipping.run(scenario())
    assert (stopped.state["status"], stopped.state["terminated_by"]) == ("interrupted", "signal")
    assert "limit_wait" in stopped.state  # the wait under way, for the resume to finish
    assert done.state["status"] == "completed"
    assert events.count("action_start") == 2  # the limited attempt, then the one after


async def until_event(handle: Any, kind: str) -> None:
    async with asyncio.timeout(WAIT_SECONDS):
        while True:
            page = await handle.query(LoopWorkflow.events, 0)
            if any(event["event"] == kind for event in page.events):
                return
            await asyncio.sleep(0.1)
