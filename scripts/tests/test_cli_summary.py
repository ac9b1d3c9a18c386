"""Tests for `little_loops.cli.summary`: the lines that say how a run ended."""

from __future__ import annotations

import pytest

from little_loops.cli.summary import Summary, summarize
from little_loops.fsm.executor import ExecutionResult
from little_loops.fsm.schema import FSMLoop


def _fsm(**fields: object) -> FSMLoop:
    data: dict[str, object] = {
        "name": "demo",
        "initial": "a",
        "max_iterations": 3,
        "states": {"a": {"action": "true", "next": "done"}, "done": {"terminal": True}},
    }
    data.update(fields)
    return FSMLoop.from_dict(data)


def _result(terminated_by: str, iterations: int = 3, **fields: object) -> ExecutionResult:
    result = ExecutionResult("a", iterations, terminated_by, 2500, {})
    for key, value in fields.items():
        setattr(result, key, value)
    return result


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (_result("terminal", 1), Summary(["Loop completed: a (1 iteration, 2.5s)"])),
        (_result("signal_stop"), Summary(["Loop stopped by LOOP_STOP: a (3 iterations, 2.5s)"])),
        (
            _result("signal_stop", stop_reason="all done"),
            Summary(["Loop stopped by LOOP_STOP: a (3 iterations, 2.5s) - all done"]),
        ),
        (
            _result("max_iterations"),
            Summary(
                [
                    "Loop stopped: a (3 iterations, 2.5s) - max_iterations reached",
                    "Resume with: ll-loop resume demo -n 6",
                ],
                essential=["Resume with: ll-loop resume demo -n 6"],
            ),
        ),
        (
            _result("signal"),
            Summary(
                ["Loop interrupted: a (3 iterations, 2.5s)", "Resume with: ll-loop resume demo"],
                is_problem=True,
            ),
        ),
        (
            _result("error", error="No valid transition"),
            Summary(["Loop failed: a (3 iterations, 2.5s) - No valid transition"], True),
        ),
        (
            _result("timeout"),
            Summary(["Loop failed: a (3 iterations, 2.5s) - ended by timeout"], True),
        ),
        (
            _result("stalled", error="state a repeated 3 times"),
            Summary(
                [
                    "Loop stalled: a (3 iterations, 2.5s) - state a repeated 3 times",
                    "Resume with: ll-loop resume demo (once what repeats is fixed; otherwise "
                    "it stalls again at once)",
                    "Or without the stall guard: ll-loop resume demo --stall-threshold 0 "
                    "(or raise stall_threshold in the loop file)",
                ],
                True,
            ),
        ),
    ],
)
def test_outcomes(result: ExecutionResult, expected: Summary) -> None:
    assert summarize(result, _fsm(), "demo") == expected


def test_loop_timeout_names_the_limit() -> None:
    assert summarize(_result("timeout"), _fsm(timeout=60), "demo") == Summary(
        ["Loop failed: a (3 iterations, 2.5s) - loop timeout (60s) reached"], True
    )


def test_handoff_pause_prints_prompt_and_resume_command() -> None:
    result = _result("handoff", 1, continuation_prompt="do B next", handoff=True)
    assert summarize(result, _fsm(), ".loops/demo.yaml") == Summary(
        [
            "Loop paused for handoff: a (1 iteration, 2.5s)",
            "Continuation: do B next",
            "Resume with: ll-loop resume .loops/demo.yaml",
        ],
        essential=["Resume with: ll-loop resume .loops/demo.yaml"],
    )


def test_handoff_terminate_and_spawn() -> None:
    result = _result("handoff", 1)
    assert summarize(result, _fsm(on_handoff="terminate"), "demo") == Summary(
        ["Loop ended by handoff: a (1 iteration, 2.5s)", "Continuation: (no prompt)"]
    )
    assert summarize(result, _fsm(on_handoff="spawn"), "demo") == Summary(
        [
            "Loop handed off to a new Claude session: a (1 iteration, 2.5s)",
            "Continuation: (no prompt)",
            "Session log: .loops/.running/demo.handoff.log",
            "Follow with: ll-loop status demo",
        ],
        essential=["Follow with: ll-loop status demo"],
    )


def test_handoff_that_could_not_spawn_is_one_line_saying_how_to_resume() -> None:
    result = _result("handoff", 1, continuation_prompt="B", error="claude CLI not found")
    assert summarize(result, _fsm(on_handoff="spawn"), "demo") == Summary(
        [
            "Loop paused for handoff: a (1 iteration, 2.5s) - the continuation could not be "
            "started (claude CLI not found); resume by hand: ll-loop resume demo"
        ],
        True,
    )


@pytest.mark.parametrize("on_handoff", ["pause", "spawn"])
def test_handoff_past_max_continuations_says_how_to_continue(on_handoff: str) -> None:
    result = _result(
        "handoff", 4, continuation_prompt="B", error="limit", continuations_exhausted=True
    )
    assert summarize(result, _fsm(on_handoff=on_handoff, max_continuations=2), "demo") == Summary(
        [
            "Loop paused for handoff: a (4 iterations, 2.5s) - max_continuations (2) reached, "
            "so it is not continued",
            "Continue anyway with: ll-loop resume demo --max-continuations 3",
        ],
        True,
    )
