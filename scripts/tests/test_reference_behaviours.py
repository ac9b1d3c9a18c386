"""Three behaviours of the reference, kept exactly (issue 27; fsm-api.md §7.4, §8.4, §9.3).

Written the way tests of little-loops at aada157e1 were: direct API calls, exact strings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from little_loops.fsm.evaluators import evaluate
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
