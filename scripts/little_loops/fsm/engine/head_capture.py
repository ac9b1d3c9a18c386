"""What `capture:` and `${prev.*}` hold in a HEAD-dialect run (spec/ll-head-dialect.md §2.5).

A HEAD capture holds the output without its trailing newlines, `stderr`, `exit_code`,
`duration_ms`, `failure_type` (`""` on exit 0), `timeout_kind` (`idle`/`wall`/null) and,
once the state is evaluated, its `verdict` (`""` until then; never on a `next:` state).
`prev` also has `timeout_kind`. A legacy run keeps its own capture (`action_step`).
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.engine.step_result import Step, log_key
from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.schema import StateConfig

__all__ = ["failure_type", "head_capture", "note_head_evaluation", "timeout_kind"]


def timeout_kind(result: ActionResult | None) -> str | None:
    """`idle` (killed after silence), `wall` (its timeout ran out) or None."""
    if result is None:
        return None
    # A runner that kills silent actions says so in `timeout_kind`; a plain timeout is wall.
    kind = getattr(result, "timeout_kind", None)
    if isinstance(kind, str):
        return kind
    return "wall" if result.timed_out else None


def failure_type(result: ActionResult) -> str:
    """Why the action failed: `""` on exit 0, else `timeout`, `error` (it could not run or
    finish) or `exit_code` (it ran and exited non-zero)."""
    if result.timed_out:
        return "timeout"
    if result.error is not None:
        return "error"
    return "" if result.exit_code == 0 else "exit_code"


def head_capture(state: StateConfig, result: ActionResult) -> dict[str, Any]:
    """What `capture:` stores under `${captured.<name>.*}` for a HEAD state."""
    captured: dict[str, Any] = {
        "output": result.output.rstrip("\n"),
        "stderr": result.stderr,
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        "failure_type": failure_type(result),
        "timeout_kind": timeout_kind(result),
        **log_key(result),
    }
    if not state.next:
        captured["verdict"] = ""  # filled in when the state is evaluated
    return captured


def note_head_evaluation(
    captured: dict[str, dict[str, Any]],
    prev: dict[str, Any] | None,
    state: StateConfig,
    step: Step,
) -> None:
    """After evaluation: the capture's `verdict` and `prev.timeout_kind`."""
    if prev is not None:
        prev["timeout_kind"] = timeout_kind(step.action)
    if state.capture and not state.next and state.capture in captured:
        captured[state.capture]["verdict"] = step.verdict or ""
