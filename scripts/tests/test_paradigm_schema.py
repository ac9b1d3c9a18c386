"""Paradigm files validate against the shipped schema (issue 23, item 20).

The reference's schema required `name`, `initial` and `states` of every file, so an
editor pointed at `ll-loop schema` marked every paradigm file (`paradigm: goal` ...) as
wrong. The schema now says what the loader says: each case below is accepted by both or
refused by both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from little_loops.fsm.errors import LoopFileError
from little_loops.fsm.loading.pipeline import load_loop

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "scripts/little_loops/fsm/fsm-loop-schema.json").read_text())
VALIDATOR = Draft7Validator(SCHEMA)
EXAMPLES = sorted((REPO / ".loops").glob("*-demo.yaml"))

GOAL = {"paradigm": "goal", "goal": "green", "tools": ["make test", "make fix"]}
CONVERGENCE = {
    "paradigm": "convergence",
    "name": "c",
    "check": "echo 3",
    "toward": 0,
    "using": "echo fix",
}
INVARIANTS = {
    "paradigm": "invariants",
    "name": "i",
    "constraints": [{"name": "lint", "check": "true", "fix": "true"}],
}
IMPERATIVE = {"paradigm": "imperative", "name": "m", "steps": ["a"], "until": {"check": "true"}}
FSM = {"name": "f", "initial": "a", "states": {"a": {"terminal": True}}}


def schema_accepts(data: dict[str, Any]) -> bool:
    return not list(VALIDATOR.iter_errors(data))


def loader_accepts(tmp_path: Path, data: dict[str, Any]) -> bool:
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    try:
        load_loop(path)
    except LoopFileError:
        return False
    return True


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_every_example_loop_validates_against_the_schema(path: Path) -> None:
    assert list(VALIDATOR.iter_errors(yaml.safe_load(path.read_text()))) == []


@pytest.mark.parametrize(
    ("data", "accepted"),
    [
        (GOAL, True),
        (CONVERGENCE, True),
        ({**CONVERGENCE, "tolerance": 0.5, "direction": "maximize"}, True),
        (INVARIANTS, True),
        ({**INVARIANTS, "maintain": True, "max_iterations": 5}, True),
        (IMPERATIVE, True),
        ({**GOAL, "tools": []}, False),
        ({"paradigm": "goal", "goal": "green"}, False),
        ({**CONVERGENCE, "direction": "sideways"}, False),
        ({k: v for k, v in CONVERGENCE.items() if k != "using"}, False),
        ({**INVARIANTS, "constraints": [{"name": "lint", "check": "true"}]}, False),
        ({**IMPERATIVE, "until": {}}, False),
        ({**GOAL, "steps": ["x"]}, False),
        ({**IMPERATIVE, "goal": "green"}, False),
        (FSM, True),
        ({**FSM, "goal": "green"}, False),
        ({"name": "f", "states": FSM["states"]}, False),
    ],
)
def test_the_schema_accepts_a_file_exactly_when_the_loader_does(
    tmp_path: Path, data: dict[str, Any], accepted: bool
) -> None:
    assert (schema_accepts(data), loader_accepts(tmp_path, data)) == (accepted, accepted)
