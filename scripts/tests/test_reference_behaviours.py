"""Three behaviours of the reference, kept exactly (issue 27; fsm-api.md §7.4, §8.4, §9.3).

Written the way tests of little-loops at aada157e1 were: direct API calls, exact strings.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.cli.summary import summarize
from little_loops.fsm.evaluators import evaluate
from little_loops.fsm.executor import ExecutionResult, FSMExecutor
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.persistence import LoopState, PersistentExecutor, StatePersistence
from little_loops.fsm.process.process_groups import ActionGroup
from little_loops.fsm.schema import EvaluateConfig, FSMLoop, StateConfig


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def counting_loop(max_iterations: int = 5) -> FSMLoop:
    return FSMLoop(
        name="test-loop",
        initial="step",
        states={
            "step": StateConfig(action="echo step >> steps", on_success="finish"),
            "finish": StateConfig(action="echo finish >> steps", next="done"),
            "done": StateConfig(terminal=True),
        },
        max_iterations=max_iterations,
    )


# --- 1. evaluate() with an unknown type (§7.4) ------------------------------------------


def test_evaluate_unknown_type_raises_value_error() -> None:
    """§7.4: "other -> ValueError("Unknown evaluator type: <type>")"."""
    config = EvaluateConfig(type="unknown_type")
    with pytest.raises(ValueError, match="Unknown evaluator type"):
        evaluate(config, "output", 0, InterpolationContext())
    with pytest.raises(ValueError) as raised:
        evaluate(config, "output", 0, InterpolationContext())
    assert str(raised.value) == "Unknown evaluator type: unknown_type"


# --- 2. no route for a verdict (§8.4 step 10) ------------------------------------------

NO_ROUTE_DETAIL = "No valid transition for verdict 'failure' in state 'check'"
CHECK_LOOP = """\
name: checking
initial: check
states:
  check:
    action: "exit 1"
    on_success: done
  done:
    terminal: true
"""


def check_loop() -> FSMLoop:
    return FSMLoop(
        name="checking",
        initial="check",
        states={
            "check": StateConfig(action="exit 1", on_success="done"),
            "done": StateConfig(terminal=True),
        },
    )


def test_no_route_ends_the_run_with_no_valid_transition() -> None:
    """§8.4 step 10: finish "error" with `error = "No valid transition"`."""
    events: list[dict[str, object]] = []
    result = FSMExecutor(check_loop(), event_callback=events.append).run()
    assert result.terminated_by == "error"
    assert result.final_state == "check"
    assert result.error == "No valid transition"
    assert result.to_dict()["error"] == "No valid transition"
    # Our addition, in a separate field: what people read.
    assert result.error_detail == NO_ROUTE_DETAIL
    complete = [e for e in events if e["event"] == "loop_complete"]
    assert [{k: v for k, v in e.items() if k != "ts"} for e in complete] == [
        {
            "event": "loop_complete",
            "final_state": "check",
            "iterations": 1,
            "terminated_by": "error",
            "error": "No valid transition",
            "error_detail": NO_ROUTE_DETAIL,
        }
    ]


def test_an_error_verdict_with_its_own_message_still_ends_with_it() -> None:
    """An action that cannot start (the reference raised: its message was the error)."""
    loop = check_loop()
    loop.states["check"] = StateConfig(action="echo ${context.nope}", on_success="done")
    result = FSMExecutor(loop).run()
    assert (result.error, result.error_detail) == (
        "Cannot interpolate action: Path 'nope' not found in context",
        None,
    )


def test_an_evaluators_own_error_without_a_route_ends_with_no_valid_transition() -> None:
    """The reference's evaluators return `error` with details (here: output that is not a
    number); with no route for it the run ends "No valid transition", as every no-route
    ending did there. The evaluator's message is the detail people read."""
    loop = check_loop()
    loop.states["check"] = StateConfig(
        action="echo many",
        evaluate=EvaluateConfig(type="output_numeric", operator="ge", target=3),
        on_success="done",
        on_failure="done",
    )
    result = FSMExecutor(loop).run()
    assert (result.terminated_by, result.error) == ("error", "No valid transition")
    assert result.error_detail is not None
    assert result.error_detail.startswith("Cannot parse")


def test_the_summary_reads_the_detail() -> None:
    result = ExecutionResult(
        "check", 1, "error", 2500, {}, error="No valid transition", error_detail=NO_ROUTE_DETAIL
    )
    assert summarize(result, check_loop(), "checking").lines == [
        f"Loop failed: check (1 iteration, 2.5s) - {NO_ROUTE_DETAIL}"
    ]


def test_cli_messages_stay_as_detailed_as_before(capsys: pytest.CaptureFixture[str]) -> None:
    """`run`, `status` and the events file: the detail is where people read it."""
    write_loop(Path.cwd(), "checking", CHECK_LOOP)
    code, out, err = cli_in_process(capsys, "run", "checking")
    assert (code, out) == (
        1,
        "Running loop: checking\n"
        "Max iterations: 50\n"
        "\n"
        "[1/50] check -> exit 1\n"
        "       ✗ failure\n"
        "\n",
    )
    assert err == f"Loop failed: check (1 iteration, Ns) - {NO_ROUTE_DETAIL}\n"
    code, out, _ = cli_in_process(capsys, "status", "checking")
    assert f"Error: {NO_ROUTE_DETAIL}" in out.splitlines()
    saved = json.loads(Path(".loops/.running/checking.state.json").read_text())
    assert (saved["status"], saved["error"]) == ("failed", NO_ROUTE_DETAIL)
    events = Path(".loops/.running/checking.events.jsonl").read_text().splitlines()
    last = json.loads(events[-1])
    assert (last["event"], last["error"], last["error_detail"]) == (
        "loop_complete",
        "No valid transition",
        NO_ROUTE_DETAIL,
    )


# --- 3. a `running` state whose owner is gone or unknown (§9.3) -------------------------


def running_state(**fields: object) -> LoopState:
    state = LoopState(
        loop_name="test-loop",
        current_state="finish",
        iteration=1,
        captured={},
        prev_result=None,
        last_result=None,
        started_at="2026-01-01T00:00:00+00:00",
        updated_at="",
        status="running",
    )
    for key, value in fields.items():
        setattr(state, key, value)
    return state


class ResumeInTheMiddle(PersistentExecutor):
    """Tries `resume()` of its own loop while its run goes on (after the first route)."""

    attempts: list[object]

    def _handle_event(self, event: dict[str, object]) -> None:
        super()._handle_event(event)
        if event["event"] == "route" and not self.attempts:
            self.attempts.append(PersistentExecutor(counting_loop()).resume())


def test_resume_of_a_running_state_left_by_an_ended_run_of_this_process() -> None:
    """§9.3: a test marks the state of a finished run `running` again, then resumes it
    (refused only while that run goes on)."""
    executor = ResumeInTheMiddle(counting_loop(max_iterations=1))
    executor.attempts = []
    assert executor.run().terminated_by == "max_iterations"
    assert executor.attempts == [None]  # its owner, this process's run, was going on
    state = executor.persistence.load_state()
    assert state is not None
    assert state.pid == os.getpid()  # what our runs record; the run itself has ended
    state.status = "running"
    executor.persistence.save_state(state)
    result = PersistentExecutor(counting_loop()).resume()
    assert result is not None
    assert (result.final_state, result.iterations, result.terminated_by) == ("done", 2, "terminal")
    assert Path("steps").read_text() == "step\nfinish\n"


@pytest.fixture
def left_running() -> Iterator[ActionGroup]:
    """A process group like the one a killed runner's action leaves: its own session."""
    started = subprocess.run(
        ["bash", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(started.stdout)
    deadline = time.monotonic() + 5
    while os.getpgid(pid) != pid and time.monotonic() < deadline:
        time.sleep(0.01)  # setsid has not made it a group leader yet
    group = ActionGroup.of(pid)
    yield group
    if group.alive():
        os.killpg(pid, signal.SIGKILL)


def test_resume_stops_what_the_dead_runner_left_running_first(left_running: ActionGroup) -> None:
    """§9.3: a `running` state written with `save_state` (no pid) is resumed, after the
    orphan check a crashed run gets: the action it left running is stopped first."""
    assert left_running.alive()
    persistence = StatePersistence("test-loop")
    persistence.initialize()
    persistence.save_state(running_state(action_groups=[left_running.to_dict()]))
    result = PersistentExecutor(counting_loop()).resume()
    assert result is not None
    assert (result.final_state, result.terminated_by) == ("done", "terminal")
    assert not left_running.alive()
