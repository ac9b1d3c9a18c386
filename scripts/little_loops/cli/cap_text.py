"""How a run's step cap is named in what `ll-loop` prints: `Max iterations` for a legacy
loop (the reference's words), `Max steps` for a loop in little-loops' current dialect,
whose cap is `max_steps` (its `max_iterations` counts full passes, when set)."""

from __future__ import annotations

from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop


def cap_line(fsm: FSMLoop) -> str:
    """`Max iterations: 50`, or for a HEAD loop `Max steps: 50` (and its pass cap)."""
    if not isinstance(fsm, HeadLoop):
        return f"Max iterations: {fsm.max_iterations}"
    passes = f" (max passes: {fsm.max_passes})" if fsm.max_passes is not None else ""
    return f"Max steps: {fsm.max_steps}{passes}"
