"""The executor's events: stamping and delivering them, and the keys of the events that
summarise something (`loop_complete`, `checkpoint`).

A callback that raises ends the run: `deliver` wraps its exception in
`EventCallbackError`, which the executor turns into `terminated_by="error"`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from little_loops.fsm.engine.step_result import ExecutionResult

if TYPE_CHECKING:
    from little_loops.fsm.model.checkpoint_result import CheckpointResult

__all__ = [
    "EventCallbackError",
    "checkpoint_keys",
    "completion_keys",
    "deliver",
    "ignore_event",
]


class EventCallbackError(Exception):
    """An event callback raised; the run ends with `terminated_by="error"`."""


def ignore_event(event: dict[str, Any]) -> None:
    """Default callback: nobody is listening."""


def deliver(
    callback: Callable[[dict[str, Any]], None], name: str, payload: Mapping[str, object], ts: str
) -> None:
    """Stamp the event `name` with `ts` (ISO 8601, UTC) and hand it to `callback`; a
    raising callback becomes `EventCallbackError`."""
    event = {"event": name, "ts": ts, **payload}
    try:
        callback(event)
    except Exception as exc:
        message = f"Event callback failed on '{name}': {type(exc).__name__}: {exc}"
        raise EventCallbackError(message) from exc


def completion_keys(result: ExecutionResult) -> dict[str, Any]:
    """The payload of `loop_complete` for `result`."""
    keys: dict[str, Any] = {
        "final_state": result.final_state,
        "iterations": result.iterations,
        "terminated_by": result.terminated_by,
    }
    if result.error is not None:
        keys["error"] = result.error
    if result.error_detail is not None:
        keys["error_detail"] = result.error_detail  # addition: the error as people read it
    if result.stop_reason is not None:
        keys["stop_reason"] = result.stop_reason
    if result.spending is not None:
        keys["spending"] = result.spending  # addition: what the run spent
    return keys


def checkpoint_keys(result: CheckpointResult, reason: str) -> dict[str, Any] | None:
    """The payload of a `checkpoint` event, or None when the checkpoint is not worth one
    (nothing committed and nothing to warn about)."""
    if result.status != "committed" and not result.warning:
        return None
    keys: dict[str, Any] = {"status": result.status, "reason": reason}
    if result.commit:
        keys["commit"] = result.commit
    if result.warning:
        keys["warning"] = result.warning
    return keys
