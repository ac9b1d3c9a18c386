"""Validation of the loop-guard keys: stall_threshold, checkpoint, max_visits, on_max_visits,
`on_handoff: continue` and the `return_metadata` evaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.validation import check_loop_mapping, load_loop, validate_fsm


def loop(states: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    states = states or {"a": {"action": "x", "next": "done"}, "done": {"terminal": True}}
    return {"name": "g", "initial": "a", "states": states, **top}


def shape(data: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(error.path, error.message) for error in check_loop_mapping(data)]


def test_the_new_keys_are_accepted() -> None:
    states = {
        "a": {
            "action": "x",
            "evaluate": {"type": "return_metadata", "path": ".return-meta.json"},
            "max_visits": 3,
            "on_max_visits": "done",
            "route": {"success": "done", "partial": "a"},
        },
        "done": {"terminal": True},
    }
    data = loop(states, on_handoff="continue", stall_threshold=0, checkpoint="git")
    assert shape(data) == []
    assert validate_fsm(FSMLoop.from_dict(data)) == []
    assert shape(loop(stall_threshold=5, checkpoint=None)) == []


@pytest.mark.parametrize(
    ("top", "problem"),
    [
        ({"stall_threshold": -1}, ("stall_threshold", "must be an integer >= 0, got -1")),
        ({"stall_threshold": 1.5}, ("stall_threshold", "must be an integer >= 0, got 1.5")),
        ({"stall_threshold": True}, ("stall_threshold", "must be an integer >= 0, got true")),
        ({"stall_threshold": None}, ("stall_threshold", "must be an integer >= 0, got null")),
        ({"checkpoint": "svn"}, ("checkpoint", "unknown checkpoint kind 'svn' (allowed: git)")),
        ({"checkpoint": True}, ("checkpoint", "must be a string (allowed: git), got true")),
    ],
)
def test_bad_loop_level_values(top: dict[str, Any], problem: tuple[str, str]) -> None:
    assert shape(loop(**top)) == [problem]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_visits", 0, "must be an integer >= 1, got 0"),
        ("max_visits", "3", "must be an integer >= 1, got '3'"),
        ("on_max_visits", 3, "must be a string, got 3"),
    ],
)
def test_bad_state_values(key: str, value: Any, message: str) -> None:
    states = {"a": {"action": "x", "next": "done", key: value}, "done": {"terminal": True}}
    assert shape(loop(states)) == [(f"states.a.{key}", message)]


def test_on_max_visits_needs_max_visits_and_a_real_state(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "name: g\ninitial: a\nstates:\n"
        "  a:\n    action: x\n    on_max_visits: nowhere\n    next: done\n"
        "  done:\n    terminal: true\n"
    )
    with pytest.raises(LoopValidationError) as caught:
        load_loop(path)
    assert caught.value.user_lines() == [
        f"{path}: states.a: References unknown state 'nowhere' (states are: a, done)",
        f"{path}: states.a.on_max_visits: on_max_visits has no effect without max_visits",
    ]


def test_on_max_visits_makes_its_target_reachable() -> None:
    states = {
        "a": {"action": "x", "max_visits": 2, "on_max_visits": "give_up", "next": "a"},
        "give_up": {"action": "y", "next": "done"},
        "done": {"terminal": True},
    }
    assert validate_fsm(FSMLoop.from_dict(loop(states))) == []
