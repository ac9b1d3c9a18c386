"""Where a HEAD state's verdict goes (spec/ll-head-dialect.md §3.1, §3.3, §7.2, §9h).

A legacy state keeps `routing.choose_target`. A HEAD state reads its routes the way
little-loops does today: `yes` is `success` and `no` is `failure` wherever a route is
looked up; a route table tries the exact key (either spelling), then for `error` its
`_error` (this project's rule, §9h) and `_`, for any other verdict `_` and, for `no`,
`_error`; shorthands send `no` to `on_error` when `on_no` is absent and any other verdict
to its `on_<verdict>`. An undeclared `cannot_judge` holds the state (re-enters it) up to
two times in a row, then goes to the error route, never to `_` or `on_no`.

Every function here only decides: the caller resolves the target (`$current`,
templates) and moves the cursor.
"""

from __future__ import annotations

from dataclasses import dataclass

from little_loops.fsm.model.action_result import ActionResult
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.head_parts import verdict_spellings
from little_loops.fsm.schema import CURRENT_STATE_TOKEN

__all__ = [
    "JUDGE_HOLD_LIMIT",
    "UNSURE_VERDICTS",
    "HeadRoute",
    "choose_head_target",
    "next_state_route",
    "retryable_route",
]

# `cannot_judge` verdicts re-enter their state this many times in a row before erroring.
JUDGE_HOLD_LIMIT = 2
UNSURE_VERDICTS = frozenset({"cannot_judge", "cannot_judge_uncertain"})
_NO = frozenset(verdict_spellings("no"))
_ERROR = "error"


@dataclass(frozen=True)
class HeadRoute:
    """A decided route: `target` (unresolved; None: no route) and why, when it is not the
    ordinary verdict route (`hold` for a cannot-judge re-entry, `retry_exhausted`, ...)."""

    target: str | None
    reason: str | None = None


def choose_head_target(
    state: HeadStateConfig, verdict: str, holds: dict[str, int], name: str
) -> HeadRoute:
    """The route of `verdict` out of the HEAD state `name`; `holds` (the run's consecutive
    cannot-judge re-entries per state) is updated."""
    if verdict in UNSURE_VERDICTS and not _declares(state, verdict):
        return _unsure_route(state, holds, name)
    holds.pop(name, None)
    if state.route is not None:
        return HeadRoute(_table_target(state, verdict))
    return HeadRoute(_shorthand_target(state, verdict))


def _declares(state: HeadStateConfig, verdict: str) -> bool:
    """Whether `verdict` has a route of its own (the table wins over shorthands)."""
    if state.route is not None:
        return verdict in state.route.routes
    return verdict in state.on_verdicts


def _unsure_route(state: HeadStateConfig, holds: dict[str, int], name: str) -> HeadRoute:
    """Hold the state (re-enter it) twice, then take the error route (§3.3.4)."""
    held = holds.get(name, 0)
    if held < JUDGE_HOLD_LIMIT:
        holds[name] = held + 1
        return HeadRoute(CURRENT_STATE_TOKEN, "cannot_judge_hold")
    holds.pop(name, None)
    target = state.route.error if state.route is not None else state.on_error
    return HeadRoute(target)


def _table_target(state: HeadStateConfig, verdict: str) -> str | None:
    table = state.route
    assert table is not None
    for spelling in verdict_spellings(verdict):
        if spelling in table.routes:
            return table.routes[spelling]
    if verdict == _ERROR and table.error is not None:
        return table.error  # §9h: `_error` before `_` for `error`
    if table.default is not None:
        return table.default
    return table.error if verdict in _NO else None


def _shorthand_target(state: HeadStateConfig, verdict: str) -> str | None:
    spellings = verdict_spellings(verdict)
    if "success" in spellings:
        return state.on_success
    if "failure" in spellings:
        return state.on_failure or state.on_error
    if verdict == _ERROR:
        return state.on_error
    return state.on_verdicts.get(verdict)


def retryable_route(state: HeadStateConfig, action: ActionResult | None) -> HeadRoute | None:
    """§7.2 on an evaluated state whose verdict is `error`: an exit code outside
    `retryable_exit_codes` goes to `on_retry_exhausted`, else `on_error`; None: route as
    usual (no list, a listed code, or neither target)."""
    codes = state.retryable_exit_codes
    if codes is None or action is None or action.exit_code in codes:
        return None
    if state.on_retry_exhausted is not None:
        return HeadRoute(state.on_retry_exhausted, "not_retryable")
    if state.on_error is not None:
        return HeadRoute(state.on_error, "not_retryable")
    return None


def next_state_route(state: HeadStateConfig, action: ActionResult | None) -> HeadRoute:
    """§3.3.1: where a HEAD `next:` state goes after its action. A failing action goes to
    `on_error` when there is one (an exit code outside `retryable_exit_codes` to
    `on_retry_exhausted` first); otherwise `next`, even after a non-zero exit."""
    if action is None or action.exit_code == 0 or state.on_error is None:
        return HeadRoute(state.next)
    codes = state.retryable_exit_codes
    if codes is not None and action.exit_code not in codes and state.on_retry_exhausted:
        return HeadRoute(state.on_retry_exhausted, "not_retryable")
    return HeadRoute(state.on_error, "action_failed")
