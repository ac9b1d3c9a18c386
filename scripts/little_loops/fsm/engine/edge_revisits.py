"""HEAD's `max_edge_revisits` (spec/ll-head-dialect.md §7.5): a run that takes the same
`from->to` edge too often is going round in circles.

After each route the edge is counted (in the cursor's `HeadMemory.edge_counts`, kept on
resume); above the limit (default 100) the run ends `cycle_detected`, reported as stalled.
"""

from __future__ import annotations

from collections.abc import Callable

from little_loops.fsm.engine import events
from little_loops.fsm.engine.head_endings import CYCLE_DETECTED
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.head_parts import HEAD_DEFAULT_MAX_EDGE_REVISITS

__all__ = ["count_edge"]


def count_edge(
    fsm: HeadLoop, memory: HeadMemory, source: str, target: str, emit: Callable[..., None]
) -> Ending | None:
    """Count the edge `source->target`; the run's end when it went over the limit."""
    limit = fsm.max_edge_revisits or HEAD_DEFAULT_MAX_EDGE_REVISITS
    edge = f"{source}->{target}"
    count = memory.edge_counts[edge] = memory.edge_counts.get(edge, 0) + 1
    if count <= limit:
        return None
    keys = {"edge": edge, "from": source, "to": target, "count": count, "max": limit}
    emit(events.CYCLE_DETECTED, **keys)
    message = f"cycle detected: edge '{edge}' taken {count} times (max_edge_revisits: {limit})"
    return Ending(CYCLE_DETECTED, message)
