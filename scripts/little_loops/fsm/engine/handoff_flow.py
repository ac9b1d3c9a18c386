"""What a handoff signal does to the run once its state has been evaluated.

The handoff is counted and announced (`handoff_detected`). Past `max_continuations` the
run ends without continuing (`continuations_exhausted`); with `on_handoff: continue` the
same state runs again next with the continuation prompt (`handoff_continued`); otherwise
the run ends with `terminated_by="handoff"` after the `HandoffHandler` (if any) paused or
spawned. It is part of `FSMExecutor`, split out: it sets the executor's handoff attributes
and finishes the run through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.signal_detector import DetectedSignal

if TYPE_CHECKING:
    from little_loops.fsm.engine.run_loop import ExecutionResult, FSMExecutor

__all__ = ["continuations_exhausted", "handle_handoff", "handoff_behavior"]


def handle_handoff(ex: FSMExecutor, signal: DetectedSignal) -> ExecutionResult | None:
    """Act on a handoff; return the run's result unless it continues in place."""
    payload = signal.payload
    ex.handoff_count += 1
    ex._emit(
        "handoff_detected",
        state=ex.current_state,
        iteration=ex.iteration,
        continuation=payload,
    )
    handler = ex.handoff_handler
    if continuations_exhausted(handler, ex.handoff_count, ex.fsm.max_continuations):
        limit = ex.fsm.max_continuations
        reason = f"max_continuations ({limit}) reached: this handoff is not continued"
        return ex._finish("handoff", reason, continuation_prompt=payload, exhausted=True)
    if handoff_behavior(handler, ex.fsm.on_handoff) is HandoffBehavior.CONTINUE:
        _continue_after_handoff(ex, payload)
        return None
    error: str | None = None
    if handler is not None:
        ex.handoff_result = handler.handle(ex.fsm.name, payload)
        error = ex.handoff_result.error
    return ex._finish("handoff", error, continuation_prompt=payload)


def handoff_behavior(handler: HandoffHandler | None, on_handoff: str) -> HandoffBehavior:
    """The handler's behaviour when there is a handler, else the loop's `on_handoff`."""
    if handler is not None:
        return handler.behavior
    return HandoffBehavior(on_handoff)


def continuations_exhausted(handler: HandoffHandler | None, count: int, limit: int) -> bool:
    """Whether handoff number `count` goes past `max_continuations` (terminate never
    continues, so it never runs out)."""
    if handler is not None and handler.behavior is HandoffBehavior.TERMINATE:
        return False
    return count > limit


def _continue_after_handoff(ex: FSMExecutor, payload: str | None) -> None:
    """`on_handoff: continue`: the same state runs again next, in a fresh process,
    and gets the continuation prompt as a resumed handoff does."""
    ex.handoff_context = {
        "prompt": payload or "",
        "count": ex.handoff_count,
        "state": ex.current_state,
    }
    ex._handoff_delivered = False
    ex._emit(
        "handoff_continued",
        state=ex.current_state,
        iteration=ex.iteration,
        count=ex.handoff_count,
        continuation=payload,
    )
