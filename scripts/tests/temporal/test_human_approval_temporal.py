"""A person's approval on Temporal (issue 26 item 2): the wait is the `approval` signal
with a durable timer. On the time-skipping server (a one-day timeout skipped, the answer
as a signal, a stop while waiting then a resumed wait) and on the dev server through
`ll-loop worker` and the real `ll-loop run` / `approve` / `reject` commands."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from fixtures.cli_support import LL_LOOP, normalize, run_cli, write_loop
from fixtures.temporal_servers import TimeSkipping
from fixtures.temporal_workers import Worker, wait_until

try:
    from workflow_support import checkout_with, run_input, runs_for

    from little_loops.fsm.model.approval import ApprovalAnswer, PendingApproval
    from little_loops.fsm.temporal.approvals import ApprovalSignal
    from little_loops.fsm.temporal.payloads import RunOutcome
    from little_loops.fsm.temporal.worker import build_worker
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

WAIT_SECONDS = 120.0

DAY_LOOP = """\
name: daylong
initial: build
states:
  build:
    action: echo run >> builds.txt; printf candidate-7
    capture: build
    next: review
  review:
    action_type: human_approval
    action: "Ship ${captured.build.output}?"
    timeout: 86400
    on_yes: ship
    on_no: rework
    on_edit: revise
  ship:
    action: echo shipped
    next: done
  rework:
    action: "echo reworked: ${captured.review.reason}"
    next: done
  revise:
    action: "echo revised: ${captured.review.edit}"
    next: done
  done:
    terminal: true
"""


async def _events(handle: Any) -> list[dict[str, Any]]:
    page = await handle.query(LoopWorkflow.events, 0)
    return list(page.events)


async def _until_event(handle: Any, kind: str) -> None:
    async with asyncio.timeout(WAIT_SECONDS):
        while not any(event["event"] == kind for event in await _events(handle)):
            await asyncio.sleep(0.1)


def _worker(runs: Any) -> Any:
    return build_worker(runs.client, runs.task_queue)  # sub-loops' child workflow too


def _kinds(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == kind]


def test_a_one_day_timeout_is_a_durable_timer_skipped_and_routes_on_no(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "daylong", DAY_LOOP)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]]]:
        async with _worker(runs):
            handle = await runs.start(run_input(runs, "daylong"))
            outcome: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return outcome, await _events(handle)

    outcome, events = time_skipping.run(scenario())

    assert (outcome.state["status"], outcome.state["current_state"]) == ("completed", "done")
    answered = _kinds(events, "approval_answered")
    assert [(e["answer"], e["verdict"]) for e in answered] == [("timeout", "no")]
    asked = _kinds(events, "approval_needed")[0]
    waited = datetime.fromisoformat(answered[0]["ts"]) - datetime.fromisoformat(asked["ts"])
    assert timedelta(days=1) <= waited < timedelta(days=1, minutes=1)  # workflow time
    assert _kinds(events, "action_start")[-1]["action"] == "echo reworked: "


def test_the_answer_is_a_signal_and_a_stopped_wait_resumes_without_asking_again(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "daylong", DAY_LOOP)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[dict[str, Any], RunOutcome, RunOutcome, list[dict[str, Any]]]:
        # No time skipped here: the stopped run's wait must still be under way when it is
        # resumed (a skip past its deadline would time it out, rightly).
        with time_skipping.environment.auto_time_skipping_disabled():
            async with _worker(runs):
                handle = await runs.start(run_input(runs, "daylong"))
                await _until_event(handle, "approval_needed")
                waiting: dict[str, Any] = await runs.status("daylong") or {}
                await runs.stop("daylong")
                stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
                before = await _events(handle)
                resumed = await runs.start(run_input(runs, "daylong", carry=stopped.carry))
                await _until_event(resumed, "approval_waiting")
                pending = PendingApproval.from_dict(stopped.state["head"]["approval"])
                assert pending is not None
                answer = ApprovalAnswer("edit", text="ship 7b")
                await runs.answer("daylong", ApprovalSignal.of(pending, answer))
                done: RunOutcome = await asyncio.wait_for(resumed.result(), WAIT_SECONDS)
                return waiting, stopped, done, [*before, *await _events(resumed)]

    waiting, stopped, done, events = time_skipping.run(scenario())

    assert waiting["status"] == "awaiting_approval"
    assert waiting["head"]["approval"]["question"] == "Ship candidate-7?"
    assert (stopped.state["status"], stopped.state["terminated_by"]) == ("interrupted", "signal")
    assert done.state["status"] == "completed"
    # Asked once, before the stop; the resumed run waits for the same question.
    assert [e["event"] for e in events if e["event"].startswith("approval_")] == [
        "approval_needed",
        "approval_waiting",
        "approval_answered",
    ]
    assert [e["verdict"] for e in _kinds(events, "approval_answered")] == ["edit"]
    assert [e["action"] for e in _kinds(events, "action_start")][-1] == "echo revised: ship 7b"
    assert (checkout / "builds.txt").read_text() == "run\n"  # build ran once


# --- the dev server, `ll-loop worker` and the real commands ------------------------------


def _start_run(root: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(LL_LOOP), "run", "daylong"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _awaiting(root: Path, env: dict[str, str]) -> bool:
    status = run_cli(root, "status", "daylong", "--json", env=env)
    return status.returncode == 0 and json.loads(status.stdout)["status"] == "awaiting_approval"


def test_on_the_dev_server_approve_reaches_the_run_even_after_its_worker_was_killed(
    env: dict[str, str], workers: list[Worker], tmp_path: Path
) -> None:
    checkout = tmp_path / "remote"
    checkout.mkdir()
    write_loop(checkout, "daylong", DAY_LOOP)
    workers.append(Worker(checkout, env))
    run = _start_run(checkout, env)
    try:
        wait_until(lambda: _awaiting(checkout, env), "the question")
        status = run_cli(checkout, "status", "daylong", env=env).stdout
        workers[0].kill()  # kill -9 of the worker while the run waits
        workers.append(Worker(checkout, env))
        answered = run_cli(checkout, "reject", "daylong", "--reason", "not today", env=env)
        out, err = run.communicate(timeout=WAIT_SECONDS)
    finally:
        if run.poll() is None:
            run.kill()
    again = run_cli(checkout, "approve", "daylong", env=env)

    assert "Awaiting approval: Ship candidate-7?" in status
    assert answered.returncode == 0, answered.stderr
    assert normalize(answered.stdout) == "[T] Rejected (not today): Ship candidate-7?\n"
    assert run.returncode == 0, err
    assert "Loop completed: done" in out
    assert (checkout / "builds.txt").read_text() == "run\n"
    history = run_cli(checkout, "history", "daylong", "--json", env=env)
    events = json.loads(history.stdout)
    assert len(_kinds(events, "approval_needed")) == 1
    assert [e["action"] for e in _kinds(events, "action_start")][-1] == "echo reworked: not today"
    assert again.returncode == 1
    assert normalize(again.stderr) == "[T] Nothing waits for approval in loop 'daylong'\n"


def test_the_recorded_approval_history_replays_and_covers_the_signal_and_the_timer() -> None:
    """`scenario-approval` (recorded with `record_histories.py`): the `APPROVALS` patch
    marker, the timeout's durable timer, the `approval` signal that cancelled it."""
    from history_replay import HISTORIES_DIR, load_history, replay

    history = load_history(HISTORIES_DIR / "scenario-approval.json")
    kinds = [event.WhichOneof("attributes") for event in history.events]
    result = asyncio.run(replay(history))

    assert result.replay_failure is None
    for kind in (
        "marker_recorded_event_attributes",
        "timer_started_event_attributes",
        "workflow_execution_signaled_event_attributes",
        "timer_canceled_event_attributes",
    ):
        assert kind in kinds


SUB_PARENT = """\
name: parent
initial: prep
max_steps: 20
states:
  prep:
    action: echo prep >> preps.txt
    next: sub
  sub:
    loop: child
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    terminal: true
"""

SUB_CHILD = """\
name: child
initial: ask
max_steps: 10
states:
  ask:
    action_type: human_approval
    action: "Child asks?"
    timeout: 86400
    on_yes: ok
    on_no: bad
  ok:
    terminal: true
  bad:
    terminal: true
    failure: true
"""


def test_a_sub_loops_question_in_a_child_workflow_is_answered_through_the_parent(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "parent", SUB_PARENT)
    write_loop(checkout, "child", SUB_CHILD)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[dict[str, Any], RunOutcome]:
        with time_skipping.environment.auto_time_skipping_disabled():  # as above
            async with _worker(runs):
                handle = await runs.start(run_input(runs, "parent"))
                async with asyncio.timeout(WAIT_SECONDS):
                    while (waiting := await runs.status("parent") or {}).get(
                        "status"
                    ) != "awaiting_approval":
                        await asyncio.sleep(0.1)
                from little_loops.fsm.store.approval_inbox import pending_question

                pending = pending_question(waiting.get("head"))
                assert pending is not None
                await runs.answer("parent", ApprovalSignal.of(pending, ApprovalAnswer("yes")))
                done: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
                return waiting, done

    waiting, done = time_skipping.run(scenario())

    assert waiting["head"]["sub_loops"][0]["counters"]["head"]["approval"]["question"] == (
        "Child asks?"
    )
    assert (done.state["status"], done.state["current_state"]) == ("completed", "done")
    assert (checkout / "preps.txt").read_text() == "prep\n"
