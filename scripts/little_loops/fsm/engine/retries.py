"""HEAD's `max_retries` / `on_retry_exhausted` (spec/ll-head-dialect.md §7.1).

At the top of each pass, before the state runs: entering the state the previous pass ran
adds one to its count (whatever the cause: `$current`, a self-target, a cannot-judge
hold); entering another state clears the previous one's count. A count above
`max_retries` sends the run to `on_retry_exhausted` instead: event `retry_exhausted`, no
step, no `route` event. The counts and the previous-state marker live in the cursor's
`HeadMemory`, so a resumed run counts on (HEAD itself forgets the marker).
"""

from __future__ import annotations

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.events import RETRY_EXHAUSTED
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.routing import RoutingError, resolve_target
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import StateConfig

__all__ = ["count_entry", "leave_exhausted"]


def count_entry(memory: HeadMemory, name: str, state: HeadStateConfig) -> bool:
    """Count this pass's entry into `name`; True when its retries are exhausted."""
    previous = memory.previous_state
    if previous == name:
        memory.retry_counts[name] = memory.retry_counts.get(name, 0) + 1
    elif previous is not None:
        memory.retry_counts.pop(previous, None)
    memory.previous_state = name
    limit = state.max_retries
    count = memory.retry_counts.get(name, 0)
    return limit is not None and state.on_retry_exhausted is not None and count > limit


def leave_exhausted(sc: StepContext, state: StateConfig) -> Ending | None:
    """Go to `on_retry_exhausted` without running the state (`retry_exhausted` event)."""
    cursor, memory = sc.cursor, sc.cursor.head
    name = cursor.current_state
    assert isinstance(state, HeadStateConfig) and state.on_retry_exhausted is not None
    try:
        target = resolve_target(
            state.on_retry_exhausted,
            current_state=name,
            state_names=sc.fsm.states,
            ctx=sc.interpolation(),
        )
    except RoutingError as exc:
        return Ending("error", str(exc))
    retries = memory.retry_counts.pop(name, 0)
    sc.emit(RETRY_EXHAUSTED, state=name, retries=retries, next=target)
    cursor.current_state = target
    return None
