"""The engine's injected world and its run state: snapshot/restore of the `RunCursor`,
an injected clock and environment, and the runner's working directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.executor import DefaultActionRunner, FSMExecutor
from little_loops.fsm.schema import FSMLoop


def _loop(states: dict[str, Any], **extra: Any) -> FSMLoop:
    return FSMLoop.from_dict({"name": "t", "initial": "a", "states": states, **extra})


class FakeClock:
    """A clock that only moves when told (seconds)."""

    def __init__(self, wall: float) -> None:
        self.now = 0.0
        self.wall_start = wall

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.wall_start + self.now


def test_snapshot_is_a_copy_and_restore_goes_on_from_it(tmp_path: Path) -> None:
    states = {
        "a": {"action": "echo one", "capture": "first", "next": "b"},
        "b": {"action": "echo two", "next": "done"},
        "done": {"terminal": True},
    }
    executor = FSMExecutor(_loop(states))
    before = executor.snapshot()
    result = executor.run()
    assert result.final_state == "done"
    assert before == RunCursor(current_state="a")  # the run did not move the copy

    again = FSMExecutor(_loop(states))
    saved = RunCursor(current_state="b", iteration=5, captured={"x": {"output": "kept"}})
    again.restore(saved)
    saved.captured.clear()  # the executor holds its own copy
    resumed = again.run()
    assert (resumed.final_state, resumed.iterations) == ("done", 6)
    assert resumed.captured == {"x": {"output": "kept"}}
    assert list(tmp_path.iterdir()) == []  # no files were touched


def test_executor_attributes_read_and_write_the_cursor() -> None:
    executor = FSMExecutor(_loop({"a": {"terminal": True}}))
    executor.current_state = "elsewhere"
    executor.iteration = 3
    assert executor.snapshot().current_state == "elsewhere"
    assert executor.snapshot().iteration == 3
    executor.restore(RunCursor(current_state="a", handoff_count=2))
    assert executor.handoff_count == 2


def test_an_injected_clock_drives_timestamps_and_the_loop_timeout() -> None:
    clock = FakeClock(wall=1_700_000_000.0)
    events: list[dict[str, Any]] = []

    def tick(event: dict[str, Any]) -> None:
        events.append(event)
        if event["event"] == "state_enter":
            clock.now += 10  # each state "takes" ten seconds

    states = {"a": {"action": "true", "next": "a"}}
    executor = FSMExecutor(_loop(states, timeout=25), event_callback=tick, clock=clock)
    result = executor.run()
    assert result.terminated_by == "timeout"
    assert result.iterations == 3
    assert executor.started_at == "2023-11-14T22:13:20+00:00"
    assert executor.start_time_ms == 1_700_000_000_000
    assert events[0]["ts"] == "2023-11-14T22:13:20+00:00"


def test_an_injected_environment_answers_env_variables() -> None:
    states = {
        "a": {"action": "echo ${env.HOUSE_ENGINE_ONLY_HERE}", "capture": "out", "next": "done"},
        "done": {"terminal": True},
    }
    executor = FSMExecutor(_loop(states), env={"HOUSE_ENGINE_ONLY_HERE": "from-the-mapping"})
    result = executor.run()
    assert result.captured["out"]["output"].strip() == "from-the-mapping"


def test_without_an_injected_environment_env_reads_the_process(
    monkeypatch: Any,
) -> None:
    """The reference read `${env.X}` from os.environ; that stays the default."""
    monkeypatch.setenv("HOUSE_ENGINE_FROM_OS", "from-os")
    states = {
        "a": {"action": "echo ${env.HOUSE_ENGINE_FROM_OS}", "capture": "out", "next": "done"},
        "done": {"terminal": True},
    }
    result = FSMExecutor(_loop(states)).run()
    assert result.captured["out"]["output"].strip() == "from-os"


def test_the_default_runner_runs_actions_in_its_working_directory(tmp_path: Path) -> None:
    runner = DefaultActionRunner(cwd=tmp_path)
    result = runner.run("pwd", timeout=10, is_slash_command=False)
    assert Path(result.output.strip()).resolve() == tmp_path.resolve()
