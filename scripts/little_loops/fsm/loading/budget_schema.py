"""The budget keys (`model.budgets`, docs/budgets.md) in the shipped JSON schema, for both
dialects: added by `head_schema.generate_schema` so the schema accepts what `validate`
accepts (`budget_checks`).

The legacy records' `properties` stay exactly their fields, so the keys are exact-match
`patternProperties` (as HEAD's loop keys are): `max_tokens` and `on_budget` on the loop;
`max_cost_usd`, `max_tokens` and `on_budget` on a state of either dialect, with the rule
that a state budget needs its `on_budget`.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["with_budget_part"]

_NOT_NULL = {"not": {"type": "null"}}
_TARGET = {"$ref": "#/definitions/target"}
_STATE_TOKENS = "Input + output tokens this state may spend over its visits; reached: on_budget."
_STATE_COST = "US dollars this state may spend over all its visits; reached: on_budget."


def with_budget_part(schema: dict[str, Any]) -> None:
    """Add the budget keys to a generated `schema` (in place; idempotent)."""
    properties = schema["properties"]
    tokens = copy.deepcopy(properties["max_iterations"])
    tokens["type"] = ["integer", "null"]
    tokens["description"] = (
        "The run's budget in input + output tokens of every action and LLM evaluation; "
        "reached: the run ends budget_exhausted (exit 8), after on_budget if set."
    )
    wrap_up = {
        **_TARGET,
        "description": "A wrap-up: run this state once when a budget is reached, then end.",
    }
    schema["patternProperties"].update({"^max_tokens$": tokens, "^on_budget$": wrap_up})
    definitions = schema["definitions"]
    for name in ("state", "head_state"):
        _with_state_budget(definitions[name], properties["max_cost_usd"])


def _with_state_budget(state: dict[str, Any], cost: dict[str, Any]) -> None:
    tokens = copy.deepcopy(state["properties"]["max_visits"])
    tokens["description"] = _STATE_TOKENS
    patterns = state.setdefault("patternProperties", {})
    patterns["^max_cost_usd$"] = {**copy.deepcopy(cost), "description": _STATE_COST}
    patterns["^max_tokens$"] = tokens
    patterns["^on_budget$"] = _TARGET
    rules = [rule for rule in state.get("allOf", []) if rule != _NEEDS_ROUTE]
    state["allOf"] = [*rules, _NEEDS_ROUTE]


def _set(key: str) -> dict[str, Any]:
    return {"required": [key], "properties": {key: _NOT_NULL}}


_NEEDS_ROUTE = {
    "if": {"anyOf": [_set("max_cost_usd"), _set("max_tokens")]},
    "then": _set("on_budget"),
}
