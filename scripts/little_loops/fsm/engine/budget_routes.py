"""Budgets that route (issue 26; `model.budgets` has the keys): the decisions, no I/O.

- The run's budget: `max_cost_usd` / `--max-cost` in dollars, `max_tokens` /
  `--max-tokens` in input + output tokens of every action and judgement (sub-loops'
  included). When one is reached the run ends `budget_exhausted`; with the loop's
  `on_budget` it first runs that state once (a wrap-up), whatever it routes, as
  `on_max_steps` does for steps (`RunCore._end_at_budget`).
- A state's own `max_cost_usd` / `max_tokens` count its spending over all its visits
  (`RunSpending.states`); the visit that reaches one routes `on_budget` instead of its
  verdict's route, and a later visit goes there without running.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from little_loops.fsm.engine.context import StepContext
from little_loops.fsm.engine.events import BUDGET_WRAP_UP, ROUTE, STATE_BUDGET_EXHAUSTED
from little_loops.fsm.engine.routing import RoutingError, resolve_target
from little_loops.fsm.engine.spending import RunSpending, format_cost, format_tokens
from little_loops.fsm.engine.step_result import Ending
from little_loops.fsm.model.budgets import StateBudget, loop_budget
from little_loops.fsm.schema import FSMLoop

__all__ = [
    "STATE_BUDGET_REASON",
    "announce_wrap_up",
    "budget_message",
    "budget_reached",
    "budgeted_state",
    "route_over_budget",
    "spent_state_budget",
    "state_budget_keys",
    "take_wrap_up",
    "token_budget",
]

STATE_BUDGET_REASON = "state_budget"
"""The `reason` of the route a state takes when its own budget is spent."""


def token_budget(fsm: FSMLoop) -> int | None:
    budgets = loop_budget(fsm)
    return budgets.max_tokens if budgets is not None else None


def budget_reached(fsm: FSMLoop, spent: RunSpending) -> bool:
    """Whether the run's dollar or token budget is used up."""
    cost, tokens = fsm.max_cost_usd, token_budget(fsm)
    if cost is not None and spent.cost_usd >= cost:
        return True
    return tokens is not None and spent.budget_tokens >= tokens


def budget_message(fsm: FSMLoop, spent: RunSpending) -> str:
    """`budget reached: spent $1.02 of $1.00` (the dollar budget, as before), or the same
    in tokens when that is the budget reached."""
    cost = fsm.max_cost_usd
    if cost is not None and spent.cost_usd >= cost:
        return f"budget reached: spent {format_cost(spent.cost_usd)} of {format_cost(cost)}"
    tokens = token_budget(fsm) or 0
    used = format_tokens(spent.budget_tokens)
    return f"token budget reached: spent {used} of {format_tokens(tokens)}"


def take_wrap_up(fsm: FSMLoop, spent: RunSpending) -> str | None:
    """The loop's `on_budget` state to run now, as written, marked as run for the current
    budgets; None when there is none or it already ran for them."""
    budgets = loop_budget(fsm)
    if budgets is None or budgets.on_budget is None:
        return None
    limits: list[float | int | None] = [fsm.max_cost_usd, budgets.max_tokens]
    if spent.wrapped_up == limits:
        return None
    spent.wrapped_up = limits
    return budgets.on_budget


def announce_wrap_up(
    fsm: FSMLoop, state: str, spent: RunSpending, emit: Callable[..., None]
) -> None:
    """`budget_wrap_up` before the wrap-up state runs."""
    emit(BUDGET_WRAP_UP, wrap_up_state=state, **_totals(fsm, spent))


def _totals(fsm: FSMLoop, spent: RunSpending) -> dict[str, Any]:
    out: dict[str, Any] = {"cost_usd": round(spent.cost_usd, 6), "tokens": spent.budget_tokens}
    if fsm.max_cost_usd is not None:
        out["max_cost_usd"] = fsm.max_cost_usd
    if token_budget(fsm) is not None:
        out["max_tokens"] = token_budget(fsm)
    return out


def budgeted_state(fsm: FSMLoop, name: str) -> str | None:
    """`name` when that state has a budget of its own (its spending is counted apart)."""
    budgets = loop_budget(fsm)
    return name if budgets is not None and budgets.state(name) is not None else None


def spent_state_budget(fsm: FSMLoop, name: str, spent: RunSpending) -> StateBudget | None:
    """State `name`'s budget when its spending over its visits reached it, else None."""
    budgets = loop_budget(fsm)
    own = budgets.state(name) if budgets is not None else None
    if own is None or own.on_budget is None:
        return None
    cost, tokens = spent.state_spent(name)
    if own.max_cost_usd is not None and cost >= own.max_cost_usd:
        return own
    if own.max_tokens is not None and tokens >= own.max_tokens:
        return own
    return None


def state_budget_keys(name: str, own: StateBudget, spent: RunSpending) -> dict[str, Any]:
    """The payload of `state_budget_exhausted`."""
    cost, tokens = spent.state_spent(name)
    keys: dict[str, Any] = {"state": name, "cost_usd": cost, "tokens": tokens}
    if own.max_cost_usd is not None:
        keys["max_cost_usd"] = own.max_cost_usd
    if own.max_tokens is not None:
        keys["max_tokens"] = own.max_tokens
    return keys


def route_over_budget(sc: StepContext, own: StateBudget, verdict: str | None) -> Ending | None:
    """The current state's budget is spent: `state_budget_exhausted`, then the route to
    its `on_budget` (with the verdict it would have routed on, if any); a target that
    cannot be resolved ends the run."""
    cursor = sc.cursor
    name = cursor.current_state
    assert own.on_budget is not None
    try:
        resolved = resolve_target(
            own.on_budget, current_state=name, state_names=sc.fsm.states, ctx=sc.interpolation()
        )
    except RoutingError as exc:
        return Ending("error", str(exc))
    sc.emit(STATE_BUDGET_EXHAUSTED, **state_budget_keys(name, own, cursor.spending))
    route: dict[str, Any] = {"from": name, "to": resolved, "reason": STATE_BUDGET_REASON}
    if verdict is not None:
        route["verdict"] = verdict
    sc.emit(ROUTE, **route)
    cursor.current_state = resolved
    return None
