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

from little_loops.fsm.engine.events import MAX_ITERATIONS_REACHED_SUMMARY, MAX_STEPS_SUMMARY
from little_loops.fsm.engine.head_endings import MAX_PASSES_REACHED, MAX_STEPS
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.model.head_loop import HeadLoop

__all__ = ["announce_summary", "cap_reached", "take_summary"]


def cap_reached(fsm: HeadLoop, steps: int, memory: HeadMemory) -> str | None:
    """`max_steps` when `steps` reached the step cap; `max_iterations_reached` when a
    maintain loop made `max_iterations` passes; else None."""
    if steps >= fsm.max_steps:
        return MAX_STEPS
    passes_cap = fsm.max_passes
    if fsm.maintain and passes_cap is not None and memory.passes >= passes_cap:
        return MAX_PASSES_REACHED
    return None


def take_summary(fsm: HeadLoop, cap: str, memory: HeadMemory) -> str | None:
    """The summary state to run once for `cap`, as written (`$current` and templates are
    resolved by the caller), marked as used; None when the loop has none or it already
    ran."""
    key = "on_max_steps" if cap == MAX_STEPS else "on_max_iterations"
    name = fsm.on_max_steps if cap == MAX_STEPS else fsm.on_max_iterations
    if name is None or key in memory.summaries_run:
        return None
    memory.summaries_run.append(key)
    return name


def announce_summary(
    cap: str, state: str, steps: int, memory: HeadMemory, emit: Callable[..., None]
) -> None:
    """`max_steps_summary` / `max_iterations_reached_summary` before `state` runs."""
    payload: dict[str, Any] = {"summary_state": state}
    if cap == MAX_STEPS:
        emit(MAX_STEPS_SUMMARY, **payload, iterations=steps)
    else:
        emit(MAX_ITERATIONS_REACHED_SUMMARY, **payload, iteration_count=memory.passes)
