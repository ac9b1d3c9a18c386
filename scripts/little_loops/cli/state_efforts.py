"""Which states the live display marks with their `effort` (spec/ll-head-dialect.md §2.2:
`effort` is "shown in the state header and action_complete events only", no Claude flag)."""

from __future__ import annotations

from little_loops.fsm.engine.head_actions import is_prompt_mode
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import FSMLoop

__all__ = ["state_efforts"]


def state_efforts(fsm: FSMLoop) -> dict[str, str]:
    """`{state: effort}` for the loop's HEAD prompt states that set `effort` (a legacy
    loop has none)."""
    return {
        name: state.effort
        for name, state in fsm.states.items()
        if isinstance(state, HeadStateConfig)
        and state.effort
        and state.action is not None
        and is_prompt_mode(state, state.action)
    }
