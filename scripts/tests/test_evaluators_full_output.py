"""`output_contains` and `output_json` read the whole output from its log when it was cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from little_loops.fsm import evaluators
from little_loops.fsm.evaluators import (
    EvaluationResult,
    evaluate,
    evaluate_output_contains,
    evaluate_output_json,
)
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.schema import EvaluateConfig

TAIL = "[output truncated: 123 earlier bytes dropped]\nlast line\n"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "1-test.log"
    path.write_text("collected 3 items\nERROR in setup\n" + "ok\n" * 1000 + "last line\n")
    return path


def test_contains_searches_the_whole_log_not_the_tail(log: Path) -> None:
    assert evaluate_output_contains(TAIL, "ERROR", log_path=str(log)) == EvaluationResult(
        "success", {"matched": True, "pattern": "ERROR", "negate": False}
    )
    assert evaluate_output_contains(TAIL, "ERROR").verdict == "failure"  # the tail alone
    assert evaluate_output_contains(TAIL, "ERROR", negate=True, log_path=str(log)).verdict == (
        "failure"
    )
    assert evaluate_output_contains(TAIL, "truncated", log_path=str(log)).verdict == "failure"


def test_contains_with_an_invalid_regex_looks_for_the_text_in_the_log(log: Path) -> None:
    result = evaluate_output_contains(TAIL, "ERROR in (setup", log_path=str(log))
    assert result.verdict == "failure"
    result = evaluate_output_contains(TAIL, "[setup", log_path=str(log))
    assert result.verdict == "failure"
    log.write_text("a [setup here\n")
    assert evaluate_output_contains(TAIL, "[setup", log_path=str(log)).verdict == "success"


def test_a_log_that_is_gone_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "gone.log"
    assert evaluate_output_contains(TAIL, "x", log_path=str(missing)) == EvaluationResult(
        "error", {"error": f"Cannot read the full output in {missing}: No such file or directory"}
    )
    assert evaluate_output_json(TAIL, "a", "eq", 1, log_path=str(missing)) == EvaluationResult(
        "error", {"error": f"Cannot read the full output in {missing}: No such file or directory"}
    )


def test_json_parses_the_whole_log(tmp_path: Path) -> None:
    path = tmp_path / "1-report.log"
    path.write_text(json.dumps({"summary": {"failed": 0}, "padding": "x" * 5000}))
    result = evaluate_output_json('x" * 5000}', ".summary.failed", "eq", 0, log_path=str(path))
    assert result == EvaluationResult(
        "success", {"value": 0, "path": ".summary.failed", "target": 0, "operator": "eq"}
    )


def test_json_refuses_a_log_over_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluators, "JSON_LOG_LIMIT_BYTES", 10)
    path = tmp_path / "1-report.log"
    path.write_text('{"a": 1, "b": 2}')
    assert evaluate_output_json("", "a", "eq", 1, log_path=str(path)) == EvaluationResult(
        "error", {"error": f"Output too large for output_json: {path} holds 16 bytes (limit 10)"}
    )


def test_the_dispatcher_hands_the_log_to_contains_and_json(log: Path, tmp_path: Path) -> None:
    ctx = InterpolationContext()
    contains = EvaluateConfig("output_contains", pattern="ERROR")
    assert evaluate(contains, TAIL, 0, ctx, log_path=str(log)).verdict == "success"
    report = tmp_path / "report.log"
    report.write_text('{"n": 3}')
    as_json = EvaluateConfig("output_json", path="n", operator="eq", target=3)
    assert evaluate(as_json, "junk", 0, ctx, log_path=str(report)).verdict == "success"


def test_a_source_is_judged_itself_never_the_log(log: Path) -> None:
    ctx = InterpolationContext(context={"value": "all fine"})
    config = EvaluateConfig("output_contains", pattern="ERROR", source="${context.value}")
    assert evaluate(config, TAIL, 0, ctx, log_path=str(log)).verdict == "failure"
