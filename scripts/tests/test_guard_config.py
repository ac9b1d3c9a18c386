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


# --- stall guard: on by request, on_stall, progress_paths (issue 10) ------------------------


def test_on_stall_and_progress_paths_are_accepted() -> None:
    states = {
        "a": {"action": "x", "on_failure": "a", "on_success": "done"},
        "reset": {"action": "y", "next": "a"},
        "done": {"terminal": True},
    }
    data = loop(states, stall_threshold=2, on_stall="reset", progress_paths=["src", "*.log"])
    assert shape(data) == []
    # The recovery state is reached through on_stall only: not "unreachable".
    assert validate_fsm(FSMLoop.from_dict(data)) == []


@pytest.mark.parametrize(
    ("top", "problem"),
    [
        ({"on_stall": 3}, ("on_stall", "must be a string, got 3")),
        ({"progress_paths": "n"}, ("progress_paths", "must be a list of strings, got 'n'")),
        ({"progress_paths": ["n", 1]}, ("progress_paths.1", "must be a string, got 1")),
    ],
)
def test_bad_stall_values(top: dict[str, Any], problem: tuple[str, str]) -> None:
    assert shape(loop(**top)) == [problem]


def test_on_stall_must_name_a_state_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(
        "name: g\ninitial: a\nstall_threshold: 3\non_stall: nowhere\nstates:\n"
        "  a:\n    action: x\n    next: done\n"
        "  done:\n    terminal: true\n"
    )
    with pytest.raises(LoopValidationError) as caught:
        load_loop(path)
    assert caught.value.user_lines() == [
        f"{path}: on_stall: References unknown state 'nowhere' (states are: a, done)"
    ]


def test_on_stall_while_the_guard_is_off_is_a_warning() -> None:
    data = loop(on_stall="done")
    findings = [
        (f.path, f.message, f.severity.value) for f in validate_fsm(FSMLoop.from_dict(data))
    ]
    assert findings == [
        (
            "on_stall",
            "on_stall has no effect while the stall guard is off (set stall_threshold)",
            "warning",
        )
    ]
    assert validate_fsm(FSMLoop.from_dict(loop(on_stall="done", on_handoff="continue"))) == []


def test_a_loop_that_did_not_set_stall_threshold_does_not_gain_it() -> None:
    """`to_dict` (state snapshots, `ll-loop compile`) stays faithful to the file."""
    plain = FSMLoop.from_dict(loop())
    assert plain.stall_threshold is None
    assert "stall_threshold" not in plain.to_dict()
    assert plain.effective_stall_threshold() == 0
    guarded = FSMLoop.from_dict(loop(stall_threshold=3, on_stall="a", progress_paths=["n"]))
    assert {k: guarded.to_dict()[k] for k in ("stall_threshold", "on_stall", "progress_paths")} == {
        "stall_threshold": 3,
        "on_stall": "a",
        "progress_paths": ["n"],
    }
    assert FSMLoop.from_dict(guarded.to_dict()) == guarded


@pytest.mark.parametrize(
    ("top", "threshold"),
    [
        ({}, 0),
        ({"on_handoff": "pause"}, 0),
        ({"on_handoff": "continue"}, 3),
        ({"on_handoff": "continue", "stall_threshold": 0}, 0),
        ({"on_handoff": "continue", "stall_threshold": 7}, 7),
        ({"stall_threshold": 2}, 2),
    ],
)
def test_the_threshold_in_force(top: dict[str, Any], threshold: int) -> None:
    assert FSMLoop.from_dict(loop(**top)).effective_stall_threshold() == threshold
