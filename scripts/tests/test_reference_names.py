"""The reference's module-level names stay importable from the same modules (issue 10 #4).

Code and tests written for the reference import these private helpers directly; each one
is imported from the module the reference defined it in and checked on examples.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

import pytest

from little_loops.fsm import evaluators, executor, interpolation, persistence
from little_loops.fsm.compilers import _passthrough_fsm
from little_loops.fsm.evaluators import EvaluationResult, _compare_values, _extract_json_path
from little_loops.fsm.interpolation import (
    InterpolationContext,
    _format_duration,
    _interpolate_list,
)
from little_loops.fsm.schema import EvaluateConfig, FSMLoop, StateConfig
from little_loops.fsm.validation import (
    _find_reachable_states,
    _validate_evaluator,
    _validate_state_routing,
)

FSM_SPEC: dict[str, Any] = {
    "name": "demo",
    "paradigm": "fsm",
    "initial": "a",
    "states": {
        "a": {"action": "true", "on_success": "done", "on_failure": "a"},
        "done": {"terminal": True},
        "orphan": {"action": "true", "next": "done"},
    },
}


def test_passthrough_fsm_builds_the_loop_without_compiling() -> None:
    fsm = _passthrough_fsm(FSM_SPEC)
    assert isinstance(fsm, FSMLoop)
    assert (fsm.name, fsm.initial, list(fsm.states)) == ("demo", "a", ["a", "done", "orphan"])
    assert fsm.states["a"].on_failure == "a"


def test_passthrough_fsm_refuses_a_spec_without_initial() -> None:
    with pytest.raises(ValueError, match="FSM paradigm requires: initial"):
        _passthrough_fsm({"name": "x", "states": {}})


@pytest.mark.parametrize(
    ("path", "expected"),
    [(".a.b", 1), ("a.b", 1), (".items.1.id", "y"), (".items.0", {"id": "x"}), (".n", None)],
)
def test_extract_json_path(path: str, expected: Any) -> None:
    data = {"a": {"b": 1}, "items": [{"id": "x"}, {"id": "y"}], "n": None}
    assert _extract_json_path(data, path) == expected


@pytest.mark.parametrize("path", [".missing", ".a.c", ".items.2", ".items.x", ".a.b.c"])
def test_extract_json_path_raises_key_error_when_not_found(path: str) -> None:
    data = {"a": {"b": 1}, "items": [1, 2]}
    with pytest.raises(KeyError):
        _extract_json_path(data, path)


@pytest.mark.parametrize(
    ("value", "operator", "target", "verdict"),
    [
        (5, "gt", 3, "success"),
        (5, "le", 3, "failure"),
        (2.5, "eq", 2.5, "success"),
        ("ok", "eq", "ok", "success"),
        ("ok", "ne", "ok", "failure"),
    ],
)
def test_compare_values(value: Any, operator: str, target: Any, verdict: str) -> None:
    assert _compare_values(value, operator, target, ".x") == EvaluationResult(
        verdict, {"value": value, "path": ".x", "target": target, "operator": operator}
    )


def test_compare_values_refuses_ordering_non_numbers() -> None:
    assert _compare_values("a", "lt", "b", ".x") == EvaluationResult(
        "error", {"error": "Operator lt not supported for non-numeric values"}
    )


def test_executor_clock_helpers() -> None:
    before = int(time.time() * 1000)
    now_ms = executor._now_ms()
    assert isinstance(now_ms, int)
    assert before <= now_ms <= int(time.time() * 1000)
    for iso_now in (executor._iso_now, persistence._iso_now):
        stamp = iso_now()
        assert isinstance(stamp, str)
        assert datetime.fromisoformat(stamp).tzinfo is not None


def test_executor_reexports_what_the_reference_imported() -> None:
    assert executor.EvaluationResult is evaluators.EvaluationResult
    assert executor.evaluate is evaluators.evaluate
    assert executor.evaluate_exit_code(0).verdict == "success"
    assert executor.evaluate_llm_structured is evaluators.evaluate_llm_structured
    assert executor.interpolate is interpolation.interpolate


def test_interpolate_list() -> None:
    ctx = InterpolationContext(context={"who": "world", "n": 3})
    items = ["hi ${context.who}", 7, ["${context.n}"], {"k": "${context.who}"}]
    assert _interpolate_list(items, ctx) == ["hi world", 7, ["3"], {"k": "world"}]


@pytest.mark.parametrize(
    ("ms", "text"),
    [(500, "500ms"), (30_000, "30s"), (60_000, "1m"), (90_000, "1m 30s"), (3_600_000, "60m")],
)
def test_format_duration(ms: int, text: str) -> None:
    assert _format_duration(ms) == text


def test_validate_evaluator() -> None:
    errors = _validate_evaluator("check", EvaluateConfig("output_numeric", operator="bad"))
    assert [(error.path, error.message) for error in errors] == [
        ("states.check.evaluate", "Evaluator type 'output_numeric' requires 'target' field"),
        (
            "states.check.evaluate.operator",
            "Invalid operator 'bad'. Must be one of: eq, ge, gt, le, lt, ne",
        ),
    ]
    assert _validate_evaluator("check", EvaluateConfig("exit_code")) == []


def test_validate_state_routing() -> None:
    errors = _validate_state_routing("stuck", StateConfig(action="true"))
    assert [error.path for error in errors] == ["states.stuck"]
    assert re.match("State has no transition defined", errors[0].message)
    assert _validate_state_routing("ok", StateConfig(action="true", next="done")) == []


def test_find_reachable_states() -> None:
    assert _find_reachable_states(_passthrough_fsm(FSM_SPEC)) == {"a", "done"}
