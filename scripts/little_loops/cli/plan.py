"""The `--dry-run` execution plan (format of CLI contract §3.1, byte for byte)."""

from __future__ import annotations

from little_loops.cli.cap_text import cap_line
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import FSMLoop, StateConfig

PLAN_ACTION_WIDTH = 70


def plan_lines(fsm: FSMLoop) -> list[str]:
    """The plan of `fsm`: states in file order, then start, limit and timeout."""
    lines = [f"Execution plan for: {fsm.name}", "", "States:"]
    for name, state in fsm.states.items():
        lines += _state_lines(name, state)
    lines += ["", f"Initial state: {fsm.initial}", cap_line(fsm)]
    if fsm.timeout:
        lines.append(f"Timeout: {fsm.timeout}s")
    return lines


def _state_lines(name: str, state: StateConfig) -> list[str]:
    lines = [f"  [{name}] [TERMINAL]" if state.terminal else f"  [{name}]"]
    if state.action:
        action = state.action
        if len(action) > PLAN_ACTION_WIDTH:
            action = action[:PLAN_ACTION_WIDTH] + "..."
        lines.append(f"    action: {action}")
    if isinstance(state, HeadStateConfig) and state.loop:
        lines.append(f"    [sub-loop: {state.loop}]")  # never loaded here (HEAD §4.8)
    if state.evaluate is not None:
        lines.append(f"    evaluate: {state.evaluate.type}")
    for label, target in _shorthands(state):
        if target:
            lines.append(f"    {label} -> {target}")
    if state.route is not None:
        lines.append("    route:")
        lines += [f"      {verdict} -> {target}" for verdict, target in state.route.routes.items()]
        if state.route.default:
            lines.append(f"      _ -> {state.route.default}")
        if state.route.error:
            lines.append(f"      _error -> {state.route.error}")
    return lines


def _shorthands(state: StateConfig) -> list[tuple[str, str | None]]:
    """The shorthand routes in the plan's order; a HEAD state's in its own words, with its
    other `on_<verdict>` routes after `on_error`."""
    if not isinstance(state, HeadStateConfig):
        yes, no, others = "on_success", "on_failure", []
    else:
        yes, no = "on_yes", "on_no"
        others = [(f"on_{verdict}", target) for verdict, target in state.on_verdicts.items()]
    return [
        (yes, state.on_success),
        (no, state.on_failure),
        ("on_error", state.on_error),
        *others,
        ("next", state.next),
    ]
