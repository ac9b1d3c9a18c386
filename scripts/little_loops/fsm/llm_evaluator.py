"""The Tier-2 evaluator: ask a Claude model, through the Anthropic SDK, for a verdict.

This module owns the request (prompt, forced `evaluate` tool, truncated output) and the
reading of the answer. It does not import the SDK itself: `evaluators.evaluate_llm_structured`
passes in the module held by `evaluators.anthropic`, so substituting that attribute (as
tests do) reaches this code. Every expected failure, from a missing key to a malformed
answer, comes back as an `error` verdict with a message; nothing here raises.
"""

from __future__ import annotations

import os
from typing import Any

DEFAULT_LLM_PROMPT = "Evaluate whether this action succeeded based on its output."

DEFAULT_LLM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {
            "type": "string",
            "enum": ["success", "failure", "blocked", "partial"],
            "description": (
                "- success: The action completed its goal\n"
                "- failure: The action failed, should retry\n"
                "- blocked: Cannot proceed without external help\n"
                "- partial: Made progress but not complete"
            ),
        },
        "confidence": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": "Confidence in this verdict (0-1)",
        },
        "reason": {
            "type": "string",
            "description": "Brief explanation",
        },
    },
    "required": ["verdict", "confidence", "reason"],
}

EVALUATE_TOOL_NAME = "evaluate"
# Only the tail is sent: the end of an action's output is where its outcome is reported.
MAX_OUTPUT_CHARS = 4000
API_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

MISSING_SDK_MESSAGE = "anthropic package not installed. Install with: pip install little-loops[llm]"
MISSING_KEY_MESSAGE = (
    "No Anthropic API key: set ANTHROPIC_API_KEY to use LLM evaluation "
    "(or disable it with llm.enabled: false / --no-llm)"
)

Verdict = tuple[str, dict[str, Any]]


def ask_model(
    sdk: Any,
    output: str,
    *,
    prompt: str | None,
    schema: dict[str, Any] | None,
    min_confidence: float,
    uncertain_suffix: bool,
    model: str,
    max_tokens: int,
    timeout: int,
) -> Verdict:
    """Judge `output` with the model; `sdk` is the `anthropic` module or None when absent."""
    if sdk is None:
        return "error", {"error": MISSING_SDK_MESSAGE, "missing_dependency": True}
    if not any(os.environ.get(name) for name in API_KEY_VARIABLES):
        # Checked up front: without a key the SDK fails with an obscure TypeError.
        return "error", {"error": MISSING_KEY_MESSAGE, "auth_error": True}
    request = build_request(output, prompt, schema, model, max_tokens, timeout)
    try:
        response = _send(sdk, request)
    except _RequestFailed as failure:
        return "error", failure.details
    tool_input = find_tool_input(response)
    if tool_input is None:
        return "error", {"error": "No evaluation in LLM response"}
    return read_verdict(tool_input, min_confidence, uncertain_suffix)


def build_request(
    output: str,
    prompt: str | None,
    schema: dict[str, Any] | None,
    model: str,
    max_tokens: int,
    timeout: int,
) -> dict[str, Any]:
    """Keyword arguments for `client.messages.create` (empty prompt/schema mean default)."""
    content = (
        f"{prompt or DEFAULT_LLM_PROMPT}\n\n"
        f"<action_output>\n{output[-MAX_OUTPUT_CHARS:]}\n</action_output>"
    )
    tool = {
        "name": EVALUATE_TOOL_NAME,
        "description": "Provide your evaluation of the action result",
        "input_schema": schema or DEFAULT_LLM_SCHEMA,
    }
    return {
        "model": model,
        "max_tokens": max_tokens,
        "timeout": timeout,
        "messages": [{"role": "user", "content": content}],
        "tools": [tool],
        "tool_choice": {"type": "tool", "name": EVALUATE_TOOL_NAME},
    }


class _RequestFailed(Exception):
    """Carries the details of an `error` verdict out of `_send`."""

    def __init__(self, details: dict[str, Any]) -> None:
        super().__init__(details["error"])
        self.details = details


def _send(sdk: Any, request: dict[str, Any]) -> Any:
    """Return the SDK response; raise `_RequestFailed` for anything the SDK raised."""
    try:
        client = sdk.Anthropic()
    except sdk.AuthenticationError as exc:
        details = {"error": f"Anthropic authentication error: {exc}", "auth_error": True}
        raise _RequestFailed(details) from exc
    except Exception as exc:  # the SDK boundary: a failing client is a verdict, not a crash
        raise _unexpected_failure(exc) from exc
    try:
        return client.messages.create(**request)
    except sdk.APITimeoutError as exc:  # before APIError: it is a subclass
        raise _RequestFailed({"error": "LLM evaluation timeout", "timeout": True}) from exc
    except sdk.APIError as exc:
        details = {"error": f"LLM API error: {exc}", "api_error": True}
        if isinstance(exc, sdk.AuthenticationError):
            # A bad key surfaces here, at request time; flag it so the CLI can explain.
            details["auth_error"] = True
        raise _RequestFailed(details) from exc
    except Exception as exc:  # the SDK boundary, as above
        raise _unexpected_failure(exc) from exc


def _unexpected_failure(exc: Exception) -> _RequestFailed:
    return _RequestFailed({"error": f"LLM evaluation failed: {type(exc).__name__}: {exc}"})


def find_tool_input(response: Any) -> dict[str, Any] | None:
    """The input of the first `evaluate` tool_use block, or None when there is none."""
    for block in getattr(response, "content", None) or []:
        is_evaluation = (
            getattr(block, "type", None) == "tool_use"
            and getattr(block, "name", None) == EVALUATE_TOOL_NAME
        )
        if is_evaluation:
            tool_input = getattr(block, "input", None)
            return tool_input if isinstance(tool_input, dict) else None
    return None


def read_verdict(
    tool_input: dict[str, Any], min_confidence: float, uncertain_suffix: bool
) -> Verdict:
    """Turn the model's tool input into (verdict, details)."""
    raw_confidence = tool_input.get("confidence", 1.0)
    try:
        confidence = float(raw_confidence)
    except (TypeError, ValueError):
        return "error", {"error": f"LLM returned a non-numeric confidence: {raw_confidence!r}"}
    verdict = str(tool_input.get("verdict", "error"))
    confident = confidence >= min_confidence
    if uncertain_suffix and not confident:
        verdict = f"{verdict}_uncertain"
    details = {
        "confidence": confidence,
        "confident": confident,
        "reason": tool_input.get("reason", ""),
        "raw": tool_input,
    }
    return verdict, details
