"""What a handoff signal does to the run once its state has been evaluated.

The handoff is counted and announced (`handoff_detected`). Past `max_continuations` the
run ends without continuing (`continuations_exhausted`); with `on_handoff: continue` the
same state runs again next with the continuation prompt (`handoff_continued`); otherwise
the run ends with `terminated_by="handoff"` after the `HandoffHandler` (if any) paused or
spawned (the core's `HandOff` request). The flow moves the cursor's handoff fields and
returns the `Ending` when the run ends; the core ends it.
"""

from __future__ import annotations

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.cursor_records import HandoffContext
from little_loops.fsm.engine.events import HANDOFF_CONTINUED, HANDOFF_DETECTED
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.signal_detector import DetectedSignal

__all__ = ["continuations_exhausted", "handle_handoff", "handoff_behavior"]


def handle_handoff(sc: StepContext, signal: DetectedSignal) -> Ending | None:
    """Act on a handoff; return how the run ends unless it continues in place."""
    payload = signal.payload
    cursor = sc.cursor
    cursor.handoff_count += 1
    sc.emit(
        HANDOFF_DETECTED,
        state=cursor.current_state,
        iteration=cursor.iteration,
        continuation=payload,
    )
    handler = sc.handoff_handler
    if continuations_exhausted(handler, cursor.handoff_count, sc.fsm.max_continuations):
        limit = sc.fsm.max_continuations
        reason = f"max_continuations ({limit}) reached: this handoff is not continued"
        return Ending("handoff", reason, continuation_prompt=payload, exhausted=True)
    if handoff_behavior(handler, sc.fsm.on_handoff) is HandoffBehavior.CONTINUE:
        _continue_after_handoff(sc, payload)
        return None
    # With a handler the core asks its driver to hand the run off (`HandOff`), then ends.
    return Ending("handoff", continuation_prompt=payload)


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


def _continue_after_handoff(sc: StepContext, payload: str | None) -> None:
    """`on_handoff: continue`: the same state runs again next, in a fresh process,
    and gets the continuation prompt as a resumed handoff does."""
    cursor = sc.cursor
    handoff = HandoffContext(payload or "", cursor.handoff_count, cursor.current_state)
    cursor.handoff_context = handoff.to_dict()
    cursor.handoff_delivered = False
    sc.emit(
        HANDOFF_CONTINUED,
        state=cursor.current_state,
        iteration=cursor.iteration,
        count=cursor.handoff_count,
        continuation=payload,
    )
