"""The "accept, warn once" keys of a HEAD file (spec/ll-head-dialect.md §1.2).

Keys that little-loops' own files use for little-loops tooling we do not have: they are
type-checked by `head_shape`, change nothing at run time here (or what their row in §2
says), and give ONE warning per key name per file, at the first key path, with the
number of uses: `states.build.tamper_guard: little-loops feature not supported here,
ignored (3 uses)`. The warnings are findings (severity WARNING), reported like every
other loader warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from little_loops.fsm.loading.value_checks import join_path
from little_loops.fsm.model.findings import ValidationError, ValidationSeverity
from little_loops.fsm.model.loop_vocabulary import HEAD_LINT_SWITCHES

_UNSUPPORTED = "little-loops feature not supported here, ignored"
_LINT = "silences a little-loops lint rule we do not have, ignored"

LOOP_REASONS: dict[str, str] = {
    "artifact_versioning": "turns on a little-loops lint rule only, ignored",
    **dict.fromkeys(HEAD_LINT_SWITCHES, _LINT),
    "tamper_guard": _UNSUPPORTED,
    "prepatch_check": _UNSUPPORTED,
    "pruning_profile": "sets the environment of little-loops' own Claude hooks only, ignored",
    "host_guard": (
        "little-loops' host protection is not reproduced (our runner already bounds output "
        "and processes), ignored"
    ),
    "prompt_size_guard": (
        "little-loops' host protection is not reproduced (our runner already bounds output "
        "and processes), ignored"
    ),
    "targets": "read by little-loops tools we do not ship, ignored",
}
CONFIG_REASONS: dict[str, str] = {
    "handoff_threshold": "a little-loops hook setting, ignored",
}
STATE_REASONS: dict[str, str] = {
    "params": (
        "needs little-loops' mcp-call helper: run as `mcp-call <action> <json params>`; "
        "without it on PATH the verdict is not_found"
    ),
    "learning": (
        "little-loops' learning registry is not available: the state runs nothing and "
        "routes on_blocked, else on_no"
    ),
    "pruning_profile": "sets the environment of little-loops' own Claude hooks only, ignored",
    "tamper_guard": _UNSUPPORTED,
    "prepatch_check": _UNSUPPORTED,
    "request_path": "prompts always go through the Claude CLI here, ignored",
    "cost_ceiling": "validated only, no effect (none at little-loops either)",
    "output": (
        "ignored, as little-loops ignores it: a sub-loop's results come back through "
        "captures (${captured.<state>.<capture>.output})"
    ),
    "with_": "ignored, as little-loops ignores it: sub-loop bindings are written `with:`",
}
ACTION_TYPE_REASONS: dict[str, str] = {
    "mcp_tool": (
        "needs little-loops' mcp-call helper: run as `mcp-call <action> <json params>`; "
        "without it on PATH the verdict is not_found"
    ),
    "contract": "contract evaluator not supported here: the verdict is error",
}
EVALUATE_TYPE_REASONS: dict[str, str] = {
    "comparator": "little-loops' blind A/B judge is not supported here: the verdict is error",
    "contract": "contract evaluator not supported here: the verdict is error",
}
EVALUATE_REASONS: dict[str, str] = dict.fromkeys(
    ("baseline_path", "auto_promote", "min_pairs", "pairs"),
    "read only by little-loops' comparator and contract judges, ignored",
)

# (key name, key path, reason) of one use.
_Use = tuple[str, str, str]


def warn_once_findings(data: dict[str, Any]) -> list[ValidationError]:
    """One WARNING per "accept, warn once" key name used in the mapping, in file order."""
    first: dict[str, tuple[str, str]] = {}
    counts: dict[str, int] = {}
    for name, path, reason in _uses(data):
        first.setdefault(name, (path, reason))
        counts[name] = counts.get(name, 0) + 1
    return [
        ValidationError(f"{reason} ({_uses_text(counts[name])})", path, ValidationSeverity.WARNING)
        for name, (path, reason) in first.items()
    ]


def _uses_text(count: int) -> str:
    return "1 use" if count == 1 else f"{count} uses"


def _uses(data: dict[str, Any]) -> Iterator[_Use]:
    yield from _keys_in(data, None, LOOP_REASONS)
    config = data.get("config")
    if isinstance(config, dict):
        yield from _keys_in(config, "config", CONFIG_REASONS)
    states = data.get("states")
    for state_name, state in (states or {}).items() if isinstance(states, dict) else ():
        if isinstance(state, dict):
            yield from _state_uses(state, join_path("states", state_name))


def _keys_in(mapping: dict[str, Any], path: str | None, reasons: dict[str, str]) -> Iterator[_Use]:
    for key in mapping:
        if key in reasons:
            yield key, join_path(path, key), reasons[key]


def _state_uses(state: dict[str, Any], path: str) -> Iterator[_Use]:
    action_type = state.get("action_type")
    if not isinstance(action_type, str):
        action_type = None  # a type error, reported by the shape check
    for key in state:
        if key == "action_type" and action_type in ACTION_TYPE_REASONS:
            name = f"action_type: {action_type}"
            yield name, join_path(path, key), ACTION_TYPE_REASONS[action_type]
        elif key == "params" and action_type != "mcp_tool":
            continue  # an error already (params is only for mcp_tool)
        elif key in STATE_REASONS:
            yield key, join_path(path, key), STATE_REASONS[key]
    evaluate = state.get("evaluate")
    if isinstance(evaluate, dict):
        yield from _evaluate_uses(evaluate, join_path(path, "evaluate"))


def _evaluate_uses(evaluate: dict[str, Any], path: str) -> Iterator[_Use]:
    kind = evaluate.get("type")
    if not isinstance(kind, str):
        kind = None  # a type error, reported by the shape check
    for key in evaluate:
        if key == "type" and kind in EVALUATE_TYPE_REASONS:
            yield f"evaluate type: {kind}", join_path(path, key), EVALUATE_TYPE_REASONS[kind]
        elif key in EVALUATE_REASONS:
            yield key, join_path(path, key), EVALUATE_REASONS[key]
