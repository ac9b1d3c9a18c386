"""HEAD's throttle (spec/ll-head-dialect.md §7.5): how often one visit of a state ran its
action.

Every action state of a HEAD loop counts its action runs since it was entered from
another state (the count is dropped when the run moves on). At `warn_max` an event warns;
at `hard_max` the run leaves for `on_throttle_hard`, else `on_error`, without evaluating
(with neither it goes on as usual); past `hard_max` the run ends `error`. A `type:
learning` state is never stopped. `normal_max` has no effect, as at HEAD.
"""

from __future__ import annotations

from collections.abc import Callable

from little_loops.fsm.engine.events import THROTTLE_HARD, THROTTLE_STOP, THROTTLE_WARN
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.head_routing import HeadRoute
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.head_parts import ThrottleConfig

__all__ = ["count_action_run", "keep_visit_count"]

_LEARNING = "learning"


def keep_visit_count(memory: HeadMemory, name: str) -> None:
    """At the top of a pass: only the state entered keeps its count (it is cleared when
    the run leaves a state)."""
    if memory.previous_state != name:
        memory.throttle_counts = {}
    else:
        memory.throttle_counts = {
            key: value for key, value in memory.throttle_counts.items() if key == name
        }


def count_action_run(
    memory: HeadMemory, name: str, state: HeadStateConfig, emit: Callable[..., None]
) -> Ending | HeadRoute | None:
    """Count one action run of `name`: the route to take instead of evaluating, the end of
    the run, or None to go on."""
    limits = state.throttle or ThrottleConfig()
    count = memory.throttle_counts[name] = memory.throttle_counts.get(name, 0) + 1
    if count == limits.warn_max:
        emit(
            THROTTLE_WARN,
            state=name,
            count=count,
            normal_max=limits.normal_max,
            warn_max=limits.warn_max,
            hard_max=limits.hard_max,
        )
    if state.type == _LEARNING or count < limits.hard_max:
        return None
    if count > limits.hard_max:
        emit(THROTTLE_STOP, state=name, count=count, hard_max=limits.hard_max)
        return Ending("error", _stop_message(name, count, limits.hard_max))
    target = state.on_throttle_hard or state.on_error
    emit(THROTTLE_HARD, state=name, count=count, hard_max=limits.hard_max, next=target)
    return None if target is None else HeadRoute(target, "throttle_hard")


def _stop_message(name: str, count: int, hard_max: int) -> str:
    return (
        f"Throttle stop: state '{name}' ran its action {count} times in one visit "
        f"(throttle.hard_max: {hard_max})"
    )
