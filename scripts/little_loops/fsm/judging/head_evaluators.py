"""The evaluators only a HEAD file has (§3.2), as pure functions of the action's result.

Each returns `(verdict, details)`; an expected failure is the `error` verdict with
`details["error"]`, never an exception. The stall evaluators, which remember earlier
rounds or read files, are in `stall_evaluators`.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "MISSING_PROGRAM_EXIT_CODE",
    "classify",
    "error_pattern_found",
    "harbor_scorer",
    "keyed_number",
    "mcp_result",
    "unsupported",
]

Verdict = tuple[str, dict[str, Any]]

MISSING_PROGRAM_EXIT_CODE = 127
TIMEOUT_EXIT_CODE = 124

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"


def classify(output: str, line: str | int | None) -> Verdict:
    """The trimmed text of the chosen non-empty line is the verdict (`""`: none there)."""
    lines = [text.strip() for text in output.splitlines() if text.strip()]
    chosen = "last" if line is None else line
    index = {"last": -1, "first": 0}.get(chosen) if isinstance(chosen, str) else chosen
    if index is None:
        index = int(chosen)  # a number written as text
    in_range = -len(lines) <= index < len(lines)
    token = lines[index] if lines and in_range else ""
    return token, {"line": chosen, "token": token}


def harbor_scorer(output: str, exit_code: int) -> Verdict:
    """A scorer's exit and printed score: non-zero exit is `no`, a number is `yes`."""
    if exit_code != 0:
        return "no", {"exit_code": exit_code}
    try:
        score = float(output.strip())
    except ValueError:
        return "error", {"error": f"Cannot parse score as number: {output.strip()[:100]}"}
    return "yes", {"score": score}


def mcp_result(output: str, exit_code: int) -> Verdict:
    """What `mcp-call` said: `success`, `tool_error`, `not_found` or `timeout`."""
    if exit_code == MISSING_PROGRAM_EXIT_CODE:
        return "not_found", {"exit_code": exit_code}
    if exit_code == TIMEOUT_EXIT_CODE:
        return "timeout", {"exit_code": exit_code}
    if exit_code != 0:
        return "tool_error", {"exit_code": exit_code}
    try:
        answer = json.loads(output)
    except json.JSONDecodeError as exc:
        return "tool_error", {"error": f"Invalid JSON from mcp-call: {exc}"}
    if isinstance(answer, dict) and answer.get("isError") is True:
        return "tool_error", {"is_error": True}
    return "success", {"exit_code": exit_code}


def keyed_number(output: str, key: str) -> float | None:
    """The number of the last `<key> = <number>` in `output` (None: there is none)."""
    found = re.findall(rf"(?<![\w.]){re.escape(key)}\s*=\s*({_NUMBER})", output)
    return float(found[-1]) if found else None


def error_pattern_found(output: str, patterns: list[str]) -> str | None:
    """The first of `patterns` (plain substrings) found in `output`, or None."""
    return next((pattern for pattern in patterns if pattern in output), None)


def unsupported(kind: str) -> Verdict:
    """little-loops' own judges (`comparator`, `contract`): not available here."""
    return "error", {"error": f"{kind} evaluator not supported"}
