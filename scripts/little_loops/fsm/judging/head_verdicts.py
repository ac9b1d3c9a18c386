"""Verdict names of the HEAD dialect and the exits judged before any evaluator (§3.1, §3.2).

A HEAD file's evaluators say `yes`/`no` where a legacy file's say `success`/`failure`
(routing treats each pair as one verdict). HEAD also decides some exits before the
evaluator sees the output: a timeout (exit 124) is `error` for every evaluator but
`mcp_result`, and any other non-zero exit is `error` for the evaluators that read the
output as data (a failed command's output is not the answer it was asked for).
"""

from __future__ import annotations

from typing import Any

__all__ = ["head_name", "short_circuit"]

TIMEOUT_EXIT_CODE = 124

_HEAD_NAMES = {"success": "yes", "failure": "no"}

# Evaluators that read the output as data: any non-zero exit is `error` before them.
_OUTPUT_READERS = frozenset(
    {
        "output_numeric",
        "output_json",
        "output_contains",
        "convergence",
        "classify",
        "comparator",
    }
)


def head_name(verdict: str) -> str:
    """`verdict` as a HEAD file names it (`success` -> `yes`, `failure` -> `no`)."""
    return _HEAD_NAMES.get(verdict, verdict)


def short_circuit(kind: str, exit_code: int) -> tuple[str, dict[str, Any]] | None:
    """The `error` verdict HEAD gives `exit_code` before evaluator `kind` runs, or None."""
    if kind == "mcp_result" or exit_code == 0:
        return None
    if exit_code == TIMEOUT_EXIT_CODE:
        return "error", {"error": "action timed out", "exit_code": exit_code}
    if kind in _OUTPUT_READERS:
        return "error", {"error": f"action exited with code {exit_code}", "exit_code": exit_code}
    return None
