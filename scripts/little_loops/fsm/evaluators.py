"""Turn an action's result (output, exit code) into a verdict plus details.

This module owns the Tier-1 evaluators (exit code, numbers, JSON, text, convergence), the
`evaluate` dispatcher that reads an `EvaluateConfig`, and the entry point of the Tier-2
LLM evaluator (whose request/answer handling lives in `judging/llm_judge`), and the agent
report evaluator `return_metadata` (its parsing lives in `return_metadata`). It never
chooses the next state. Expected failures are verdicts (`error`, with `details["error"]`), never
exceptions, so one bad evaluation cannot crash a loop.

The optional Anthropic SDK is held in the module attribute `anthropic` (None when it is
not installed; imported on first use) and `ANTHROPIC_AVAILABLE`; the LLM evaluator reads
both at call time, so tests substitute them here.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import operator as _op
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from little_loops.fsm.interpolation import (
    InterpolationContext,
    InterpolationError,
    interpolate,
    resolve_template,
)
from little_loops.fsm.judging.head_evaluate import Judged, evaluate_head
from little_loops.fsm.judging.llm_judge import DEFAULT_LLM_PROMPT, DEFAULT_LLM_SCHEMA, ask_model
from little_loops.fsm.model.head_loop import HeadEvaluateConfig
from little_loops.fsm.process.output_files import LogTooLargeError, read_log_text, search_log
from little_loops.fsm.schema import (
    DEFAULT_LLM_MAX_TOKENS,
    DEFAULT_LLM_MODEL,
    DEFAULT_LLM_TIMEOUT,
    DEFAULT_MIN_CONFIDENCE,
    EvaluateConfig,
    LLMConfig,
)

__all__ = [
    "ANTHROPIC_AVAILABLE",
    "DEFAULT_LLM_PROMPT",
    "DEFAULT_LLM_SCHEMA",
    "EvaluationResult",
    "evaluate",
    "evaluate_convergence",
    "evaluate_exit_code",
    "evaluate_llm_structured",
    "evaluate_output_contains",
    "evaluate_output_json",
    "evaluate_output_numeric",
    "evaluate_return_metadata",
]


def _import_sdk() -> Any:
    try:
        return importlib.import_module("anthropic")
    except ImportError:
        return None


def __getattr__(name: str) -> Any:
    # PEP 562: `anthropic` is imported on first use, not at import time, because the SDK
    # takes over a second to import and most loops never ask a model.
    if name == "anthropic":
        sdk = _import_sdk()
        globals()["anthropic"] = sdk
        return sdk
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _current_sdk() -> Any:
    """The SDK as the `anthropic` attribute holds it now (tests may have replaced it)."""
    return sys.modules[__name__].anthropic


ANTHROPIC_AVAILABLE: bool = importlib.util.find_spec("anthropic") is not None

LLM_DISABLED_MESSAGE = "LLM evaluation disabled (llm.enabled: false or --no-llm)"

OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _op.eq,
    "ne": _op.ne,
    "lt": _op.lt,
    "le": _op.le,
    "gt": _op.gt,
    "ge": _op.ge,
}
_EQUALITY_OPERATORS = ("eq", "ne")
# What converting a setting to a number can raise (unresolvable, not numeric, wrong type).
_NUMBER_ERRORS = (InterpolationError, ValueError, TypeError)

SEARCH_OVERLAP_CHARS = 64 * 1024
"""Overlap of the windows `output_contains` searches a log in: longer matches may be missed."""

JSON_LOG_LIMIT_BYTES = 16 * 1024 * 1024
"""Largest log `output_json` parses (a parsed document takes several times its size)."""


@dataclass
class EvaluationResult:
    """A verdict (`success`, `failure`, `error`, `target`, ...) and what led to it.

    Addition: `spending`, what an LLM evaluation cost (`{"cost_usd", "tokens"}`); not
    compared, so results compare as they did in the reference.
    """

    verdict: str
    details: dict[str, Any]
    spending: dict[str, Any] | None = field(default=None, compare=False, repr=False)


def _error(message: str) -> EvaluationResult:
    return EvaluationResult("error", {"error": message})


def _passed(condition: bool) -> str:
    return "success" if condition else "failure"


# --- Tier 1 -------------------------------------------------------------------------


def evaluate_exit_code(exit_code: int) -> EvaluationResult:
    """0 is success, 1 is failure, anything else (timeouts, signals) is error."""
    verdicts = {0: "success", 1: "failure"}
    return EvaluationResult(verdicts.get(exit_code, "error"), {"exit_code": exit_code})


def evaluate_output_numeric(output: str, operator: str, target: float) -> EvaluationResult:
    """Compare the output, read as one number, with `target`."""
    try:
        value = float(output.strip())
    except ValueError:
        return _error(f"Cannot parse as number: {output[:100]}")
    compare = OPERATORS.get(operator)
    if compare is None:
        return _error(f"Unknown operator: {operator}")
    details = {"value": value, "target": target, "operator": operator}
    return EvaluationResult(_passed(compare(value, target)), details)


def evaluate_output_json(
    output: str, path: str, operator: str, target: Any, *, log_path: str | None = None
) -> EvaluationResult:
    """Compare the value at a dotted `path` of the JSON output with `target`.

    `log_path` (addition): the output is only the tail of this file; parse the file.
    """
    if log_path is not None:
        try:
            output = read_log_text(log_path, JSON_LOG_LIMIT_BYTES)
        except LogTooLargeError as exc:
            return _error(f"Output too large for output_json: {exc}")
        except OSError as exc:
            return _error(f"Cannot read the full output in {log_path}: {exc.strerror}")
    try:
        document = json.loads(output)
    except json.JSONDecodeError as exc:
        return _error(f"Invalid JSON: {exc}")
    found, value = _json_path_value(document, path)
    if not found:
        return _error(f"Path not found: {path}")
    return _compare_values(value, operator, target, path)


def _compare_values(value: Any, operator: str, target: Any, path: str) -> EvaluationResult:
    """Compare a value found at `path` with `target` (the reference's helper of that name):
    every operator for two numbers, only `eq`/`ne` otherwise."""
    if _is_number(value) and _is_number(target):
        compare = OPERATORS.get(operator)
        if compare is None:
            return _error(f"Unknown operator: {operator}")
    elif operator in _EQUALITY_OPERATORS:
        compare = OPERATORS[operator]
    else:
        return _error(f"Operator {operator} not supported for non-numeric values")
    details = {"value": value, "path": path, "target": target, "operator": operator}
    return EvaluationResult(_passed(compare(value, target)), details)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)  # booleans count, as in the reference


def _json_path_value(document: Any, path: str) -> tuple[bool, Any]:
    """(found, value) for `.a.b.0`: dict keys, and digit segments as list indexes."""
    current = document
    for segment in path.removeprefix(".").split("."):
        if isinstance(current, dict) and segment in current:
            current = current[segment]
        elif isinstance(current, list) and _is_index(segment, current):
            current = current[int(segment)]
        else:
            return False, None
    return True, current


def _extract_json_path(data: Any, path: str) -> Any:
    """The value at jq-style `path` (`.a.b.0`); KeyError when it is not there (the
    reference's helper of that name)."""
    found, value = _json_path_value(data, path)
    if not found:
        raise KeyError(path)
    return value


def _is_index(segment: str, items: list[Any]) -> bool:
    return segment.isascii() and segment.isdigit() and int(segment) < len(items)


def evaluate_output_contains(
    output: str, pattern: str, negate: bool = False, *, log_path: str | None = None
) -> EvaluationResult:
    """Search the output for a regex (or, if it is not a valid regex, a plain substring).

    `log_path` (addition): the output is only the tail of this file; search the file.
    """
    try:
        regex = re.compile(pattern)
    except re.error:
        regex = re.compile(re.escape(pattern))
    if log_path is None:
        matched = regex.search(output) is not None
    else:
        try:
            matched = search_log(log_path, regex, SEARCH_OVERLAP_CHARS)
        except OSError as exc:
            return _error(f"Cannot read the full output in {log_path}: {exc.strerror}")
    details = {"matched": matched, "pattern": pattern, "negate": negate}
    return EvaluationResult(_passed(matched != negate), details)


def evaluate_convergence(
    current: float,
    previous: float | None,
    target: float,
    tolerance: float = 0,
    direction: str = "minimize",
) -> EvaluationResult:
    """`target` within tolerance; else `progress` or `stall` judged against `previous`."""
    if abs(current - target) <= tolerance:
        return EvaluationResult("target", {"current": current, "target": target, "delta": 0})
    details: dict[str, Any] = {"current": current, "previous": previous, "target": target}
    if previous is None:
        return EvaluationResult("progress", {**details, "delta": None})
    delta = current - previous
    improved = delta < 0 if direction == "minimize" else delta > 0
    details.update(delta=delta, direction=direction)
    return EvaluationResult("progress" if improved else "stall", details)


# --- Tier 2 -------------------------------------------------------------------------


def evaluate_llm_structured(
    output: str,
    prompt: str | None = None,
    schema: dict[str, Any] | None = None,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    uncertain_suffix: bool = False,
    model: str = DEFAULT_LLM_MODEL,
    max_tokens: int = DEFAULT_LLM_MAX_TOKENS,
    timeout: int = DEFAULT_LLM_TIMEOUT,
) -> EvaluationResult:
    """Ask a Claude model for a verdict through a forced `evaluate` tool call."""
    sdk = _current_sdk() if ANTHROPIC_AVAILABLE else None
    spent: list[dict[str, Any]] = []
    verdict, details = ask_model(
        sdk,
        output,
        prompt=prompt,
        schema=schema,
        min_confidence=min_confidence,
        uncertain_suffix=uncertain_suffix,
        model=model,
        max_tokens=max_tokens,
        timeout=timeout,
        spent=spent,
    )
    return EvaluationResult(verdict, details, spent[0] if spent else None)


# --- Agent reports ------------------------------------------------------------------


def evaluate_return_metadata(output: str, path: str | None = None) -> EvaluationResult:
    """Judge an agent's return metadata, read from the file `path` or from the output."""
    # Imported here: only loops with this evaluator load it (and its JSON scanner).
    from little_loops.fsm.judging.return_metadata import judge_return_metadata

    verdict, details = judge_return_metadata(output, path)
    return EvaluationResult(verdict, details)


# --- Dispatcher ---------------------------------------------------------------------


def evaluate(
    config: EvaluateConfig,
    output: str,
    exit_code: int,
    context: InterpolationContext,
    llm: LLMConfig | None = None,
    *,
    log_path: str | None = None,
) -> EvaluationResult:
    """Run the evaluator `config` describes; `llm` carries the loop's LLM settings.

    `log_path` (addition): `output` is only the tail of the action's stdout, which this
    file holds whole; `output_contains` and `output_json` read it. A HEAD file's
    `evaluate:` (`HeadEvaluateConfig`) is judged as HEAD judges it (`_evaluate_head`).
    Raises `ValueError("Unknown evaluator type: <type>")` for a type it does not know.
    """
    if isinstance(config, HeadEvaluateConfig):
        return _evaluate_head(config, output, exit_code, context, llm, log_path)
    if config.source is not None:
        # Decision states judge an interpolated value (often a capture) instead of stdout.
        try:
            output = interpolate(config.source, context)
        except InterpolationError as exc:
            return _error(f"Cannot resolve source: {exc}")
        log_path = None
    kind = config.type
    if kind == "exit_code":
        return evaluate_exit_code(exit_code)
    if kind == "output_numeric":
        return _evaluate_numeric(config, output, context)
    if kind == "output_json":
        return _evaluate_json(config, output, context, log_path)
    if kind == "output_contains":
        return _evaluate_contains(config, output, context, log_path)
    if kind == "convergence":
        return _evaluate_convergence(config, output, context)
    if kind == "llm_structured":
        return _evaluate_llm(config, output, llm)
    if kind == "return_metadata":
        return _evaluate_return_metadata(config, output, context)
    # The reference raises here (a programming mistake, not a verdict); validation keeps
    # unknown types out of loop files, so only code that builds configs reaches this.
    raise ValueError(f"Unknown evaluator type: {kind}")


def _evaluate_head(
    config: HeadEvaluateConfig,
    output: str,
    exit_code: int,
    context: InterpolationContext,
    llm: LLMConfig | None,
    log_path: str | None,
) -> EvaluationResult:
    """HEAD's verdict names, short-circuits and evaluators (`judging.head_evaluate`), with
    the evaluators both dialects share judged here."""
    settings = llm if llm is not None else LLMConfig()

    def legacy(shared: EvaluateConfig, text: str, full_log: str | None) -> Judged:
        result = evaluate(shared, text, exit_code, context, settings, log_path=full_log)
        return Judged(result.verdict, result.details, result.spending)

    judged = evaluate_head(
        config, output, exit_code, context, settings, legacy=legacy, sdk=_sdk, log_path=log_path
    )
    return EvaluationResult(judged.verdict, judged.details, judged.spending)


def _sdk() -> Any:
    """The SDK for an LLM evaluation now (None when it is not installed)."""
    return _current_sdk() if ANTHROPIC_AVAILABLE else None


def _evaluate_return_metadata(
    config: EvaluateConfig, output: str, context: InterpolationContext
) -> EvaluationResult:
    # The report is at the end of the output, which stays in memory (the tail): the log of
    # a long output is not needed.
    try:
        path = _expand(config.path, context) if config.path else None
    except InterpolationError as exc:
        return _error(f"Cannot resolve path: {exc}")
    return evaluate_return_metadata(output, path)


def _expand(template: str, context: InterpolationContext) -> str:
    """Interpolate settings that use `${...}`; leave plain ones (and their `$`) alone."""
    return interpolate(template, context) if "${" in template else template


def _to_number(value: Any, context: InterpolationContext) -> float:
    """A numeric setting: None is 0.0; a string is interpolated first."""
    if value is None:
        return 0.0
    if isinstance(value, str):
        value = interpolate(value, context)
    return float(value)


def _evaluate_numeric(
    config: EvaluateConfig, output: str, context: InterpolationContext
) -> EvaluationResult:
    try:
        target = _to_number(config.target, context)
    except _NUMBER_ERRORS as exc:
        return _error(f"Cannot resolve target: {exc}")
    return evaluate_output_numeric(output, config.operator or "eq", target)


def _evaluate_json(
    config: EvaluateConfig, output: str, context: InterpolationContext, log_path: str | None
) -> EvaluationResult:
    try:
        path = _expand(config.path or "", context)
    except InterpolationError as exc:
        return _error(f"Cannot resolve path: {exc}")
    target = config.target
    if isinstance(target, str) and "${" in target:
        try:
            # Keeps the type of a whole-variable target, so a context number stays a number.
            target = resolve_template(target, context)
        except InterpolationError as exc:
            return _error(f"Cannot resolve target: {exc}")
    return evaluate_output_json(output, path, config.operator or "eq", target, log_path=log_path)


def _evaluate_contains(
    config: EvaluateConfig, output: str, context: InterpolationContext, log_path: str | None
) -> EvaluationResult:
    try:
        pattern = _expand(config.pattern or "", context)
    except InterpolationError as exc:
        return _error(f"Cannot resolve pattern: {exc}")
    return evaluate_output_contains(output, pattern, config.negate, log_path=log_path)


def _evaluate_convergence(
    config: EvaluateConfig, output: str, context: InterpolationContext
) -> EvaluationResult:
    # Order and silent fallbacks follow the reference: previous, current, target, tolerance.
    previous = _optional_number(config.previous, context) if config.previous else None
    try:
        current = float(output.strip())
    except ValueError:
        return _error(f"Cannot parse output as number: {output[:100]}")
    try:
        target = _to_number(config.target, context)
    except _NUMBER_ERRORS as exc:
        return _error(f"Cannot resolve target: {exc}")
    tolerance = _optional_number(config.tolerance, context) or 0.0
    return evaluate_convergence(current, previous, target, tolerance, config.direction)


def _optional_number(value: Any, context: InterpolationContext) -> float | None:
    """A number, or None when it cannot be resolved (no previous value yet, empty output)."""
    try:
        return _to_number(value, context)
    except _NUMBER_ERRORS:
        return None


def _evaluate_llm(config: EvaluateConfig, output: str, llm: LLMConfig | None) -> EvaluationResult:
    settings = llm if llm is not None else LLMConfig()
    if not settings.enabled:
        return EvaluationResult("error", {"error": LLM_DISABLED_MESSAGE, "llm_disabled": True})
    return evaluate_llm_structured(
        output,
        config.prompt,
        config.schema,
        config.min_confidence,
        config.uncertain_suffix,
        model=settings.model,
        max_tokens=settings.max_tokens,
        timeout=settings.timeout,
    )
