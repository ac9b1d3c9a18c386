"""Tests for the evaluators (fsm-api.md §7 plus decisions.md "Execution").

The Anthropic API is the only boundary that is faked: unit tests put a small fake SDK
module into `evaluators.anthropic`; the end-to-end tests run the real SDK against
`fake_anthropic.FakeAnthropicServer` on 127.0.0.1.
"""

from __future__ import annotations

import importlib
import math
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any
from unittest.mock import MagicMock, patch

import pytest
from fake_anthropic import (
    FakeAnthropicServer,
    Reply,
    error_body,
    text_message,
    tool_use_message,
)

from little_loops.fsm import evaluators
from little_loops.fsm.evaluators import (
    DEFAULT_LLM_PROMPT,
    DEFAULT_LLM_SCHEMA,
    EvaluationResult,
    evaluate,
    evaluate_convergence,
    evaluate_exit_code,
    evaluate_llm_structured,
    evaluate_output_contains,
    evaluate_output_json,
    evaluate_output_numeric,
)
from little_loops.fsm.interpolation import InterpolationContext
from little_loops.fsm.judging.llm_judge import AUTH_REJECTED_MESSAGE
from little_loops.fsm.schema import EvaluateConfig, LLMConfig

NO_KEY_MESSAGE = (
    "No Anthropic API key: set ANTHROPIC_API_KEY to use LLM evaluation "
    "(or disable it with llm.enabled: false / --no-llm)"
)
GOOD_ANSWER = {"verdict": "success", "confidence": 0.9, "reason": "all tests pass"}


def error(message: str) -> EvaluationResult:
    return EvaluationResult("error", {"error": message})


# --- a fake SDK module (the API boundary) --------------------------------------------


class FakeAPIError(Exception):
    pass


class FakeAPITimeoutError(FakeAPIError):
    pass


class FakeAuthenticationError(FakeAPIError):
    pass


def tool_block(tool_input: Any, name: str = "evaluate") -> SimpleNamespace:
    return SimpleNamespace(type="tool_use", name=name, input=tool_input)


def response(*blocks: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(content=list(blocks))


class FakeSDK(ModuleType):
    """Stands in for the `anthropic` module: `Anthropic().messages.create` returns or raises
    `outcome`; `constructor_error` makes `Anthropic()` itself raise."""

    APIError = FakeAPIError
    APITimeoutError = FakeAPITimeoutError
    AuthenticationError = FakeAuthenticationError

    def __init__(self, outcome: Any, constructor_error: Exception | None = None) -> None:
        super().__init__("anthropic")
        self.outcome = outcome
        self.constructor_error = constructor_error
        self.calls: list[dict[str, Any]] = []

    def Anthropic(self) -> SimpleNamespace:
        if self.constructor_error is not None:
            raise self.constructor_error
        return SimpleNamespace(messages=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


def install_sdk(monkeypatch: pytest.MonkeyPatch, sdk: FakeSDK) -> FakeSDK:
    monkeypatch.setattr(evaluators, "anthropic", sdk)
    monkeypatch.setattr(evaluators, "ANTHROPIC_AVAILABLE", True)
    return sdk


def expected_request(output: str, prompt: str = DEFAULT_LLM_PROMPT, **overrides: Any) -> Any:
    request = {
        "model": "claude-sonnet-4-20250514",
        "max_tokens": 256,
        "timeout": 30,
        "messages": [
            {
                "role": "user",
                "content": f"{prompt}\n\n<action_output>\n{output}\n</action_output>",
            }
        ],
        "tools": [
            {
                "name": "evaluate",
                "description": "Provide your evaluation of the action result",
                "input_schema": DEFAULT_LLM_SCHEMA,
            }
        ],
        "tool_choice": {"type": "tool", "name": "evaluate"},
    }
    request.update(overrides)
    return request


# --- constants ------------------------------------------------------------------------


def test_default_prompt_and_schema() -> None:
    assert DEFAULT_LLM_PROMPT == "Evaluate whether this action succeeded based on its output."
    assert DEFAULT_LLM_SCHEMA == {
        "type": "object",
        "properties": {
            "verdict": {
                "type": "string",
                "enum": ["success", "failure", "blocked", "partial"],
                "description": "- success: The action completed its goal\n"
                "- failure: The action failed, should retry\n"
                "- blocked: Cannot proceed without external help\n"
                "- partial: Made progress but not complete",
            },
            "confidence": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "Confidence in this verdict (0-1)",
            },
            "reason": {"type": "string", "description": "Brief explanation"},
        },
        "required": ["verdict", "confidence", "reason"],
    }


# --- exit code ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "verdict"),
    [(0, "success"), (1, "failure"), (2, "error"), (124, "error"), (-9, "error")],
)
def test_exit_code(code: int, verdict: str) -> None:
    assert evaluate_exit_code(code) == EvaluationResult(verdict, {"exit_code": code})


# --- output_numeric -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "target", "verdict"),
    [
        ("eq", 10.0, "success"),
        ("eq", 9.0, "failure"),
        ("ne", 9.0, "success"),
        ("ne", 10.0, "failure"),
        ("lt", 11.0, "success"),
        ("lt", 10.0, "failure"),
        ("le", 10.0, "success"),
        ("le", 9.0, "failure"),
        ("gt", 9.0, "success"),
        ("gt", 10.0, "failure"),
        ("ge", 10.0, "success"),
        ("ge", 11.0, "failure"),
    ],
)
def test_output_numeric_operators(operator: str, target: float, verdict: str) -> None:
    result = evaluate_output_numeric(" 1e1\n", operator, target)
    assert result == EvaluationResult(
        verdict, {"value": 10.0, "target": target, "operator": operator}
    )


def test_output_numeric_accepts_python_float_spellings() -> None:
    assert evaluate_output_numeric("inf", "gt", 1e308).verdict == "success"
    nan_result = evaluate_output_numeric("nan", "eq", 0.0)
    assert nan_result.verdict == "failure"
    assert math.isnan(nan_result.details["value"])


def test_output_numeric_unparsable_output_shows_first_100_chars() -> None:
    output = "x" * 150
    assert evaluate_output_numeric(output, "zz", 1.0) == error(
        f"Cannot parse as number: {'x' * 100}"
    )


def test_output_numeric_unknown_operator() -> None:
    assert evaluate_output_numeric("3", "approx", 3.0) == error("Unknown operator: approx")


# --- output_json ----------------------------------------------------------------------

DOCUMENT = '{"a": {"b": [10, {"c": "done"}], "flag": true}, "": "root-key", "n": 2.5}'


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("a.b.0", 10),
        (".a.b.0", 10),
        ("a.b.1.c", "done"),
        ("a.flag", True),
        ("", "root-key"),
        ("n", 2.5),
    ],
)
def test_output_json_paths(path: str, value: Any) -> None:
    result = evaluate_output_json(DOCUMENT, path, "eq", value)
    assert result == EvaluationResult(
        "success", {"value": value, "path": path, "target": value, "operator": "eq"}
    )


@pytest.mark.parametrize("path", ["a.x", "a.b.2", "a.b.-1", "a.b.first", "a.b.²", "n.x", ".."])
def test_output_json_path_not_found(path: str) -> None:
    assert evaluate_output_json(DOCUMENT, path, "eq", 1) == error(f"Path not found: {path}")


def test_output_json_invalid_json() -> None:
    assert evaluate_output_json("not json", "a", "eq", 1) == error(
        "Invalid JSON: Expecting value: line 1 column 1 (char 0)"
    )


@pytest.mark.parametrize(
    ("operator", "target", "verdict"),
    [("lt", 11, "success"), ("ge", 10.5, "failure"), ("eq", 10.0, "success")],
)
def test_output_json_numeric_comparison(operator: str, target: float, verdict: str) -> None:
    assert evaluate_output_json(DOCUMENT, "a.b.0", operator, target).verdict == verdict


def test_output_json_booleans_count_as_numbers() -> None:
    assert evaluate_output_json(DOCUMENT, "a.flag", "ge", 1).verdict == "success"
    assert evaluate_output_json(DOCUMENT, "a.flag", "xx", 1) == error("Unknown operator: xx")


def test_output_json_non_numeric_values_allow_only_equality() -> None:
    assert evaluate_output_json(DOCUMENT, "a.b.1.c", "ne", "done").verdict == "failure"
    assert evaluate_output_json(DOCUMENT, "a.b.0", "eq", "10").verdict == "failure"
    assert evaluate_output_json(DOCUMENT, "a.b.1.c", "gt", "a") == error(
        "Operator gt not supported for non-numeric values"
    )


# --- output_contains ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "pattern", "negate", "matched", "verdict"),
    [
        ("3 passed in 0.1s", r"\d+ passed", False, True, "success"),
        ("3 failed", r"\d+ passed", False, False, "failure"),
        ("3 failed", "FAILED", False, False, "failure"),
        ("ERROR: boom", "ERROR", True, True, "failure"),
        ("all good", "ERROR", True, False, "success"),
        ("value a[b here", "a[b", False, True, "success"),
        ("nothing", "a[b", False, False, "failure"),
        ("anything", "", False, True, "success"),
    ],
)
def test_output_contains(
    output: str, pattern: str, negate: bool, matched: bool, verdict: str
) -> None:
    assert evaluate_output_contains(output, pattern, negate) == EvaluationResult(
        verdict, {"matched": matched, "pattern": pattern, "negate": negate}
    )


# --- convergence ----------------------------------------------------------------------


def test_convergence_within_tolerance_is_target() -> None:
    assert evaluate_convergence(0.4, 3.0, 0.0, 0.5) == EvaluationResult(
        "target", {"current": 0.4, "target": 0.0, "delta": 0}
    )


def test_convergence_without_previous_is_progress() -> None:
    assert evaluate_convergence(5.0, None, 0.0) == EvaluationResult(
        "progress", {"current": 5.0, "previous": None, "target": 0.0, "delta": None}
    )


@pytest.mark.parametrize(
    ("current", "previous", "direction", "verdict"),
    [
        (4.0, 5.0, "minimize", "progress"),
        (5.0, 5.0, "minimize", "stall"),
        (6.0, 5.0, "minimize", "stall"),
        (6.0, 5.0, "maximize", "progress"),
        (4.0, 5.0, "maximize", "stall"),
        (-3.0, 5.0, "minimize", "progress"),  # overshooting the target still counts
    ],
)
def test_convergence_against_previous(
    current: float, previous: float, direction: str, verdict: str
) -> None:
    assert evaluate_convergence(current, previous, 1.0, 0.0, direction) == EvaluationResult(
        verdict,
        {
            "current": current,
            "previous": previous,
            "target": 1.0,
            "delta": current - previous,
            "direction": direction,
        },
    )


# --- evaluate_llm_structured with the fake SDK ----------------------------------------


def test_llm_success_sends_the_documented_request(
    monkeypatch: pytest.MonkeyPatch, api_key: None
) -> None:
    sdk = install_sdk(monkeypatch, FakeSDK(response(tool_block(GOOD_ANSWER))))
    result = evaluate_llm_structured("build ok")
    assert result == EvaluationResult(
        "success",
        {"confidence": 0.9, "confident": True, "reason": "all tests pass", "raw": GOOD_ANSWER},
    )
    assert sdk.calls == [expected_request("build ok")]


def test_llm_custom_settings_and_output_tail(
    monkeypatch: pytest.MonkeyPatch, api_key: None
) -> None:
    sdk = install_sdk(monkeypatch, FakeSDK(response(tool_block(GOOD_ANSWER))))
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}
    output = "H" * 10 + "T" * 4000
    evaluate_llm_structured(output, "Judge it.", schema, model="m", max_tokens=9, timeout=3)
    tool = {
        "name": "evaluate",
        "description": "Provide your evaluation of the action result",
        "input_schema": schema,
    }
    assert sdk.calls == [
        expected_request("T" * 4000, "Judge it.", model="m", max_tokens=9, timeout=3, tools=[tool])
    ]


def test_llm_empty_prompt_and_schema_mean_default(
    monkeypatch: pytest.MonkeyPatch, api_key: None
) -> None:
    sdk = install_sdk(monkeypatch, FakeSDK(response(tool_block(GOOD_ANSWER))))
    evaluate_llm_structured("out", "", {})
    assert sdk.calls == [expected_request("out")]


@pytest.mark.parametrize(
    ("answer", "suffix", "verdict", "confidence", "confident", "reason"),
    [
        ({"verdict": "failure", "confidence": 0.3, "reason": "r"}, True, "failure_uncertain",
         0.3, False, "r"),
        ({"verdict": "failure", "confidence": 0.3, "reason": "r"}, False, "failure", 0.3, False,
         "r"),
        ({"verdict": "partial", "confidence": 0.5}, True, "partial", 0.5, True, ""),
        ({"reason": "no verdict"}, False, "error", 1.0, True, "no verdict"),
        ({"verdict": 7, "confidence": "0.8", "reason": "r"}, False, "7", 0.8, True, "r"),
    ],
)  # fmt: skip
def test_llm_reading_the_answer(
    monkeypatch: pytest.MonkeyPatch,
    api_key: None,
    answer: dict[str, Any],
    suffix: bool,
    verdict: str,
    confidence: float,
    confident: bool,
    reason: str,
) -> None:
    install_sdk(monkeypatch, FakeSDK(response(tool_block(answer))))
    result = evaluate_llm_structured("out", uncertain_suffix=suffix)
    assert result == EvaluationResult(
        verdict, {"confidence": confidence, "confident": confident, "reason": reason, "raw": answer}
    )


@pytest.mark.parametrize("confidence", ["high", None, [1]])
def test_llm_non_numeric_confidence_is_an_error_verdict(
    monkeypatch: pytest.MonkeyPatch, api_key: None, confidence: Any
) -> None:
    answer = {"verdict": "success", "confidence": confidence}
    install_sdk(monkeypatch, FakeSDK(response(tool_block(answer))))
    assert evaluate_llm_structured("out") == error(
        f"LLM returned a non-numeric confidence: {confidence!r}"
    )


def test_llm_uses_first_evaluate_tool_block(monkeypatch: pytest.MonkeyPatch, api_key: None) -> None:
    blocks = (
        SimpleNamespace(type="text", text="thinking"),
        tool_block({"verdict": "blocked"}, name="other"),
        tool_block({"verdict": "partial", "confidence": 1}),
        tool_block({"verdict": "success"}),
    )
    install_sdk(monkeypatch, FakeSDK(response(*blocks)))
    assert evaluate_llm_structured("out").verdict == "partial"


@pytest.mark.parametrize(
    "reply",
    [
        response(),
        response(SimpleNamespace(type="text", text="I think it worked")),
        response(tool_block({"verdict": "success"}, name="other")),
        response(tool_block("not a dict")),
        SimpleNamespace(),
    ],
)
def test_llm_without_evaluation(monkeypatch: pytest.MonkeyPatch, api_key: None, reply: Any) -> None:
    install_sdk(monkeypatch, FakeSDK(reply))
    assert evaluate_llm_structured("out") == error("No evaluation in LLM response")


@pytest.mark.parametrize(
    ("raised", "details"),
    [
        (FakeAPITimeoutError("slow"), {"error": "LLM evaluation timeout", "timeout": True}),
        (FakeAPIError("overloaded"), {"error": "LLM API error: overloaded", "api_error": True}),
        (
            FakeAuthenticationError("invalid x-api-key"),
            {
                "error": AUTH_REJECTED_MESSAGE.format(reason="invalid x-api-key"),
                "api_error": True,
                "auth_error": True,
            },
        ),
        (
            TypeError('"Could not resolve authentication method. Expected one of api_key"'),
            {"error": NO_KEY_MESSAGE, "auth_error": True},
        ),
        (
            RuntimeError("socket closed"),
            {"error": "LLM evaluation failed: RuntimeError: socket closed"},
        ),
    ],
)
def test_llm_request_failures_are_verdicts(
    monkeypatch: pytest.MonkeyPatch, api_key: None, raised: Exception, details: dict[str, Any]
) -> None:
    install_sdk(monkeypatch, FakeSDK(raised))
    assert evaluate_llm_structured("out") == EvaluationResult("error", details)


@pytest.mark.parametrize(
    ("raised", "details"),
    [
        (
            FakeAuthenticationError("bad key"),
            {"error": "Anthropic authentication error: bad key", "auth_error": True},
        ),
        (TypeError("no auth"), {"error": "LLM evaluation failed: TypeError: no auth"}),
    ],
)
def test_llm_client_construction_failures_are_verdicts(
    monkeypatch: pytest.MonkeyPatch, api_key: None, raised: Exception, details: dict[str, Any]
) -> None:
    sdk = install_sdk(monkeypatch, FakeSDK(response(), constructor_error=raised))
    assert evaluate_llm_structured("out") == EvaluationResult("error", details)
    assert sdk.calls == []


@pytest.mark.parametrize(("sdk_value", "available"), [(None, True), ("sdk", False)])
def test_llm_missing_sdk(
    monkeypatch: pytest.MonkeyPatch, api_key: None, sdk_value: Any, available: bool
) -> None:
    sdk = FakeSDK(response(tool_block(GOOD_ANSWER)))
    monkeypatch.setattr(evaluators, "anthropic", sdk if sdk_value == "sdk" else None)
    monkeypatch.setattr(evaluators, "ANTHROPIC_AVAILABLE", available)
    assert evaluate_llm_structured("out") == EvaluationResult(
        "error",
        {
            "error": "anthropic package not installed. Install with: pip install little-loops[llm]",
            "missing_dependency": True,
        },
    )
    assert sdk.calls == []


def test_llm_reference_style_patch_drives_the_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's tests patch `little_loops.fsm.evaluators.anthropic` with a MagicMock
    and set no API key; the evaluator must use the patched module at call time."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    block = MagicMock(type="tool_use", input=GOOD_ANSWER)
    block.name = "evaluate"  # `name` is MagicMock's own keyword, so it is set afterwards
    with patch("little_loops.fsm.evaluators.anthropic") as mock_anthropic:
        mock_anthropic.Anthropic.return_value.messages.create.return_value = MagicMock(
            content=[block]
        )
        result = evaluate_llm_structured("3 passed")
    assert result.verdict == "success"
    assert result.details["reason"] == "all tests pass"
    create = mock_anthropic.Anthropic.return_value.messages.create
    assert create.call_args.kwargs == expected_request("3 passed")


def test_llm_reference_style_patch_raising_is_a_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """A MagicMock SDK has no real exception classes; what it raises is still a verdict."""
    with patch("little_loops.fsm.evaluators.anthropic") as mock_anthropic:
        mock_anthropic.Anthropic.return_value.messages.create.side_effect = OSError("down")
        result = evaluate_llm_structured("out")
    assert result == error("LLM evaluation failed: OSError: down")


def test_llm_reference_style_unavailable_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's tests patch `ANTHROPIC_AVAILABLE` to False to simulate no SDK."""
    with patch("little_loops.fsm.evaluators.ANTHROPIC_AVAILABLE", False):
        result = evaluate_llm_structured("out")
    assert result.details == {
        "error": "anthropic package not installed. Install with: pip install little-loops[llm]",
        "missing_dependency": True,
    }


# --- the optional SDK attribute -------------------------------------------------------


def test_sdk_attribute_is_the_installed_module() -> None:
    assert evaluators.ANTHROPIC_AVAILABLE is True
    assert evaluators.anthropic is importlib.import_module("anthropic")


def test_sdk_attribute_is_none_when_import_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    assert evaluators.anthropic is not None  # loaded, so monkeypatch can restore it
    monkeypatch.delattr(evaluators, "anthropic")
    monkeypatch.setitem(sys.modules, "anthropic", None)  # makes `import anthropic` fail
    assert evaluators.anthropic is None


def test_unknown_module_attribute() -> None:
    with pytest.raises(AttributeError) as caught:
        _ = evaluators.not_there
    assert str(caught.value) == "module 'little_loops.fsm.evaluators' has no attribute 'not_there'"


# --- dispatcher -----------------------------------------------------------------------


def run(config: EvaluateConfig, output: str = "", exit_code: int = 0, **ctx: Any) -> Any:
    return evaluate(config, output, exit_code, InterpolationContext(**ctx))


def test_dispatch_exit_code() -> None:
    assert run(EvaluateConfig("exit_code"), "ignored", 1) == evaluate_exit_code(1)


def test_dispatch_unknown_type() -> None:
    # Issue 27: raises as the reference does (was an `error` verdict).
    with pytest.raises(ValueError) as raised:
        run(EvaluateConfig("vibes"))
    assert str(raised.value) == "Unknown evaluator type: vibes"


@pytest.mark.parametrize(
    ("target", "output", "expected_target"),
    [(None, "0", 0.0), (3, "3", 3.0), ("3", "3", 3.0), ("${context.limit}", "7", 7.0)],
)
def test_dispatch_numeric_targets(target: Any, output: str, expected_target: float) -> None:
    result = run(EvaluateConfig("output_numeric", target=target), output, context={"limit": 7})
    assert result == EvaluationResult(
        "success", {"value": float(output), "target": expected_target, "operator": "eq"}
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("abc", "Cannot resolve target: could not convert string to float: 'abc'"),
        ("${context.nope}", "Cannot resolve target: Path 'nope' not found in context"),
        (
            ["x"],
            "Cannot resolve target: float() argument must be a string or a real number, not 'list'",
        ),
    ],
)
def test_dispatch_numeric_bad_target_is_an_error_verdict(target: Any, message: str) -> None:
    config = EvaluateConfig("output_numeric", operator="lt", target=target)
    assert run(config, "1") == error(message)


def test_dispatch_json_defaults_and_typed_context_target() -> None:
    assert run(EvaluateConfig("output_json"), '{"": null}').verdict == "success"
    config = EvaluateConfig(
        "output_json", path="${context.key}", operator="ge", target="${context.min}"
    )
    result = run(config, '{"count": 4}', context={"key": "count", "min": 3})
    assert result == EvaluationResult(
        "success", {"value": 4, "path": "count", "target": 3, "operator": "ge"}
    )


def test_dispatch_json_mixed_template_target_is_a_string() -> None:
    config = EvaluateConfig("output_json", path="tag", target="v${context.n}")
    assert run(config, '{"tag": "v2"}', context={"n": 2}).verdict == "success"


@pytest.mark.parametrize(
    ("path", "target", "message"),
    [
        ("${context.x}", 1, "Cannot resolve path: Path 'x' not found in context"),
        ("a", "${prev.output}", "Cannot resolve target: No previous state result available"),
    ],
)
def test_dispatch_json_unresolvable_settings(path: str, target: Any, message: str) -> None:
    assert run(EvaluateConfig("output_json", path=path, target=target), '{"a": 1}') == error(
        message
    )


def test_dispatch_contains() -> None:
    assert run(EvaluateConfig("output_contains"), "x").verdict == "success"
    config = EvaluateConfig("output_contains", pattern="^${context.word}$", negate=True)
    assert run(config, "hello", context={"word": "hello"}) == EvaluationResult(
        "failure", {"matched": True, "pattern": "^hello$", "negate": True}
    )
    literal = EvaluateConfig("output_contains", pattern="$${x}")
    assert run(literal, "cost ${x}").details["pattern"] == "${x}"


def test_dispatch_contains_unresolvable_pattern() -> None:
    config = EvaluateConfig("output_contains", pattern="${captured.x.output}")
    assert run(config, "x") == error("Cannot resolve pattern: Path 'x' not found in captured")


def test_dispatch_source_replaces_output() -> None:
    config = EvaluateConfig("output_contains", pattern="ready", source="${captured.probe.output}")
    captured = {"probe": {"output": "ready\n"}}
    assert run(config, "stdout ignored", captured=captured).verdict == "success"
    assert run(config, "ready", captured={}) == error(
        "Cannot resolve source: Path 'probe' not found in captured"
    )
    numeric = EvaluateConfig("output_numeric", operator="gt", target=1, source="${context.n}")
    assert run(numeric, "", context={"n": 5}).verdict == "success"


def convergence(**fields: Any) -> EvaluateConfig:
    return EvaluateConfig("convergence", **fields)


def test_dispatch_convergence_uses_previous_from_prev() -> None:
    config = convergence(target=0, previous="${prev.output}", tolerance="${context.tol}")
    result = run(config, " 3\n", prev={"output": "5"}, context={"tol": "0.5"})
    assert result == EvaluationResult(
        "progress",
        {"current": 3.0, "previous": 5.0, "target": 0.0, "delta": -2.0, "direction": "minimize"},
    )


@pytest.mark.parametrize(
    ("previous", "prev"),
    [("${prev.output}", None), ("${prev.output}", {"output": ""}), ("", {"output": "1"})],
)
def test_dispatch_convergence_unresolvable_previous_is_none(
    previous: str, prev: dict[str, Any] | None
) -> None:
    result = run(convergence(target=0, previous=previous), "3", prev=prev)
    assert result == EvaluationResult(
        "progress", {"current": 3.0, "previous": None, "target": 0.0, "delta": None}
    )


def test_dispatch_convergence_target_and_tolerance() -> None:
    within = convergence(target="${context.goal}", tolerance=1)
    assert run(within, "9.5", context={"goal": 10}).verdict == "target"
    # an unresolvable tolerance silently becomes 0
    strict = convergence(target=10.0, tolerance="${context.missing}")
    assert run(strict, "9.5").verdict == "progress"
    assert run(convergence(), "0").verdict == "target"
    maximize = convergence(target=100, previous="5", direction="maximize")
    assert run(maximize, "6").details["direction"] == "maximize"


@pytest.mark.parametrize(
    ("config", "output", "message"),
    [
        (convergence(target="${context.goal}"), "", "Cannot parse output as number: "),
        (
            convergence(target="${context.goal}"),
            "3",
            "Cannot resolve target: Path 'goal' not found in context",
        ),
        (
            convergence(target="high"),
            "3",
            "Cannot resolve target: could not convert string to float: 'high'",
        ),
    ],
)
def test_dispatch_convergence_errors(config: EvaluateConfig, output: str, message: str) -> None:
    assert run(config, output) == error(message)


def test_dispatch_llm_uses_loop_settings(monkeypatch: pytest.MonkeyPatch, api_key: None) -> None:
    answer = {"verdict": "success", "confidence": 0.6, "reason": "ok"}
    sdk = install_sdk(monkeypatch, FakeSDK(response(tool_block(answer))))
    config = EvaluateConfig(
        "llm_structured", prompt="Did it work?", min_confidence=0.7, uncertain_suffix=True
    )
    llm = LLMConfig(model="claude-x", max_tokens=64, timeout=5)
    result = evaluate(config, "out", 0, InterpolationContext(), llm=llm)
    assert result.verdict == "success_uncertain"
    assert sdk.calls == [
        expected_request("out", "Did it work?", model="claude-x", max_tokens=64, timeout=5)
    ]


def test_dispatch_llm_without_settings_uses_defaults(
    monkeypatch: pytest.MonkeyPatch, api_key: None
) -> None:
    sdk = install_sdk(monkeypatch, FakeSDK(response(tool_block(GOOD_ANSWER))))
    assert run(EvaluateConfig("llm_structured"), "out").verdict == "success"
    assert sdk.calls == [expected_request("out")]


def test_dispatch_llm_disabled(monkeypatch: pytest.MonkeyPatch, api_key: None) -> None:
    sdk = install_sdk(monkeypatch, FakeSDK(response(tool_block(GOOD_ANSWER))))
    result = evaluate(
        EvaluateConfig("llm_structured"), "out", 0, InterpolationContext(), LLMConfig(enabled=False)
    )
    assert result == EvaluationResult(
        "error",
        {"error": "LLM evaluation disabled (llm.enabled: false or --no-llm)", "llm_disabled": True},
    )
    assert sdk.calls == []


# --- the real SDK against a local fake API ---------------------------------------------


# The SDK warns that the reference's default model is deprecated; that is not under test.
quiet_model_deprecation = pytest.mark.filterwarnings(
    "ignore:The model .* is deprecated:DeprecationWarning"
)


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch, api_key: None) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


@quiet_model_deprecation
def test_real_sdk_success(fake_api: FakeAnthropicServer) -> None:
    fake_api.replies.append(Reply(tool_use_message(GOOD_ANSWER)))
    result = evaluate_llm_structured("3 passed", timeout=5)
    assert result == EvaluationResult(
        "success",
        {"confidence": 0.9, "confident": True, "reason": "all tests pass", "raw": GOOD_ANSWER},
    )
    [request] = fake_api.requests
    assert request.path == "/v1/messages"
    # SDK versions differ in how they send the key (x-api-key or a bearer token).
    sent_keys = {
        request.headers.get("x-api-key"),
        request.headers.get("authorization", "").removeprefix("Bearer "),
    }
    assert "test-key" in sent_keys
    body = expected_request("3 passed")
    del body["timeout"]  # a client-side setting, not part of the request body
    assert request.body == body


@quiet_model_deprecation
def test_real_sdk_reply_without_tool_use(fake_api: FakeAnthropicServer) -> None:
    fake_api.replies.append(Reply(text_message("It probably worked.")))
    assert evaluate_llm_structured("out", timeout=5) == error("No evaluation in LLM response")


@quiet_model_deprecation
def test_real_sdk_rejected_key(fake_api: FakeAnthropicServer) -> None:
    body = error_body("authentication_error", "invalid x-api-key")
    fake_api.replies.append(Reply(body, status=401))
    result = evaluate_llm_structured("out", timeout=5)
    assert result.details["error"] == (
        "Anthropic API rejected the credentials (invalid x-api-key): check ANTHROPIC_API_KEY "
        "or ANTHROPIC_AUTH_TOKEN (or disable it with llm.enabled: false / --no-llm)"
    )
    assert (result.verdict, result.details["auth_error"]) == ("error", True)


@pytest.fixture
def no_sdk_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credential of any kind the SDK could find (it also looks under ~/.config)."""
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


@quiet_model_deprecation
@pytest.mark.usefixtures("no_sdk_credentials")
def test_real_sdk_auth_token_and_base_url_without_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As in the reference, the SDK resolves credentials: an auth token is enough."""
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-123")
        server.replies.append(Reply(tool_use_message(GOOD_ANSWER)))
        result = evaluate_llm_structured("3 passed", timeout=5)
    assert result.verdict == "success"
    assert server.requests[0].headers["authorization"] == "Bearer token-123"


@quiet_model_deprecation
@pytest.mark.usefixtures("no_sdk_credentials")
def test_real_sdk_without_credentials_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        result = evaluate_llm_structured("out", timeout=5)
    assert result == EvaluationResult("error", {"error": NO_KEY_MESSAGE, "auth_error": True})
    assert server.requests == []


@quiet_model_deprecation
@pytest.mark.usefixtures("no_sdk_credentials")
def test_real_sdk_missing_credentials_profile_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A profile the SDK cannot find is a clear credentials error, not a crash."""
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "empty-config"))
    result = evaluate_llm_structured("out", timeout=5)
    assert result.verdict == "error"
    assert result.details["auth_error"] is True
    assert result.details["error"].startswith("Anthropic credentials error: Config file not")
    assert "\n" not in result.details["error"]


def test_fake_server_answers_404_elsewhere(fake_api: FakeAnthropicServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(urllib.request.Request(f"{fake_api.base_url}/v1/other", b"{}"))
    assert caught.value.code == 404
    assert fake_api.requests[0].path == "/v1/other"
