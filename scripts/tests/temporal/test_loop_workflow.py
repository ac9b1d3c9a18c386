"""The loop workflow (fsm/temporal/workflow.py) on the time-skipping test server: it drives
the same run core as a local run, with real action processes in a temporary checkout."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

from fixtures.cli_support import cli_env, run_cli
from fixtures.processes import processes_with
from fixtures.temporal_servers import TimeSkipping

try:
    from temporalio.client import WorkflowHandle
    from temporalio.worker import Replayer
    from workflow_support import checkout_with, limited_loop, run_input, runs_for, unique

    from little_loops.fsm.temporal.payloads import ResumeSignal, RunOutcome
    from little_loops.fsm.temporal.worker import build_worker, workflow_runner
    from little_loops.fsm.temporal.workflow import LoopWorkflow
except ImportError:  # no temporalio: the server fixture skips, or fails in CI, saying so
    pass

from little_loops.fsm.persistence import StatePersistence

HELLO = Path(__file__).resolve().parents[3] / ".loops" / "hello.yaml"
WAIT_SECONDS = 120.0
# State-file fields that differ between any two runs (times, process ids).
VOLATILE = ("started_at", "updated_at", "pid", "elapsed_ms", "duration_ms", "host", "resumed_at")


def _stable(value: Any, checkout: Path) -> Any:
    """`value` without what differs between runs; paths relative to the checkout."""
    if isinstance(value, dict):
        return {k: _stable(v, checkout) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v, checkout) for v in value]
    if isinstance(value, str):
        return value.replace(str(checkout.resolve()), "<checkout>")
    return value


async def _wait_for_event(handle: WorkflowHandle[Any, Any], kind: str) -> dict[str, Any]:
    for _ in range(int(WAIT_SECONDS / 0.1)):
        page = await handle.query(LoopWorkflow.events, 0)
        found = [event for event in page.events if event["event"] == kind]
        if found:
            return found[-1]
        await asyncio.sleep(0.1)
    raise AssertionError(f"no {kind} event in {WAIT_SECONDS}s")


def test_hello_pauses_with_the_local_state_and_resumes_by_signal_with_a_new_prompt(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    text = HELLO.read_text(encoding="utf-8")
    local = checkout_with(tmp_path / "local", "hello", text)
    assert run_cli(local, "run", "hello", env=cli_env(tmp_path)).returncode == 3
    local_state = StatePersistence("hello", local / ".loops").load_state()
    assert local_state is not None
    checkout = checkout_with(tmp_path / "remote", "hello", text)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, dict[str, Any], RunOutcome, Any]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "hello"))
            paused = await runs.follow("hello", lambda event: None)
            status = await runs.status("hello")
            await runs.resume("hello", ResumeSignal(prompt="wave goodbye"))
            done = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            return paused, status or {}, done, await handle.fetch_history()

    paused, status, done, history = time_skipping.run(scenario())
    assert paused.result["terminated_by"] == "handoff"
    assert status["status"] == "awaiting_continuation"
    assert _stable(status, checkout) == _stable(local_state.to_dict(), local)
    assert done.state["status"] == "completed"
    assert done.state["iteration"] == 7
    wave_log = checkout / ".loops" / ".running" / "hello.logs" / "7-wave.log"
    assert wave_log.read_text(encoding="utf-8") == "resumed: wave goodbye\n"
    # The recorded history replays on the workflow code as it is (no nondeterminism).
    replayer = Replayer(workflows=[LoopWorkflow], workflow_runner=workflow_runner())
    time_skipping.run(replayer.replay_workflow(history))


SLOW_LOOP = """\
name: slow
initial: work
states:
  work:
    action: "if [ -f go ]; then echo done; else echo waiting; sleep 300; fi"
    next: done
  done:
    terminal: true
"""


def test_a_stop_during_a_long_action_kills_it_and_a_resume_runs_the_state_again(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    marker = unique("slow")
    checkout = checkout_with(
        tmp_path, "slow", SLOW_LOOP.replace("sleep 300", f"sleep 300; : {marker}")
    )
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[int], RunOutcome]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "slow"))
            await _wait_for_event(handle, "action_start")
            for _ in range(int(WAIT_SECONDS / 0.1)):
                if processes_with(marker):
                    break
                await asyncio.sleep(0.1)
            assert processes_with(marker), "the action did not start"
            await runs.stop("slow")
            stopped: RunOutcome = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            left = processes_with(marker)
            (checkout / "go").write_text("", encoding="utf-8")
            carry = stopped.carry
            resumed = await runs.start(run_input(runs, "slow", carry=carry))
            return stopped, left, await asyncio.wait_for(resumed.result(), WAIT_SECONDS)

    stopped, left, done = time_skipping.run(scenario())
    assert (stopped.state["status"], stopped.state["terminated_by"]) == ("interrupted", "signal")
    assert stopped.state["phase"] == "entered"
    assert left == []  # the action's process group was killed with the activity
    assert done.state["status"] == "completed"
    assert done.state["iteration"] == 1  # the cut-off `work` ran again under its number
    log = checkout / ".loops" / ".running" / "slow.logs" / "1-work.log"
    assert log.read_text(encoding="utf-8") == "done\n"


# 150 states without an action: the run is all workflow code and history.
TICKS_LOOP = """\
name: ticks
initial: tick
max_iterations: 150
states:
  tick:
    evaluate:
      type: output_numeric
      source: "${state.iteration}"
      operator: ge
      target: 100000
    on_success: done
    on_failure: tock
  tock:
    next: tick
  done:
    terminal: true
"""


def test_a_long_run_continues_as_new_and_keeps_counting(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    text = TICKS_LOOP
    checkout = checkout_with(tmp_path, "ticks", text)
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]], int]:
        seen: list[dict[str, Any]] = []
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "ticks", continue_as_new_every=50))
            outcome = await asyncio.wait_for(runs.follow("ticks", seen.append), WAIT_SECONDS)
            description = await handle.describe()
            return outcome, seen, description.run_id != handle.first_execution_run_id

    outcome, seen, continued = time_skipping.run(scenario())
    assert continued  # the run that ended is not the one that started
    assert (outcome.result["terminated_by"], outcome.result["iterations"]) == (
        "max_iterations",
        150,
    )
    kinds = [event["event"] for event in seen]
    assert kinds.count("state_enter") == 150
    assert kinds.count("loop_start") == 1 and kinds.count("loop_complete") == 1
    entered = [event["iteration"] for event in seen if event["event"] == "state_enter"]
    assert entered == list(range(1, 151))


def test_a_checkout_without_a_worker_fails_the_run_instead_of_waiting(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "slow", SLOW_LOOP)
    runs = runs_for(time_skipping, checkout)
    run = run_input(runs, "slow", schedule_to_start_seconds=2.0)  # waited out for real
    run.task_queue = unique("nobody-polls")  # the activities' queue has no worker

    async def scenario() -> RunOutcome:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run)
            return await asyncio.wait_for(handle.result(), WAIT_SECONDS)

    outcome = time_skipping.run(scenario())
    assert outcome.state["status"] == "failed"
    assert outcome.state["error"] == (
        f"no worker took the activity on task queue '{run.task_queue}' within 2s "
        "(is `ll-loop worker` running in that checkout?)"
    )


BIG_OUTPUT_LOOP = """\
name: big
initial: shout
checkpoint: git
states:
  shout:
    action: "echo needle; head -c 300000 /dev/zero | tr '\\\\0' x; echo"
    evaluate:
      type: output_contains
      pattern: needle
    on_success: done
    on_failure: lost
  done:
    terminal: true
  lost:
    terminal: true
"""


def test_a_long_output_is_judged_from_its_log_on_the_host_and_checkpointed(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    checkout = checkout_with(tmp_path, "big", BIG_OUTPUT_LOOP)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(checkout)], check=True)
    subprocess.run([*git, "-C", str(checkout), "commit", "-q", "--allow-empty", "-m", "start"])
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]]]:
        seen: list[dict[str, Any]] = []
        async with build_worker(runs.client, runs.task_queue):
            await runs.start(run_input(runs, "big"))
            return await asyncio.wait_for(runs.follow("big", seen.append), WAIT_SECONDS), seen

    outcome, seen = time_skipping.run(scenario())
    # The tail that reached the server lacks the needle; the judge read the whole log.
    assert "needle" not in outcome.state["prev_result"]["output"]
    evaluate = next(event for event in seen if event["event"] == "evaluate")
    assert evaluate["verdict"] == "success", evaluate
    assert (outcome.result["terminated_by"], outcome.result["final_state"]) == ("terminal", "done")
    assert [event["event"] for event in seen].count("checkpoint") == 1


def test_a_usage_limit_wait_is_a_durable_timer_and_the_state_runs_again(
    time_skipping: TimeSkipping, tmp_path: Path
) -> None:
    """The run core's `WaitUntil` becomes a workflow timer: the time-skipping server
    jumps to the reset (up to two days ahead) and the state runs again, uncounted."""
    checkout = checkout_with(tmp_path / "limited", "limited", limited_loop())
    runs = runs_for(time_skipping, checkout)

    async def scenario() -> tuple[RunOutcome, list[dict[str, Any]]]:
        async with build_worker(runs.client, runs.task_queue):
            handle = await runs.start(run_input(runs, "limited"))
            done = await asyncio.wait_for(handle.result(), WAIT_SECONDS)
            page = await handle.query(LoopWorkflow.events, 0)
            return done, page.events

    done, events = time_skipping.run(scenario())
    names = [event["event"] for event in events]
    assert names.count("limit_wait") == 1 and names.count("limit_wait_end") == 1
    assert names.count("action_start") == 2
    wait = next(event for event in events if event["event"] == "limit_wait")
    assert wait["wait_seconds"] > 3600  # a real wait, skipped by the test server
    assert done.state["status"] == "completed"
    assert done.state["iteration"] == 1  # the wait counted no iteration
    assert "limit_wait" not in done.state  # nothing left to wait for
    assert (checkout / "tried").exists()
