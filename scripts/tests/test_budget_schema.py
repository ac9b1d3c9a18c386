"""The budget keys (docs/budgets.md §4) in the shipped JSON schema: it accepts and refuses
what `ll-loop validate` does, in both dialects (`loading/budget_schema`)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.validation import load_loop

SCHEMA = json.loads(
    resources.files("little_loops.fsm").joinpath("fsm-loop-schema.json").read_text("utf-8")
)
LEGACY: dict[str, Any] = {
    "name": "n",
    "initial": "a",
    "states": {"a": {"action": "true", "next": "b"}, "b": {"terminal": True}},
}
HEAD: dict[str, Any] = {**LEGACY, "max_steps": 5}


def _schema_ok(data: dict[str, Any]) -> bool:
    return not list(Draft7Validator(SCHEMA).iter_errors(data))


def _validate_ok(data: dict[str, Any], folder: Path) -> bool:
    path = folder / "n.yaml"
    path.write_text(dump_yaml(data), encoding="utf-8")
    try:
        load_loop(path)
    except LoopValidationError:
        return False
    return True


def _with_state(base: dict[str, Any], **keys: Any) -> dict[str, Any]:
    states = {**base["states"], "a": {**base["states"]["a"], **keys}}
    return {**base, "states": states}


CASES = [
    ({"max_tokens": 1000, "on_budget": "b"}, True),
    ({"max_tokens": None, "on_budget": None}, True),
    ({"max_tokens": 0}, False),
    ({"max_tokens": "many"}, False),
    ({"on_budget": 3}, False),
]
STATE_CASES = [
    ({"max_cost_usd": 0.5, "on_budget": "b"}, True),
    ({"max_tokens": 100, "on_budget": "b"}, True),
    ({"max_cost_usd": 0.5}, False),
    ({"max_tokens": 100}, False),
    ({"max_tokens": None}, True),
    ({"max_cost_usd": 0, "on_budget": "b"}, False),
    ({"max_tokens": 1.5, "on_budget": "b"}, False),
]


@pytest.mark.parametrize("base", [LEGACY, HEAD], ids=["legacy", "head"])
@pytest.mark.parametrize(("keys", "valid"), CASES)
def test_loop_budget_keys_schema_agrees_with_validate(
    tmp_path: Path, base: dict[str, Any], keys: dict[str, Any], valid: bool
) -> None:
    data = {**base, **keys}

    assert (_schema_ok(data), _validate_ok(data, tmp_path)) == (valid, valid)


@pytest.mark.parametrize("base", [LEGACY, HEAD], ids=["legacy", "head"])
@pytest.mark.parametrize(("keys", "valid"), STATE_CASES)
def test_state_budget_keys_schema_agrees_with_validate(
    tmp_path: Path, base: dict[str, Any], keys: dict[str, Any], valid: bool
) -> None:
    data = _with_state(base, **keys)

    assert (_schema_ok(data), _validate_ok(data, tmp_path)) == (valid, valid)
