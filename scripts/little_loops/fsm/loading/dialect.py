"""Which dialect a raw loop file is written in (spec/ll-head-dialect.md §1.1).

Decided once per file, on the mapping as read (before `from:`, `flow:` or fragments are
resolved): a file is HEAD when it uses anything HEAD added to the legacy key and value
sets; otherwise it is legacy ("when in doubt, legacy"). `from:` itself makes a file HEAD.

One deliberate narrowing of §1.1 ("a key not in the legacy set"): only keys and values that
HEAD defines decide the dialect, so a legacy file with a typo (`on_sucess`, `colour`,
`max_iteration`, `type: exit_cod`) stays legacy and keeps today's unknown-key message with
the legacy allowed list. The `on_<x>` keys that decide are HEAD's own and the verdicts its
evaluators produce (`HEAD_VERDICT_ROUTE_KEYS`); inside a HEAD file every `on_<x>` is a
verdict route.
"""

from __future__ import annotations

from typing import Any

from little_loops.fsm.model.approval import APPROVAL_ROUTE_KEYS, HUMAN_APPROVAL
from little_loops.fsm.model.head_parts import DIALECT_HEAD, DIALECT_LEGACY
from little_loops.fsm.model.loop_vocabulary import (
    EVALUATOR_TYPES,
    HEAD_EVALUATE_KEYS,
    HEAD_EVALUATOR_TYPES,
    HEAD_LLM_KEYS,
    HEAD_LOOP_KEYS,
    HEAD_ONLY_ACTION_TYPES,
    HEAD_ROUTE_KEYS,
    HEAD_STATE_KEYS,
    HEAD_VERDICT_ROUTE_KEYS,
)

_APPROVAL_KEYS = frozenset(APPROVAL_ROUTE_KEYS)
_STATE_MARKERS = frozenset((*HEAD_STATE_KEYS, *HEAD_VERDICT_ROUTE_KEYS))
_NEW_EVALUATOR_TYPES = frozenset(HEAD_EVALUATOR_TYPES) - frozenset(EVALUATOR_TYPES)


def loop_dialect(data: dict[Any, Any]) -> str:
    """`"head"` when the raw mapping uses anything HEAD added, else `"legacy"`."""
    return DIALECT_HEAD if uses_head_keys(data) else DIALECT_LEGACY


def uses_head_keys(data: dict[Any, Any]) -> bool:
    if any(key in HEAD_LOOP_KEYS for key in data):
        return True
    llm = data.get("llm")
    if isinstance(llm, dict) and any(key in HEAD_LLM_KEYS for key in llm):
        return True
    states = data.get("states")
    if not isinstance(states, dict):
        return False
    return any(_is_head_state(state) for state in states.values() if isinstance(state, dict))


def _is_head_state(state: dict[Any, Any]) -> bool:
    # Our additions never decide a dialect: an approval state's routes are its own, and a
    # `parallel:` state routes a mixed outcome with `on_partial` in either dialect.
    approval = state.get("action_type") == HUMAN_APPROVAL
    markers = _STATE_MARKERS - {"on_partial"} if "parallel" in state else _STATE_MARKERS
    if any(key in markers for key in state if not (approval and key in _APPROVAL_KEYS)):
        return True
    if state.get("action_type") in HEAD_ONLY_ACTION_TYPES:
        return True
    return _is_head_evaluate(state.get("evaluate")) or _is_head_route(state.get("route"))


def _is_head_evaluate(evaluate: Any) -> bool:
    if not isinstance(evaluate, dict):
        return False
    kind = evaluate.get("type")
    if isinstance(kind, str) and kind in _NEW_EVALUATOR_TYPES:
        return True
    return any(key in HEAD_EVALUATE_KEYS for key in evaluate)


def _is_head_route(route: Any) -> bool:
    # The YAML loader keeps unquoted `yes:`/`no:` as strings (§9a).
    return isinstance(route, dict) and any(key in HEAD_ROUTE_KEYS for key in route)
