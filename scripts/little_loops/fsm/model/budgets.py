"""Budgets that route (issue 26): a loop's `max_tokens` and `on_budget`, and a state's own
`max_cost_usd` / `max_tokens` / `on_budget`.

Our addition, in both dialects, never deciding one. The legacy records keep exactly the
fields of little-loops at aada157e1 (code written for it lists them), so the budget keys
are not fields of `FSMLoop` or `StateConfig`: a loop that writes one is built as a
`BudgetedLoop` (a HEAD loop is one already), whose `budgets` holds them all, the states'
keyed by state name. `split_budgets` takes them out of a raw mapping before the dialect's
own reading; `BudgetedLoop.to_dict` writes them back where they were.

The loop's dollar budget stays `FSMLoop.max_cost_usd` (it predates this).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from little_loops.fsm.schema import FSMLoop

__all__ = [
    "LOOP_BUDGET_KEYS",
    "STATE_BUDGET_KEYS",
    "BudgetedLoop",
    "LoopBudget",
    "StateBudget",
    "legacy_loop_from_dict",
    "loop_budget",
    "split_budgets",
    "with_budgets",
]

LOOP_BUDGET_KEYS = ("max_tokens", "on_budget")
"""Loop-level budget keys taken out of the mapping (`max_cost_usd` is a legacy field)."""

STATE_BUDGET_KEYS = ("max_cost_usd", "max_tokens", "on_budget")
"""State-level budget keys."""

_Loop = TypeVar("_Loop", bound=FSMLoop)


@dataclass(frozen=True)
class StateBudget:
    """One state's budget over all its visits in a run, and where it routes when spent."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    on_budget: str | None = None

    @property
    def limited(self) -> bool:
        return self.max_cost_usd is not None or self.max_tokens is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            key: getattr(self, key) for key in STATE_BUDGET_KEYS if getattr(self, key) is not None
        }


@dataclass
class LoopBudget:
    """The loop's token budget and wrap-up state, and the states' budgets by name."""

    max_tokens: int | None = None
    on_budget: str | None = None
    states: dict[str, StateBudget] = field(default_factory=dict)

    @property
    def anything(self) -> bool:
        return self.max_tokens is not None or self.on_budget is not None or bool(self.states)

    def state(self, name: str) -> StateBudget | None:
        """State `name`'s budget when it has a limit (None: it has none)."""
        budget = self.states.get(name)
        return budget if budget is not None and budget.limited else None


def split_budgets(data: dict[str, Any]) -> tuple[dict[str, Any], LoopBudget | None]:
    """`data` without the budget keys (a copy when it had some), and the budgets it wrote
    (None when none). Values are taken as written: checking is the loader's."""
    loop_keys = {key: data[key] for key in LOOP_BUDGET_KEYS if key in data}
    states = data.get("states")
    state_keys: dict[str, dict[str, Any]] = {}
    if isinstance(states, dict):
        for name, state in states.items():
            if isinstance(state, dict) and any(key in state for key in STATE_BUDGET_KEYS):
                state_keys[name] = {k: state[k] for k in STATE_BUDGET_KEYS if k in state}
    if not loop_keys and not state_keys:
        return data, None
    rest = {key: value for key, value in data.items() if key not in LOOP_BUDGET_KEYS}
    if state_keys:
        rest["states"] = {
            name: _without(state, STATE_BUDGET_KEYS) if name in state_keys else state
            for name, state in states.items()  # type: ignore[union-attr]
        }
    budget = LoopBudget(
        max_tokens=loop_keys.get("max_tokens"),
        on_budget=loop_keys.get("on_budget"),
        states={name: StateBudget(**keys) for name, keys in state_keys.items()},
    )
    return rest, budget


def _without(mapping: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if key not in keys}


@dataclass
class BudgetedLoop(FSMLoop):
    """A loop with budget keys (see the module docstring); `budgets` None: it has none."""

    budgets: LoopBudget | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        budgets = self.budgets
        if budgets is None:
            return out
        for key in LOOP_BUDGET_KEYS:
            if getattr(budgets, key) is not None:
                out[key] = getattr(budgets, key)
        for name, state_budget in budgets.states.items():
            if name in out["states"]:
                out["states"][name] = {**out["states"][name], **state_budget.to_dict()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BudgetedLoop:
        rest, budgets = split_budgets(data)
        return cls(**vars(FSMLoop.from_dict(rest)), budgets=budgets)


def legacy_loop_from_dict(data: dict[str, Any]) -> FSMLoop:
    """A legacy mapping as a loop: a plain `FSMLoop`, or a `BudgetedLoop` when it writes a
    budget key (so a loop without them is built exactly as before)."""
    rest, budgets = split_budgets(data)
    fsm = FSMLoop.from_dict(rest)
    return fsm if budgets is None else BudgetedLoop(**vars(fsm), budgets=budgets)


def loop_budget(fsm: FSMLoop) -> LoopBudget | None:
    """`fsm`'s budget keys (None: it writes none)."""
    return fsm.budgets if isinstance(fsm, BudgetedLoop) else None


def with_budgets(fsm: _Loop, **changes: Any) -> _Loop | BudgetedLoop:
    """A copy of `fsm` whose `LoopBudget` has `changes` (a plain `FSMLoop` becomes a
    `BudgetedLoop`; `fsm` itself is left as it is)."""
    current = loop_budget(fsm) or LoopBudget()
    budgets = dataclasses.replace(current, **changes)
    if isinstance(fsm, BudgetedLoop):
        return dataclasses.replace(fsm, budgets=budgets)
    values = {item.name: getattr(fsm, item.name) for item in dataclasses.fields(fsm)}
    return BudgetedLoop(**values, budgets=budgets)
