"""One JSON schema for both dialects (spec/ll-head-dialect.md §9e): the shipped file is the
generated one, it accepts HEAD files, and it judges HEAD mappings like `ll-loop validate`
(apart from the checks JSON Schema cannot express)."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator

from little_loops.fsm.errors import LoopFileError, LoopValidationError
from little_loops.fsm.loading.dialect import loop_dialect
from little_loops.fsm.loading.head_schema import (
    generate_schema,
    head_file_condition,
    legacy_part,
    schema_json,
)
from little_loops.fsm.loading.head_shape import HEAD_STATE_CHECKS
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.model.head_parts import HEAD_SESSION_MODES
from little_loops.fsm.model.loop_vocabulary import HEAD_ACTION_TYPES, HEAD_EVALUATOR_TYPES

SHIPPED_TEXT = resources.files("little_loops.fsm").joinpath("fsm-loop-schema.json").read_text()
SCHEMA = json.loads(SHIPPED_TEXT)
VALIDATOR = Draft7Validator(SCHEMA)


def schema_errors(value: Any) -> list[str]:
    return sorted(f"{error.json_path}: {error.validator}" for error in VALIDATOR.iter_errors(value))


def test_section_9e_shipped_schema_is_the_generated_one() -> None:
    assert schema_json(generate_schema(SCHEMA)) == SHIPPED_TEXT
    assert generate_schema(legacy_part(SCHEMA)) == SCHEMA


def test_section_9e_properties_still_list_the_legacy_fields_only() -> None:
    assert "description" not in SCHEMA["properties"]
    assert SCHEMA["additionalProperties"] is False
    assert "^description$" in SCHEMA["patternProperties"]
    assert SCHEMA["definitions"]["head_state"]["additionalProperties"] is False


def test_section_9e_enums_come_from_the_loader_tables() -> None:
    definitions = SCHEMA["definitions"]
    state = definitions["head_state"]["properties"]

    assert list(state) == list(HEAD_STATE_CHECKS)
    assert state["action_type"]["enum"] == [*HEAD_ACTION_TYPES, None]
    assert state["session_mode"]["enum"] == [*HEAD_SESSION_MODES, None]
    assert definitions["head_evaluate"]["properties"]["type"]["enum"] == list(HEAD_EVALUATOR_TYPES)


HEAD_LOOP: dict[str, Any] = {
    "name": "gate",
    "description": "Ask the judge.",
    "initial": "judge",
    "max_steps": 10,
    "llm": {"effort": "high"},
    "parameters": {"n": {"type": "integer", "default": 2}},
    "states": {
        "judge": {
            "action": "/review",
            "action_type": "prompt",
            "route": {"yes": "done", "no": "fix", "cannot_judge": "ask"},
            "on_partial": "fix",
            "max_retries": 2,
            "on_retry_exhausted": "ask",
        },
        "fix": {"action": "true", "next": "judge", "throttle": {"hard_max": 20}},
        "child": {"loop": "${context.child}", "with": {"n": 1}, "on_yes": "done"},
        "ask": {"terminal": True, "failure": True, "tamper_guard": "fail"},
        "done": {"terminal": True},
    },
}


def test_section_9e_a_head_loop_passes() -> None:
    assert schema_errors(HEAD_LOOP) == []


@pytest.mark.parametrize(
    ("state", "problem"),
    [
        ({"action": "x", "on_sucess": 3}, "$.states.s.on_sucess: type"),
        ({"action": "x", "colour": "red", "on_yes": "s"}, "$.states.s: additionalProperties"),
        ({"action": "x", "action_type": "fax", "next": "s"}, "$.states.s.action_type: enum"),
        ({"action": "x", "on_yes": "s", "max_retries": 1}, "$.states.s: anyOf"),
        ({"route": {"yes": "s", "success": "s"}}, "$.states.s.route: not"),
        ({"loop": "c", "action": "x"}, "$.states.s: not"),
        ({"action": "x", "on_yes": "s", "params": {}}, "$.states.s: required"),
        (
            {"action": "x", "append_to_messages": "plain", "next": "s"},
            "$.states.s.append_to_messages: pattern",
        ),
        (
            {"action": "x", "on_yes": "s", "evaluate": {"type": "comparator"}},
            "$.states.s.evaluate: required",
        ),
    ],
)
def test_section_9e_head_states_rejected(state: dict[str, Any], problem: str) -> None:
    loop = {
        "name": "n",
        "description": "d",
        "initial": "s",
        "states": {"s": state, "t": {"terminal": True}},
    }

    assert problem in schema_errors(loop)


def test_section_9e_a_legacy_file_keeps_the_legacy_rules() -> None:
    loop = {
        "name": "n",
        "initial": "a",
        "states": {"a": {"action": "x", "on_sucess": "b"}, "b": {"terminal": True}},
    }

    # The legacy `state` rules: an unknown key, and no way on.
    assert schema_errors(loop) == ["$.states.a: additionalProperties", "$.states.a: anyOf"]


# --- schema ≡ validate on HEAD mappings -------------------------------------------------

# Checks of `validate` that JSON Schema cannot express (cross-references, text inside
# templates, files on disk, comparing two values).
NOT_IN_THE_SCHEMA = (
    "Initial state '",
    "References unknown state '",
    "unknown namespace '",
    "longer than one command argument",
    "in the loop's context, not a number",
    "must be strictly increasing",
    "must not be above cost_ceiling_per_state",
    "sub-loop ",
)

STATE_NAMES = ["s0", "s1", "s2"]
TARGETS = st.sampled_from([*STATE_NAMES, "$current"])
TEXT = st.text(alphabet="abc${}. _", max_size=8)
NOT_INTEGRAL_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda number: not number.is_integer()
)
SCALARS = st.none() | st.booleans() | st.integers(-3, 30) | NOT_INTEGRAL_FLOATS | TEXT
KEYS = st.sampled_from(
    [
        *[key for key in HEAD_STATE_CHECKS if key not in ("fragment", "loop", "parameters")],
        "on_partial",
        "on_weird",
        "description",
        "max_steps",
        "visibility",
        "singleton",
        "yes",
        "no",
        "success",
        "type",
        "bogus",
    ]
)
ANY_VALUES = st.recursive(
    SCALARS | st.sampled_from(["s0", "mcp_tool", "prompt", "exit_code", "classify", "${x.y}"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


HEAD_STATES = st.fixed_dictionaries(
    {"action": optional(TEXT)},
    optional={
        "on_yes": TARGETS,
        "on_no": TARGETS,
        "on_error": TARGETS,
        "on_partial": TARGETS,
        "next": TARGETS,
        "terminal": st.booleans(),
        "failure": st.booleans(),
        "action_type": st.sampled_from(HEAD_ACTION_TYPES),
        "max_retries": st.integers(1, 3),
        "on_retry_exhausted": TARGETS,
        "retryable_exit_codes": st.lists(st.integers(1, 9), max_size=2),
        "throttle": st.fixed_dictionaries({"hard_max": st.integers(13, 20)}),
        "session_mode": st.sampled_from(HEAD_SESSION_MODES),
        "append_to_messages": st.just("${captured.s0.output}"),
        "tools": st.lists(TEXT, max_size=2),
        "idle_timeout": st.integers(0, 5),
        "route": st.dictionaries(st.sampled_from(["yes", "no", "_", "_error", "partial"]), TARGETS),
        "evaluate": st.sampled_from(
            [
                {"type": "exit_code"},
                {"type": "classify", "line": "last"},
                {"type": "diff_stall", "max_stall": 2, "scope": ["src"]},
                {"type": "output_contains", "pattern": "ok", "error_patterns": ["boom"]},
                {"type": "llm_structured", "min_confidence": 0.4},
            ]
        ),
    },
)
HEAD_LOOPS = st.fixed_dictionaries(
    {
        "name": st.just("n"),
        "description": TEXT,
        "initial": st.sampled_from(STATE_NAMES),
        "states": st.dictionaries(
            st.sampled_from(STATE_NAMES), HEAD_STATES, min_size=1, max_size=3
        ),
    },
    optional={
        "max_steps": st.integers(1, 9),
        "visibility": st.sampled_from(["public", "internal"]),
        "singleton": st.booleans(),
        "labels": st.lists(TEXT, max_size=2),
        "parameters": st.just({"p": {"type": "enum", "values": [1]}}),
    },
)


def slots(value: Any) -> list[tuple[Any, Any]]:
    found: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((value, key))
            found.extend(slots(item))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.append((value, index))
            found.extend(slots(item))
    return found


@st.composite
def mutated_head_loops(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(draw(HEAD_LOOPS)))
    for _ in range(draw(st.integers(0, 2))):
        container, key = draw(st.sampled_from(slots(data)))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            container[key] = draw(ANY_VALUES)
        elif action == "delete" and isinstance(container, dict):
            del container[key]
        elif isinstance(container, dict):
            container[draw(KEYS)] = draw(ANY_VALUES)
    return data


def validate_problems(data: dict[str, Any], folder: Path) -> list[str]:
    path = folder / "loop.yaml"
    path.write_text(dump_yaml(data), encoding="utf-8")
    try:
        load_loop(path)
    except LoopValidationError as exc:
        return [error.message for error in exc.errors]
    except LoopFileError as exc:
        return [exc.message]
    return []


def expressible(problems: list[str]) -> list[str]:
    return [item for item in problems if not any(marker in item for marker in NOT_IN_THE_SCHEMA)]


def has_non_finite_number(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(has_non_finite_number(item) for item in value.values())
    if isinstance(value, list):
        return any(has_non_finite_number(item) for item in value)
    return False


@settings(
    max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(mutated_head_loops().filter(lambda data: not has_non_finite_number(data)))
@example(HEAD_LOOP | {"states": {**HEAD_LOOP["states"], "child": {"loop": "c", "action": "x"}}})
@example(
    {
        "name": "n",
        "initial": "a",
        "states": {"a": {"on_weird": "a", "on_partial": None}, "b": {"terminal": True}},
    }
)
@example({"name": "n", "initial": "a", "states": {"a": {"on_stall": "a"}, "b": {"terminal": True}}})
@example(
    {
        "name": "n",
        "initial": "a",
        "states": {"a": {"with": {}, "on_yes": "b"}, "b": {"terminal": True}},
    }
)
@pytest.mark.slow
def test_section_9e_schema_accepts_exactly_what_validate_accepts_for_head_files(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any]
) -> None:
    problems = expressible(validate_problems(data, tmp_path_factory.mktemp("loop")))

    assert (schema_errors(data) == []) is (problems == []), (problems, schema_errors(data))


@settings(max_examples=300)
@given(mutated_head_loops())
@pytest.mark.slow  # over 2 s: not in the development loop
def test_section_1_1_the_schema_condition_is_the_loader_dialect(data: dict[str, Any]) -> None:
    condition = Draft7Validator({"definitions": SCHEMA["definitions"], **head_file_condition()})

    assert condition.is_valid(data) is (loop_dialect(data) == "head")
