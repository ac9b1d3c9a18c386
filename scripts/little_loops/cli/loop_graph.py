"""A loop's state graph as plain data: the edges `show` lists and the diagrams draw.

Pure (no I/O). Each edge carries the verdict or key that takes it (`success`, `failure`,
`error`, `_`, `_error`, `next`, `on_max_visits`, `on_stall`, `on_maintain`) and what it
points at: a state, or a note for a target only known at run time (`${...}`).
Routing as the executor does it (`fsm/engine/routing.py`): a state with a `route` table uses
only the table, else the shorthand `on_success`/`on_failure`/`on_error`.
"""

from __future__ import annotations

from dataclasses import dataclass

from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.schema import CURRENT_STATE_TOKEN, FSMLoop, StateConfig

STALL_SOURCE = "any state"
"""The source of the `on_stall` edge: a stall of any state routes there."""


@dataclass(frozen=True)
class Edge:
    """`source --label--> target`; `target_is_state` False for run-time templates."""

    source: str
    label: str
    target: str
    target_is_state: bool = True
    guard: bool = False  # a guard's redirect (max_visits, stall), drawn dashed


def state_routes(name: str, state: StateConfig) -> list[tuple[str, str]]:
    """(verdict or key, target) pairs of one state, in the order they are written."""
    pairs: list[tuple[str, str]] = []
    if state.route is not None:
        pairs += list(state.route.routes.items())
        if state.route.error is not None:
            pairs.append(("_error", state.route.error))
        if state.route.default is not None:
            pairs.append(("_", state.route.default))
    else:
        # A HEAD state's verdicts are yes/no (the same routes, in its own words).
        yes, no = ("yes", "no") if isinstance(state, HeadStateConfig) else ("success", "failure")
        for label, target in ((yes, state.on_success), (no, state.on_failure)):
            if target is not None:
                pairs.append((label, target))
        if isinstance(state, HeadStateConfig):
            pairs += list(state.on_verdicts.items())
        partial = getattr(state, "on_partial", None)  # a legacy `parallel:` state's
        if partial is not None and not isinstance(state, HeadStateConfig):
            pairs.append(("partial", partial))
        if state.on_error is not None:
            pairs.append(("error", state.on_error))
    for label, target in (
        ("next", state.next),
        ("on_maintain", state.on_maintain),
        ("on_max_visits", state.on_max_visits),
        *_head_redirects(state),
    ):
        if target is not None:
            pairs.append((label, target))
    return [(str(label), str(target)) for label, target in pairs]


# Where a HEAD state goes instead of its routes when a retry, throttle or rate-limit budget
# is spent: drawn dashed, like `on_max_visits`.
GUARD_LABELS = frozenset(
    {"on_max_visits", "on_retry_exhausted", "on_throttle_hard", "on_rate_limit_exhausted"}
)


def _head_redirects(state: StateConfig) -> list[tuple[str, str | None]]:
    if not isinstance(state, HeadStateConfig):
        return []
    return [
        ("on_retry_exhausted", state.on_retry_exhausted),
        ("on_throttle_hard", state.on_throttle_hard),
        ("on_rate_limit_exhausted", state.on_rate_limit_exhausted),
    ]


def loop_edges(fsm: FSMLoop) -> list[Edge]:
    """Every edge of `fsm`; `$current` points back at its own state."""
    edges: list[Edge] = []
    for name, state in fsm.states.items():
        for label, target in state_routes(name, state):
            edges.append(_edge(fsm, name, label, target, guard=label in GUARD_LABELS))
    if fsm.on_stall is not None:
        edges.append(_edge(fsm, STALL_SOURCE, "on_stall", fsm.on_stall, guard=True))
    return edges


def _edge(fsm: FSMLoop, source: str, label: str, target: str, *, guard: bool) -> Edge:
    if target == CURRENT_STATE_TOKEN and source in fsm.states:
        return Edge(source, label, source, guard=guard)
    return Edge(source, label, target, target_is_state=target in fsm.states, guard=guard)


def merged_edges(edges: list[Edge]) -> list[Edge]:
    """Edges with the same ends and kind become one, labels joined (`success, _`)."""
    merged: dict[tuple[str, str, bool, bool], list[str]] = {}
    for edge in edges:
        key = (edge.source, edge.target, edge.target_is_state, edge.guard)
        merged.setdefault(key, []).append(edge.label)
    return [
        Edge(source, ", ".join(labels), target, is_state, guard)
        for (source, target, is_state, guard), labels in merged.items()
    ]
