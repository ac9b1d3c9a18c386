"""A shutdown keeps finished work: an action that finished on its own while a shutdown was
requested is evaluated, routed and saved; only an action the shutdown killed runs again.

The reference's `request_shutdown()` only set a flag read before the next state, so a
running action always finished and was routed; we also cancel the running action, and a
result the cancel did not cause must still count.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, write_loop

from little_loops.cli.summary import summarize
from little_loops.fsm.executor import ActionResult, DefaultActionRunner, FSMExecutor
from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.process.output_streams import OutputReaders
from little_loops.fsm.process.runner import _RunningAction
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import SignalDetector

DONE = {"terminal": True}
TWO_STATES = {
    "a": {"action": "first", "capture": "first", "on_success": "b", "on_failure": "a"},
    "b": {"action": "second", "on_success": "done"},
    "done": DONE,
}


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


class ShutdownDuringRun:
    """A runner without `cancel` (as the reference's test doubles): the first action asks
    the executor to shut down while it "runs", then returns its own finished result."""

    def __init__(self, *outputs: str) -> None:
        self.outputs = list(outputs)
        self.executor: FSMExecutor | None = None
        self.actions: list[str] = []

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
        self.actions.append(action)
        if len(self.actions) == 1:
            assert self.executor is not None
            self.executor.request_shutdown()
        return ActionResult(self.outputs.pop(0) if self.outputs else "", "", 0, 5)


def run_with(
    runner: ShutdownDuringRun, states: dict[str, Any], **top: Any
) -> tuple[Any, list[dict[str, Any]]]:
    events: list[dict[str, Any]] = []
    executor = FSMExecutor(
        make_loop(states, **top),
        event_callback=events.append,
        action_runner=runner,
        signal_detector=SignalDetector(),
    )
    runner.executor = executor
    return executor.run(), events


def test_a_finished_action_is_evaluated_and_routed_before_the_run_stops() -> None:
    runner = ShutdownDuringRun("made it\n")
    result, events = run_with(runner, TWO_STATES)
    assert (result.terminated_by, result.final_state, result.iterations) == ("signal", "b", 1)
    assert runner.actions == ["first"]  # b was not started
    assert [e["event"] for e in events] == [
        "loop_start",
        "state_enter",
        "action_start",
        "action_complete",
        "evaluate",
        "route",
        "loop_complete",
    ]
    assert events[-1]["final_state"] == "b"
    assert result.captured["first"]["output"] == "made it\n"


def test_the_interrupted_summary_names_the_state_resume_starts_at() -> None:
    result, _ = run_with(ShutdownDuringRun(), TWO_STATES)
    lines = summarize(result, make_loop(TWO_STATES), "demo").lines
    assert lines[0].startswith("Loop interrupted: b (1 iteration, ")
    assert lines[1] == "Resume with: ll-loop resume demo"


@pytest.mark.parametrize(
    ("output", "terminated_by", "final_state"),
    [
        ("FATAL_ERROR: disk on fire\n", "error", "a"),
        ("CONTEXT_HANDOFF: go on with b\n", "handoff", "a"),
        ("LOOP_STOP: enough\n", "signal_stop", "b"),
    ],
)
def test_signals_of_a_finished_action_still_take_effect(
    output: str, terminated_by: str, final_state: str
) -> None:
    result, _ = run_with(ShutdownDuringRun(output), TWO_STATES)
    assert (result.terminated_by, result.final_state) == (terminated_by, final_state)


def test_an_action_the_shutdown_cancelled_is_not_evaluated() -> None:
    class Cancelled(ShutdownDuringRun):
        def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
            result = super().run(action, timeout, is_slash_command)
            result.cancelled = True
            return result

    result, events = run_with(Cancelled(), TWO_STATES)
    assert (result.terminated_by, result.final_state, result.iterations) == ("signal", "a", 1)
    assert "evaluate" not in [e["event"] for e in events]


def test_reference_constructor_of_action_result_still_works() -> None:
    result = ActionResult("out", "err", 0, 12)
    assert (result.cancelled, result.error, result.timed_out) == (False, None, False)


# --- real processes ------------------------------------------------------------------


def _wait_for_exit(pid: int) -> None:
    """Block until `pid` exits, leaving it to be reaped by its runner."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


class StopAfterExit(DefaultActionRunner):
    """Calls `on_exit` once the action's process has exited on its own and before the
    runner looks at it: the shutdown lands after the action finished, every time."""

    def __init__(self) -> None:
        super().__init__()
        self.on_exit: Any = None

    def _supervise(
        self,
        running: _RunningAction,
        started: float,
        timeout: float,
        readers: OutputReaders,
        is_slash_command: bool,
    ) -> ActionResult:
        _wait_for_exit(running.process.pid)
        if self.on_exit is not None:
            self.on_exit()
        return super()._supervise(running, started, timeout, readers, is_slash_command)


def test_a_cancel_landing_after_the_process_exited_keeps_its_result() -> None:
    runner = StopAfterExit()
    runner.on_exit = runner.cancel
    result = runner.run("echo finished; exit 3", timeout=30, is_slash_command=False)
    assert (result.output, result.exit_code, result.error, result.cancelled) == (
        "finished\n",
        3,
        None,
        False,
    )


def test_a_cancel_that_kills_the_process_says_so() -> None:
    runner = DefaultActionRunner()
    result = runner.run(
        "echo started; sleep 30",
        timeout=30,
        is_slash_command=False,
        on_line=lambda line: runner.cancel(),
    )
    assert (result.exit_code, result.error, result.cancelled) == (130, "Action cancelled", True)


def _saved(loops_dir: Path) -> dict[str, Any]:
    data = json.loads((loops_dir / ".running" / "demo.state.json").read_text())
    assert isinstance(data, dict)
    return data


def test_stop_after_a_real_action_finished_resumes_at_the_routed_state(
    tmp_path: Path,
) -> None:
    count = tmp_path / "count"
    states = {
        "a": {"action": f"echo a >> {count}", "on_success": "b"},
        "b": {"action": f"echo b >> {count}", "on_success": "done"},
        "done": DONE,
    }
    loops_dir = tmp_path / ".loops"
    runner = StopAfterExit()
    first = PersistentExecutor(make_loop(states), loops_dir=loops_dir, action_runner=runner)
    runner.on_exit = first.request_shutdown
    result = first.run()
    assert (result.terminated_by, result.final_state, result.iterations) == ("signal", "b", 1)
    saved = _saved(loops_dir)
    assert (saved["status"], saved["current_state"], saved["phase"], saved["iteration"]) == (
        "interrupted",
        "b",
        "routed",
        1,
    )
    resumed = PersistentExecutor(make_loop(states), loops_dir=loops_dir).resume_checked()
    assert (resumed.terminated_by, resumed.iterations) == ("terminal", 2)
    assert count.read_text() == "a\nb\n"  # the finished action did not run twice


def test_a_killed_real_action_runs_again_on_resume(tmp_path: Path) -> None:
    count = tmp_path / "count"
    action = f"echo run >> {count}; echo started; [ -e {tmp_path}/go ] || sleep 30"
    states = {"a": {"action": action, "on_success": "done"}, "done": DONE}
    loops_dir = tmp_path / ".loops"
    first = PersistentExecutor(
        make_loop(states), loops_dir=loops_dir, output_callback=lambda line: stop()
    )

    def stop() -> None:
        first.request_shutdown()

    assert first.run().final_state == "a"
    assert (_saved(loops_dir)["status"], _saved(loops_dir)["phase"]) == ("interrupted", "entered")
    (tmp_path / "go").touch()
    resumed = PersistentExecutor(make_loop(states), loops_dir=loops_dir).resume_checked()
    assert (resumed.terminated_by, resumed.iterations) == ("terminal", 1)
    assert count.read_text() == "run\nrun\n"


def _wait_for_file(path: Path) -> None:
    deadline = time.monotonic() + 20
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


KILLED_LOOP = """\
name: killed
initial: work
states:
  work:
    action: "echo run >> runs; touch started; [ -e go ] || sleep 30"
    on_success: done
  done:
    terminal: true
"""


def test_ll_loop_stop_during_an_action_it_kills_reruns_it_on_resume(tmp_path: Path) -> None:
    write_loop(tmp_path, "killed", KILLED_LOOP)
    env = cli_env(tmp_path)
    run = subprocess.Popen(
        [str(LL_LOOP), "run", "killed"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_file(tmp_path / "started")
    stop = subprocess.run(
        [str(LL_LOOP), "stop", "killed"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert stop.returncode == 0, stop.stderr
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130
    assert err.splitlines()[0].startswith("Loop interrupted: work (1 iteration, ")
    (tmp_path / "go").touch()
    resume = subprocess.run(
        [str(LL_LOOP), "resume", "killed"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert resume.returncode == 0, resume.stderr
    assert (tmp_path / "runs").read_text() == "run\nrun\n"
    events = (tmp_path / ".loops/.running/killed.events.jsonl").read_text().splitlines()
    entered = [json.loads(line) for line in events if '"state_enter"' in line]
    assert [event["iteration"] for event in entered] == [1, 1]


# --- on_handoff: continue -------------------------------------------------------------

CONTINUED = {
    "work": {"action": "/work", "on_success": "done", "on_failure": "work"},
    "done": DONE,
}


class Scripted:
    """A runner without `cancel`: each call runs `steps[i](executor)` and returns its
    result; the actions it was given are kept."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.actions: list[str] = []
        self.owner: PersistentExecutor | None = None

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
        self.actions.append(action)
        result: ActionResult = self.steps.pop(0)(self.owner)
        return result


def _stopping(output: str, *, cancelled: bool = False) -> Any:
    def step(owner: PersistentExecutor) -> ActionResult:
        owner.request_shutdown()
        return ActionResult(output, "", 130 if cancelled else 0, 1, cancelled=cancelled)

    return step


def _printing(output: str) -> Any:
    return lambda owner: ActionResult(output, "", 0, 1)


def _run(loops_dir: Path, runner: Scripted, *, resume: bool = False) -> Any:
    loop = make_loop(CONTINUED, on_handoff="continue", llm={"enabled": False})
    executor = PersistentExecutor(loop, loops_dir=loops_dir, action_runner=runner)
    runner.owner = executor
    return executor.resume_checked() if resume else executor.run()


def test_a_continued_handoff_stopped_before_its_rerun_resumes_with_the_prompt(
    tmp_path: Path,
) -> None:
    loops_dir = tmp_path / ".loops"
    first = _run(loops_dir, Scripted(_stopping("CONTEXT_HANDOFF: do part 2\n")))
    assert (first.terminated_by, first.final_state, first.iterations) == ("signal", "work", 1)
    saved = _saved(loops_dir)
    assert (saved["status"], saved["phase"], saved["continuation_prompt"]) == (
        "interrupted",
        "routed",
        "do part 2",
    )
    runner = Scripted(_printing("finished\n"))
    resumed = _run(loops_dir, runner, resume=True)
    assert (resumed.terminated_by, resumed.iterations) == ("terminal", 2)
    assert runner.actions == ["/work\n\ndo part 2"]
    assert "continuation_prompt" not in _saved(loops_dir)  # the route left the state


def test_a_continued_handoff_whose_rerun_was_cut_off_gets_the_prompt_again(
    tmp_path: Path,
) -> None:
    loops_dir = tmp_path / ".loops"
    runner = Scripted(_printing("CONTEXT_HANDOFF: do part 2\n"), _stopping("", cancelled=True))
    first = _run(loops_dir, runner)
    assert (first.terminated_by, first.iterations) == ("signal", 2)
    assert runner.actions == ["/work", "/work\n\ndo part 2"]
    saved = _saved(loops_dir)
    assert (saved["phase"], saved["continuation_prompt"]) == ("entered", "do part 2")
    again = Scripted(_printing("finished\n"))
    resumed = _run(loops_dir, again, resume=True)
    assert (resumed.terminated_by, resumed.iterations) == ("terminal", 2)
    assert again.actions == ["/work\n\ndo part 2"]
