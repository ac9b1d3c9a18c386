"""The run core (`engine/core.py`): its decisions hand out requests and take results, so
an async driver gets the same run as `FSMExecutor`; evaluators that need the host are
asked for, the pure ones run inside the core."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.evaluation_step import judge
from little_loops.fsm.engine.requests import (
    EvaluateWithIO,
    Finish,
    InspectWorkspace,
    Request,
    RunAction,
    Sleep,
)
from little_loops.fsm.engine.revisions import WORKSPACE_FINGERPRINT
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.judging.host_io import needs_host_io
from little_loops.fsm.process.runner import ActionResult
from little_loops.fsm.schema import EvaluateConfig, FSMLoop
from little_loops.fsm.signal_detector import SignalDetector
from little_loops.fsm.validation import load_loop

HELLO = Path(__file__).resolve().parents[2] / ".loops" / "hello.yaml"

# What hello's actions print, in order (start, bump, bump, wave's handoff).
HELLO_OUTPUTS = ["0", "1", "2", "CONTEXT_HANDOFF: say goodbye, the count is 2\n"]


class FakeClock:
    """A clock that does not move: timestamps and durations are the same in every run."""

    def monotonic(self) -> float:
        return 100.0

    def wall(self) -> float:
        return 1_700_000_000.0


class ScriptedActions:
    """Gives the scripted outputs in order and records the actions asked for."""

    def __init__(self, outputs: list[str]) -> None:
        self.outputs = list(outputs)
        self.actions: list[str] = []

    def result(self, action: str) -> ActionResult:
        self.actions.append(action)
        return ActionResult(output=self.outputs.pop(0), stderr="", exit_code=0, duration_ms=7)

    # The ActionRunner protocol, for FSMExecutor.
    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
        return self.result(action)


async def drive_async(core: RunCore, actions: ScriptedActions) -> tuple[ExecutionResult, int]:
    """An async driver: awaits the I/O of each request, then submits its result."""
    served = 0
    request: Request = core.next_request()
    while not isinstance(request, Finish):
        result: Any
        if isinstance(request, RunAction):
            await asyncio.sleep(0)  # another task may run while the action does
            result = actions.result(request.action)
        elif isinstance(request, Sleep):
            await asyncio.sleep(request.seconds)
            result = None
        elif isinstance(request, EvaluateWithIO):
            args = (request.state, request.ctx, request.step, request.llm)
            result = await asyncio.to_thread(judge, *args)
        else:
            raise AssertionError(f"unexpected request {request}")
        served += 1
        core.submit(result)
        request = core.next_request()
    return request.result, served


def run_both(loop: FSMLoop, outputs: list[str]) -> tuple[Any, Any]:
    """(events, result, actions) from FSMExecutor and from the async driver."""
    sync_events: list[dict[str, Any]] = []
    sync_actions = ScriptedActions(outputs)
    sync_result = FSMExecutor(
        loop,
        sync_events.append,
        sync_actions,
        SignalDetector(),
        clock=FakeClock(),
        env={},
    ).run()

    async_events: list[dict[str, Any]] = []
    async_actions = ScriptedActions(outputs)
    core = RunCore(
        loop, clock=FakeClock(), emit=async_events.append, env={}, signal_detector=SignalDetector()
    )
    async_result, served = asyncio.run(drive_async(core, async_actions))
    assert served >= len(outputs)
    return (
        (sync_events, sync_result.to_dict(), sync_actions.actions),
        (async_events, async_result.to_dict(), async_actions.actions),
    )


def test_an_asyncio_driver_gets_the_executors_run_of_hello() -> None:
    loop = load_loop(HELLO)
    sync_run, async_run = run_both(loop, HELLO_OUTPUTS)
    assert async_run == sync_run
    events, result, actions = sync_run
    assert result["terminated_by"] == "handoff"
    assert actions == ["printf 0", "printf %d $(( 0 + 1 ))", "printf %d $(( 1 + 1 ))", actions[3]]
    assert [e["event"] for e in events].count("route") == 5


def test_an_asyncio_driver_sleeps_the_backoff_the_executor_sleeps() -> None:
    loop = dataclasses.replace(load_loop(HELLO), backoff=0.01)
    sync_run, async_run = run_both(loop, HELLO_OUTPUTS)
    assert async_run == sync_run
    assert [e["event"] for e in sync_run[0]].count("backoff") == 5  # one after each route


def _one_state(evaluate: dict[str, Any]) -> FSMLoop:
    states = {
        "a": {"action": "x", "evaluate": evaluate, "on_yes": "done", "on_no": "done"},
        "done": {"terminal": True},
    }
    return FSMLoop.from_dict({"name": "t", "initial": "a", "states": states})


def _requests_until_finish(core: RunCore, output: str) -> list[Request]:
    """Drive `core` answering every action with `output`; the LLM judge says yes."""
    seen: list[Request] = []
    request = core.next_request()
    while not isinstance(request, Finish):
        seen.append(request)
        if isinstance(request, RunAction):
            core.submit(ActionResult(output=output, stderr="", exit_code=0, duration_ms=1))
        else:
            assert isinstance(request, EvaluateWithIO)
            core.submit(("yes", {"judged_by": "driver"}))
        request = core.next_request()
    seen.append(request)
    return seen


def test_a_pure_evaluator_runs_inside_the_core() -> None:
    loop = _one_state({"type": "output_numeric", "operator": "ge", "target": 2})
    seen = _requests_until_finish(RunCore(loop, clock=FakeClock()), "5")
    assert [type(r).__name__ for r in seen] == ["RunAction", "Finish"]


def test_the_llm_judge_is_asked_of_the_driver() -> None:
    events: list[dict[str, Any]] = []
    loop = _one_state({"type": "llm_structured", "prompt": "done?"})
    seen = _requests_until_finish(RunCore(loop, clock=FakeClock(), emit=events.append), "x")
    assert [type(r).__name__ for r in seen] == ["RunAction", "EvaluateWithIO", "Finish"]
    evaluate = next(e for e in events if e["event"] == "evaluate")
    assert (evaluate["verdict"], evaluate["judged_by"]) == ("yes", "driver")


@pytest.mark.parametrize(
    ("config", "truncated", "needs"),
    [
        ({"type": "exit_code"}, True, False),
        ({"type": "output_numeric", "operator": "eq", "target": 1}, True, False),
        ({"type": "convergence", "target": 0}, True, False),
        ({"type": "output_contains", "pattern": "x"}, False, False),
        ({"type": "output_contains", "pattern": "x"}, True, True),
        ({"type": "output_contains", "pattern": "x", "source": "${prev.output}"}, True, False),
        ({"type": "output_json", "path": ".a", "operator": "eq", "target": 1}, True, True),
        ({"type": "return_metadata"}, True, False),
        ({"type": "return_metadata", "path": "out.json"}, False, True),
        ({"type": "llm_structured"}, False, True),
    ],
)
def test_which_evaluators_need_host_io(
    config: dict[str, Any], truncated: bool, needs: bool
) -> None:
    assert needs_host_io(EvaluateConfig.from_dict(config), truncated) is needs


def test_the_default_judgement_needs_the_host_only_for_the_llm_check() -> None:
    assert needs_host_io(None, True) is False
    assert needs_host_io(None, False, llm_by_default=True) is True


def test_a_result_before_any_request_is_refused() -> None:
    core = RunCore(load_loop(HELLO), clock=FakeClock())
    with pytest.raises(RuntimeError, match="before next_request"):
        core.submit("nothing was asked")
    assert isinstance(core.next_request(), RunAction)  # the run still starts cleanly


# --- the stall guard's work-tree fingerprint, asked of the driver ---------------------------


def _stalling_loop() -> FSMLoop:
    """`a` fails the same way every time; the guard (threshold 2) watches it."""
    states = {
        "a": {
            "action": "x",
            "evaluate": {"type": "exit_code"},
            "on_success": "done",
            "on_failure": "a",
        },
        "done": {"terminal": True},
    }
    spec = {"name": "t", "initial": "a", "states": states, "stall_threshold": 2}
    return FSMLoop.from_dict({**spec, "max_iterations": 10})


def _drive_with_workspace(core: RunCore, fingerprints: list[str | None]) -> list[Request]:
    """Answer every action with the same failure and `InspectWorkspace` with the next of
    `fingerprints`."""
    seen: list[Request] = []
    request = core.next_request()
    while not isinstance(request, Finish):
        seen.append(request)
        if isinstance(request, RunAction):
            core.submit(ActionResult(output="same", stderr="", exit_code=1, duration_ms=1))
        else:
            assert isinstance(request, InspectWorkspace)
            core.submit(fingerprints.pop(0))
        request = core.next_request()
    seen.append(request)
    return seen


def test_the_work_tree_is_asked_of_the_driver_after_an_ending_that_can_stall() -> None:
    seen = _drive_with_workspace(RunCore(_stalling_loop(), clock=FakeClock()), ["w1", "w1"])

    kinds = [type(r).__name__ for r in seen]
    assert kinds == ["RunAction", "InspectWorkspace", "RunAction", "InspectWorkspace", "Finish"]
    assert isinstance(seen[-1], Finish) and seen[-1].result.terminated_by == "stalled"


def test_a_changing_work_tree_is_progress_however_the_output_repeats() -> None:
    changing = [f"w{n}" for n in range(10)]
    seen = _drive_with_workspace(RunCore(_stalling_loop(), clock=FakeClock()), changing)

    assert isinstance(seen[-1], Finish) and seen[-1].result.terminated_by == "max_iterations"


def test_a_run_without_the_revision_does_not_ask_for_the_work_tree() -> None:
    """A Temporal run recorded before `WORKSPACE_FINGERPRINT` replays without the
    request: its guard compared only what the states said."""
    asked: list[str] = []

    def revised(name: str) -> bool:
        asked.append(name)
        return False

    core = RunCore(_stalling_loop(), clock=FakeClock(), revised=revised)
    seen = _drive_with_workspace(core, [])

    assert [type(r).__name__ for r in seen] == ["RunAction", "RunAction", "Finish"]
    assert set(asked) == {WORKSPACE_FINGERPRINT}


def test_a_healthy_ending_is_not_fingerprinted() -> None:
    loop = _one_state({"type": "output_numeric", "operator": "ge", "target": 2})
    loop.stall_threshold = 2
    seen = _requests_until_finish(RunCore(loop, clock=FakeClock()), "5")
    assert [type(r).__name__ for r in seen] == ["RunAction", "Finish"]
