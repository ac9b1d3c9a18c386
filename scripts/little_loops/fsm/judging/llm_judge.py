"""The Tier-2 evaluator: ask a Claude model, through the Anthropic SDK, for a verdict.

This module owns the request (prompt, forced `evaluate` tool, truncated output) and the
reading of the answer. It does not import the SDK itself: `evaluators.evaluate_llm_structured`
passes in the module held by `evaluators.anthropic`, so substituting that attribute (as
tests do) reaches this code. Credentials are the SDK's business (API key, auth token, base
URL, whatever it supports): nothing is checked up front, and the SDK's authentication
failures are translated into one clear line. Every expected failure, from missing
credentials to a malformed answer, comes back as an `error` verdict with a message; nothing
here raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from little_loops.fsm.judging.model_prices import cost_of, usage_tokens

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

MISSING_SDK_MESSAGE = "anthropic package not installed. Install with: pip install little-loops[llm]"
MISSING_KEY_MESSAGE = (
    "No Anthropic API key: set ANTHROPIC_API_KEY to use LLM evaluation "
    "(or disable it with llm.enabled: false / --no-llm)"
)
AUTH_REJECTED_MESSAGE = (
    "Anthropic API rejected the credentials ({reason}): check ANTHROPIC_API_KEY "
    "or ANTHROPIC_AUTH_TOKEN (or disable it with llm.enabled: false / --no-llm)"
)
# What the SDK's TypeError says when it finds no credentials at all (it raises it when the
# request is built, not when the client is constructed).
_NO_CREDENTIALS_MARKER = "Could not resolve authentication method"

Verdict = tuple[str, dict[str, Any]]
# Turns the model's tool input into a verdict: (tool_input, min_confidence, uncertain_suffix).
VerdictReader = Callable[[dict[str, Any], float, bool], Verdict]


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
    spent: list[dict[str, Any]] | None = None,
    reader: VerdictReader | None = None,
) -> Verdict:
    """Judge `output` with the model; `sdk` is the `anthropic` module or None when absent.

    `spent` (addition) receives what the call cost (`spending_of`), when it was made;
    `reader` reads the answer (None: `read_verdict`; HEAD files read it their way)."""
    if sdk is None:
        return "error", {"error": MISSING_SDK_MESSAGE, "missing_dependency": True}
    request = build_request(output, prompt, schema, model, max_tokens, timeout)
    try:
        response = _send(sdk, request)
    except _RequestFailed as failure:
        return "error", failure.details
    spending = spending_of(response, model)
    if spent is not None and spending is not None:
        spent.append(spending)
    tool_input = find_tool_input(response)
    if tool_input is None:
        return "error", {"error": "No evaluation in LLM response"}
    return (reader or read_verdict)(tool_input, min_confidence, uncertain_suffix)


def spending_of(response: Any, model: str) -> dict[str, Any] | None:
    """`{"cost_usd", "tokens"}` of one call (cost None when the model is not priced),
    from the `usage` the SDK reports; None when it reports none."""
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    tokens = usage_tokens(usage)
    return {
        "cost_usd": cost_of(str(getattr(response, "model", None) or model), tokens),
        "tokens": tokens,
    }


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
    authentication_error = _sdk_exception(sdk, "AuthenticationError")
    try:
        client = sdk.Anthropic()
    except authentication_error as exc:
        details = {"error": f"Anthropic authentication error: {exc}", "auth_error": True}
        raise _RequestFailed(details) from exc
    except Exception as exc:  # the SDK boundary: a failing client is a verdict, not a crash
        raise _unexpected_failure(sdk, exc) from exc
    try:
        return client.messages.create(**request)
    except _sdk_exception(sdk, "APITimeoutError") as exc:  # before APIError: a subclass
        raise _RequestFailed({"error": "LLM evaluation timeout", "timeout": True}) from exc
    except authentication_error as exc:  # a rejected key surfaces here, at request time
        reason = _one_line(_api_error_message(exc))
        details = {
            "error": AUTH_REJECTED_MESSAGE.format(reason=reason),
            "api_error": True,
            "auth_error": True,
        }
        raise _RequestFailed(details) from exc
    except _sdk_exception(sdk, "APIError") as exc:
        raise _RequestFailed({"error": f"LLM API error: {exc}", "api_error": True}) from exc
    except Exception as exc:  # the SDK boundary, as above
        raise _unexpected_failure(sdk, exc) from exc


class _NeverRaised(Exception):
    """Stands in for an SDK exception class the `anthropic` attribute does not provide."""


def _sdk_exception(sdk: Any, name: str) -> type[BaseException]:
    # A test double (say a MagicMock patched over `evaluators.anthropic`) may not carry real
    # exception classes; `except <non-class>` would itself raise a TypeError.
    candidate = getattr(sdk, name, None)
    if isinstance(candidate, type) and issubclass(candidate, BaseException):
        return candidate
    return _NeverRaised


def _api_error_message(exc: BaseException) -> str:
    """The API's own `error.message` when the body has one, else the exception text."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else str(exc)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _unexpected_failure(sdk: Any, exc: Exception) -> _RequestFailed:
    if isinstance(exc, _sdk_exception(sdk, "CredentialsError")):  # e.g. a profile not found
        details = {"error": f"Anthropic credentials error: {_one_line(str(exc))}"}
        return _RequestFailed({**details, "auth_error": True})
    if isinstance(exc, TypeError) and _NO_CREDENTIALS_MARKER in str(exc):
        return _RequestFailed({"error": MISSING_KEY_MESSAGE, "auth_error": True})
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
