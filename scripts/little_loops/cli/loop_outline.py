"""`ll-loop show`'s view of a loop: one JSON-ready mapping, and the lines it prints.

Pure (no I/O). The mapping is what `show --json` prints; the text lines are made from
it, so both always say the same.
"""

from __future__ import annotations

import json
from typing import Any

from little_loops.cli.diagram import RunMarks
from little_loops.cli.display import shorten
from little_loops.cli.head_outline import (
    head_lines,
    head_outline,
    head_state_lines,
    head_state_outline,
)
from little_loops.cli.loop_graph import state_routes
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.parallel_config import DEFAULT_MAX_WORKERS, parallel_of
from little_loops.fsm.persistence import LoopState
from little_loops.fsm.schema import DEFAULT_LOGS_KEEP, FSMLoop, StateConfig

ACTION_WIDTH = 70


def first_line(action: str | None) -> str | None:
    """The first non-blank line of an action, cut to `ACTION_WIDTH` characters."""
    if action is None:
        return None
    lines = [line.strip() for line in action.splitlines() if line.strip()]
    text = lines[0] if lines else ""
    more = len(lines) > 1 or len(text) > ACTION_WIDTH
    return text[:ACTION_WIDTH] + ("..." if more else "")


def outline(
    fsm: FSMLoop, run: LoopState | None = None, marks: RunMarks | None = None
) -> dict[str, Any]:
    """Name, paradigm, limits, guards, handoff, states and (when there is one) the run;
    a HEAD loop's also has `head` (`head_outline`)."""
    view = {
        "name": fsm.name,
        "paradigm": fsm.paradigm,
        "initial": fsm.initial,
        "limits": {
            "max_iterations": fsm.max_iterations,
            "timeout": fsm.timeout,
            "backoff": fsm.backoff,
            "logs_keep": DEFAULT_LOGS_KEEP if fsm.logs_keep is None else fsm.logs_keep,
        },
        "guards": {
            "stall_threshold": fsm.effective_stall_threshold(),
            "stall_threshold_set": fsm.stall_threshold is not None,
            "on_stall": fsm.on_stall,
            "max_visits": {
                name: state.max_visits for name, state in fsm.states.items() if state.max_visits
            },
        },
        "handoff": {"on_handoff": fsm.on_handoff, "max_continuations": fsm.max_continuations},
        "context": fsm.context,
        "states": [_state_outline(name, state) for name, state in fsm.states.items()],
        "run": _run_outline(run, marks) if run is not None else None,
    }
    if isinstance(fsm, HeadLoop):
        view["head"] = head_outline(fsm)
    return view


def _state_outline(name: str, state: StateConfig) -> dict[str, Any]:
    return {
        "name": name,
        "terminal": state.terminal,
        "action": first_line(state.action),
        "evaluator": state.evaluate.type if state.evaluate is not None else None,
        "routes": [{"on": label, "to": target} for label, target in state_routes(name, state)],
        "max_visits": state.max_visits,
        **head_state_outline(state),
        **_fanout_outline(state),
    }


def _fanout_outline(state: StateConfig) -> dict[str, Any]:
    """A `parallel:` state's block (issue 25); nothing for any other state."""
    block = parallel_of(state)
    return {"parallel": block.to_dict()} if block is not None else {}


def _run_outline(run: LoopState, marks: RunMarks | None) -> dict[str, Any]:
    return {
        "status": run.status,
        "current_state": run.current_state,
        "iteration": run.current_iteration(),
        "started_at": run.started_at,
        "visits": dict(marks.visits) if marks is not None else {},
    }


# --- text ---------------------------------------------------------------------------------


def outline_lines(view: dict[str, Any]) -> list[str]:
    """The text `ll-loop show` prints for an `outline` mapping."""
    limits, guards, handoff = view["limits"], view["guards"], view["handoff"]
    lines = [f"Loop: {view['name']}"]
    if "head" in view:
        lines += head_lines(view["head"])
    if view["paradigm"]:
        lines.append(f"Paradigm: {view['paradigm']}")
    lines.append(f"Initial state: {view['initial']}")
    lines.append("Limits: " + _limits_text(limits, head="head" in view))
    lines.append("Guards: " + _guards_text(guards))
    lines.append(
        f"Handoff: {handoff['on_handoff']} (at most {handoff['max_continuations']} continuations)"
    )
    if view["run"] is not None:
        run = view["run"]
        lines.append(
            f"Run: {run['status']} at state '{run['current_state']}' "
            f"(iteration {run['iteration']}, started {run['started_at']})"
        )
    lines += ["", "States:"]
    run = view["run"] or {"visits": {}, "current_state": None}
    for state in view["states"]:
        lines += _state_lines(state, run["visits"], current=state["name"] == run["current_state"])
    return lines


def _limits_text(limits: dict[str, Any], *, head: bool) -> str:
    # A HEAD loop keeps its step cap in `max_iterations` and reports it as max_steps
    # (spec/ll-head-dialect.md §7.4); its pass cap, if any, is on the Caps line.
    cap = "max_steps" if head else "max_iterations"
    parts = [f"{cap} {limits['max_iterations']}"]
    parts.append(f"timeout {limits['timeout']}s" if limits["timeout"] else "no timeout")
    if limits["backoff"]:
        parts.append(f"backoff {limits['backoff']}s")
    parts.append(f"logs_keep {limits['logs_keep']}")
    return ", ".join(parts)


def _guards_text(guards: dict[str, Any]) -> str:
    threshold = guards["stall_threshold"]
    if threshold:
        how = "" if guards["stall_threshold_set"] else " (default for on_handoff: continue)"
        stall = f"stall_threshold {threshold}{how}"
        stall += (
            f", on_stall -> {guards['on_stall']}" if guards["on_stall"] else ", stall ends the run"
        )
    else:
        stall = "stall guard off"
    visits = guards["max_visits"]
    if visits:
        stall += ", max_visits " + ", ".join(f"{name}={count}" for name, count in visits.items())
    return stall


ITEMS_WIDTH = 60


def _state_lines(state: dict[str, Any], visits: dict[str, int], *, current: bool) -> list[str]:
    head = f"  {state['name']}"
    if state["terminal"]:
        head += " [terminal]"
    if state["name"] in visits:
        head += f" (entered {visits[state['name']]}x)"
    if current:
        head += "  <- current"
    lines = [head, *head_state_lines(state)]
    if state["action"] is not None:
        lines.append(f"    action:   {state['action']}")
    fanout = state.get("parallel")
    if fanout is not None:
        items = shorten(json.dumps(fanout["items"]), ITEMS_WIDTH)
        lines.append(f"    parallel: {fanout['loop']} per item of {items}")
        isolation = fanout.get("isolation", "none")
        workers = fanout.get("max_workers", DEFAULT_MAX_WORKERS)
        lines.append(f"      max_workers {workers}, isolation {isolation}")
    if state["evaluator"] is not None:
        lines.append(f"    evaluate: {state['evaluator']}")
    if state["max_visits"]:
        lines.append(f"    max_visits: {state['max_visits']}")
    for route in state["routes"]:
        lines.append(f"    {route['on']} -> {route['to']}")
    return lines
