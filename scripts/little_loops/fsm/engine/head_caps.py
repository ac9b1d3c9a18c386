"""HEAD's caps (spec/ll-head-dialect.md §7.3, §7.4): steps, passes, and their summary
states.

A HEAD loop keeps its step cap in `max_iterations` (`HeadLoop.max_steps`), so the run's
iteration count is its step count. When a cap is reached the loop's summary state
(`on_max_steps`, `on_max_iterations`) runs once per run, announced by an event; the run
then ends with the cap's `terminated_by`. Which summaries ran is kept in the cursor's
`HeadMemory.summaries_run`, so a resumed run does not run one again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from little_loops.fsm.engine.head_endings import MAX_PASSES_REACHED, MAX_STEPS
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.model.head_loop import HeadLoop

__all__ = ["cap_reached", "take_summary"]


def cap_reached(fsm: HeadLoop, steps: int, memory: HeadMemory) -> str | None:
    """`max_steps` when `steps` reached the step cap; `max_iterations_reached` when a
    maintain loop made `max_iterations` passes; else None."""
    if steps >= fsm.max_steps:
        return MAX_STEPS
    passes_cap = fsm.max_passes
    if fsm.maintain and passes_cap is not None and memory.passes >= passes_cap:
        return MAX_PASSES_REACHED
    return None


def take_summary(
    fsm: HeadLoop, cap: str, steps: int, memory: HeadMemory, emit: Callable[..., None]
) -> str | None:
    """The summary state to run once for `cap` (its event emitted), or None when the loop
    has none or it already ran."""
    key = "on_max_steps" if cap == MAX_STEPS else "on_max_iterations"
    name = fsm.on_max_steps if cap == MAX_STEPS else fsm.on_max_iterations
    if name is None or key in memory.summaries_run:
        return None
    memory.summaries_run.append(key)
    payload: dict[str, Any] = {"summary_state": name}
    if cap == MAX_STEPS:
        emit("max_steps_summary", **payload, iterations=steps)
    else:
        emit("max_iterations_reached_summary", **payload, iteration_count=memory.passes)
    return name
