"""Tests for little_loops.fsm.validation: records, graph checks, shape checks, loading."""

from __future__ import annotations

import copy
import datetime
import logging
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from little_loops.fsm.errors import (
    LoopError,
    LoopFileError,
    LoopNotFoundError,
    LoopSyntaxError,
    LoopValidationError,
)
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.schema import (
    EvaluateConfig,
    FSMLoop,
    LLMConfig,
    RateLimitConfig,
    RouteConfig,
    StateConfig,
)
from little_loops.fsm.validation import (
    EVALUATOR_REQUIRED_FIELDS,
    MAX_LOOP_FILE_BYTES,
    PARADIGM_SPEC_KEYS,
    VALID_OPERATORS,
    ValidationError,
    ValidationSeverity,
    check_loop_mapping,
    describe_value,
    is_paradigm_spec,
    load_and_validate,
    load_loop,
    load_loop_mapping,
    validate_fsm,
)

ERROR = ValidationSeverity.ERROR
WARNING = ValidationSeverity.WARNING

STATE_KEYS = (
    "action, evaluate, route, on_success, on_failure, on_error, next, terminal, capture, "
    "timeout, on_maintain, action_type, max_visits, on_max_visits"
)
LOOP_KEYS = (
    "name, initial, states, paradigm, context, scope, max_iterations, backoff, timeout, "
    "maintain, llm, on_handoff, max_continuations, stall_threshold, checkpoint, logs_keep, "
    "on_stall, progress_paths, max_cost_usd, notify, rate_limit, host"
)
EVALUATE_KEYS = (
    "type, operator, target, tolerance, pattern, negate, path, prompt, schema, "
    "min_confidence, uncertain_suffix, source, previous, direction"
)
EVALUATOR_TYPES = (
    "exit_code, output_numeric, output_json, output_contains, convergence, llm_structured, "
    "return_metadata"
)
GOOD_LOOP_YAML = """\
name: demo
initial: check
states:
  check:
    action: "true"
    on_success: done
    on_failure: fix
  fix:
    action: echo fix
    next: check
  done:
    terminal: true
"""


def loop_dict(**top_level: Any) -> dict[str, Any]:
    """A valid three-state loop mapping, with top-level keys replaced or added."""
    data: dict[str, Any] = {
        "name": "demo",
        "initial": "check",
        "states": {
            "check": {"action": "true", "on_success": "done", "on_failure": "fix"},
            "fix": {"action": "echo fix", "next": "check"},
            "done": {"terminal": True},
        },
    }
    data.update(top_level)
    return data


def with_state(**state: Any) -> dict[str, Any]:
    """The valid loop with `check` replaced by the given state mapping."""
    data = loop_dict()
    data["states"]["check"] = state
    return data


def with_evaluate(**evaluate: Any) -> dict[str, Any]:
    return with_state(action="true", evaluate=evaluate, on_success="done", on_failure="fix")


def loop(states: dict[str, StateConfig], initial: str = "a", **kwargs: Any) -> FSMLoop:
    return FSMLoop(name="t", initial=initial, states=states, **kwargs)


def write(tmp_path: Path, text: str, name: str = "loop.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def messages(errors: list[ValidationError]) -> list[tuple[str | None, str]]:
    return [(error.path, error.message) for error in errors]


# ---------------------------------------------------------------------------
# Records and constants
# ---------------------------------------------------------------------------


def test_validation_error_defaults_to_error_without_path() -> None:
    error = ValidationError("broken")

    assert (error.message, error.path, error.severity) == ("broken", None, ERROR)
    assert str(error) == "[ERROR] broken"


def test_validation_error_str_with_path_and_warning() -> None:
    assert str(ValidationError("m", "states.a")) == "[ERROR] states.a: m"
    assert str(ValidationError("m", "states.a", WARNING)) == "[WARNING] states.a: m"
    assert str(ValidationError("m", "", WARNING)) == "[WARNING] m"


def test_validation_error_is_a_record_not_an_exception() -> None:
    assert not issubclass(ValidationError, BaseException)
    assert [f.name for f in fields(ValidationError)] == ["message", "path", "severity"]
    assert ValidationError("m", "p") == ValidationError("m", "p", ERROR)


def test_severity_values() -> None:
    assert [(item.name, item.value) for item in ValidationSeverity] == [
        ("ERROR", "error"),
        ("WARNING", "warning"),
    ]


def test_constants_match_the_contract() -> None:
    assert EVALUATOR_REQUIRED_FIELDS == {
        "exit_code": [],
        "output_numeric": ["operator", "target"],
        "output_json": ["path", "operator", "target"],
        "output_contains": ["pattern"],
        "convergence": ["target"],
        "llm_structured": [],
        "return_metadata": [],
    }
    assert {"eq", "ne", "lt", "le", "gt", "ge"} == VALID_OPERATORS


def test_allowed_key_lists_follow_the_dataclasses() -> None:
    """A field added to a dataclass must be added to validation (and this test) too."""
    assert ", ".join(f.name for f in fields(FSMLoop)) == LOOP_KEYS
    assert ", ".join(f.name for f in fields(StateConfig)) == STATE_KEYS
    assert ", ".join(f.name for f in fields(EvaluateConfig)) == EVALUATE_KEYS
    assert [f.name for f in fields(LLMConfig)] == ["enabled", "model", "max_tokens", "timeout"]
    assert [f.name for f in fields(RateLimitConfig)] == [
        "max_wait",
        "retries",
        "continue_session",
        "first_backoff",
        "max_utilization",
    ]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-3, "-3"),
        (2**300, "a very large integer"),
        (1.5, "1.5"),
        (float("nan"), "nan"),
        ("yes", "'yes'"),
        ("x" * 41, "'" + "x" * 37 + "...'"),
        ("x" * 40, "'" + "x" * 40 + "'"),
        ({"a": 1}, "a mapping"),
        ([1], "a list"),
        (datetime.date(2020, 1, 1), "a date"),
    ],
)
def test_describe_value(value: Any, text: str) -> None:
    assert describe_value(value) == text


# ---------------------------------------------------------------------------
# validate_fsm: the eleven graph checks
# ---------------------------------------------------------------------------


def test_valid_loop_has_no_findings() -> None:
    assert validate_fsm(FSMLoop.from_dict(loop_dict())) == []


def test_check_1_initial_not_found() -> None:
    fsm = loop({"done": StateConfig(terminal=True)}, initial="start")

    assert messages(validate_fsm(fsm))[0] == (
        "initial",
        "Initial state 'start' not found in states",
    )


def test_check_2_no_terminal_state() -> None:
    fsm = loop({"a": StateConfig(action="x", next="a")})

    assert messages(validate_fsm(fsm)) == [
        ("states", "No terminal state defined. At least one state must have 'terminal: true'")
    ]


def test_check_3_unknown_references_are_sorted_and_list_the_states() -> None:
    fsm = loop(
        {
            "a": StateConfig(action="x", on_success="zed", on_failure="fixx", on_error="fixx"),
            "done": StateConfig(terminal=True),
        }
    )

    findings = validate_fsm(fsm)

    assert [str(item) for item in findings] == [
        "[ERROR] states.a: References unknown state 'fixx' (states are: a, done)",
        "[ERROR] states.a: References unknown state 'zed' (states are: a, done)",
        "[WARNING] states.done: State is not reachable from initial state",
    ]


def test_check_3_covers_every_kind_of_reference() -> None:
    route = RouteConfig(routes={"ok": "r1"}, default="r2", error="r3")
    fsm = loop(
        {
            "a": StateConfig(route=route, next="n", on_maintain="m"),
            "done": StateConfig(terminal=True),
        },
        maintain=True,
    )

    unknown = [item.message.split("'")[1] for item in validate_fsm(fsm) if item.severity is ERROR]

    assert unknown == ["m", "n", "r1", "r2", "r3"]


def test_current_and_templates_are_allowed_targets_everywhere() -> None:
    fsm = loop(
        {
            "a": StateConfig(action="x", next="$current"),
            "b": StateConfig(route=RouteConfig(routes={"x": "${context.next}"}, default="done")),
            "done": StateConfig(terminal=True, on_maintain="${captured.s.output}"),
        }
    )

    assert validate_fsm(fsm) == [
        ValidationError("State is not reachable from initial state", "states.b", WARNING),
        ValidationError("State is not reachable from initial state", "states.done", WARNING),
    ]


@pytest.mark.parametrize(
    ("evaluate", "missing"),
    [
        (EvaluateConfig(type="output_numeric"), ["operator", "target"]),
        (EvaluateConfig(type="output_json", operator="eq"), ["path", "target"]),
        (EvaluateConfig(type="output_contains"), ["pattern"]),
        (EvaluateConfig(type="convergence"), ["target"]),
        (EvaluateConfig(type="exit_code"), []),
        (EvaluateConfig(type="llm_structured"), []),
        (EvaluateConfig(type="no_such_type"), []),
    ],
)
def test_check_4_required_evaluator_fields(evaluate: EvaluateConfig, missing: list[str]) -> None:
    fsm = loop(
        {"a": StateConfig(evaluate=evaluate, next="done"), "done": StateConfig(terminal=True)}
    )

    assert messages(validate_fsm(fsm)) == [
        ("states.a.evaluate", f"Evaluator type '{evaluate.type}' requires '{field}' field")
        for field in missing
    ]


def test_check_4_zero_target_counts_as_set() -> None:
    evaluate = EvaluateConfig(type="output_numeric", operator="eq", target=0)
    fsm = loop(
        {"a": StateConfig(evaluate=evaluate, next="done"), "done": StateConfig(terminal=True)}
    )

    assert validate_fsm(fsm) == []


def evaluator_findings(evaluate: EvaluateConfig) -> list[tuple[str | None, str]]:
    fsm = loop(
        {"a": StateConfig(evaluate=evaluate, next="done"), "done": StateConfig(terminal=True)}
    )
    return messages(validate_fsm(fsm))


def test_check_5_invalid_operator() -> None:
    evaluate = EvaluateConfig(type="output_numeric", operator="==", target=1)

    assert evaluator_findings(evaluate) == [
        (
            "states.a.evaluate.operator",
            "Invalid operator '=='. Must be one of: eq, ge, gt, le, lt, ne",
        )
    ]


def test_check_6_and_7_convergence_direction_and_tolerance() -> None:
    evaluate = EvaluateConfig(type="convergence", target=0, tolerance=-1, direction="up")

    assert evaluator_findings(evaluate) == [
        (
            "states.a.evaluate.direction",
            "Invalid direction 'up'. Must be 'minimize' or 'maximize'",
        ),
        ("states.a.evaluate.tolerance", "Tolerance cannot be negative"),
    ]


def test_check_6_and_7_apply_only_to_convergence_and_numbers() -> None:
    template = EvaluateConfig(type="convergence", target=0, tolerance="${context.t}")
    other_type = EvaluateConfig(type="exit_code", tolerance=-1, direction="up")

    assert evaluator_findings(template) == []
    assert evaluator_findings(other_type) == []


@pytest.mark.parametrize("confidence", [-0.1, 1.5])
def test_check_8_min_confidence_range(confidence: float) -> None:
    evaluate = EvaluateConfig(type="llm_structured", min_confidence=confidence)

    assert evaluator_findings(evaluate) == [
        ("states.a.evaluate.min_confidence", "min_confidence must be between 0 and 1")
    ]
    assert evaluator_findings(EvaluateConfig(type="exit_code", min_confidence=confidence)) == []


def test_check_9_shorthand_and_route_warning() -> None:
    state = StateConfig(action="x", on_success="done", route=RouteConfig(default="done"))
    fsm = loop({"a": state, "done": StateConfig(terminal=True)})

    assert validate_fsm(fsm) == [
        ValidationError(
            "Both shorthand routing (on_success/on_failure/on_error) and full route table "
            "defined. Route table will take precedence.",
            "states.a",
            WARNING,
        )
    ]


def test_check_10_state_without_transition() -> None:
    fsm = loop({"a": StateConfig(action="x"), "done": StateConfig(terminal=True)})

    assert str(validate_fsm(fsm)[0]) == (
        "[ERROR] states.a: State has no transition defined. "
        "Add routing, 'next', or mark as 'terminal: true'"
    )


@pytest.mark.parametrize(
    "state",
    [
        StateConfig(on_error="done"),
        StateConfig(route=RouteConfig()),
        StateConfig(next="done"),
        StateConfig(terminal=True),
    ],
)
def test_check_10_any_transition_is_enough(state: StateConfig) -> None:
    fsm = loop({"a": state, "done": StateConfig(terminal=True)})

    assert [item for item in validate_fsm(fsm) if item.severity is ERROR] == []


def test_check_11_unreachable_states_in_state_order() -> None:
    fsm = loop(
        {
            "island2": StateConfig(next="island1"),
            "a": StateConfig(next="done"),
            "island1": StateConfig(next="island2"),
            "done": StateConfig(terminal=True),
        }
    )

    assert messages(validate_fsm(fsm)) == [
        ("states.island2", "State is not reachable from initial state"),
        ("states.island1", "State is not reachable from initial state"),
    ]


def test_check_11_with_missing_initial_reports_every_state() -> None:
    fsm = loop({"done": StateConfig(terminal=True)}, initial="nowhere")

    assert [str(item) for item in validate_fsm(fsm)] == [
        "[ERROR] initial: Initial state 'nowhere' not found in states",
        "[WARNING] states.done: State is not reachable from initial state",
    ]


def test_findings_come_in_the_documented_order() -> None:
    fsm = loop(
        {
            "a": StateConfig(
                evaluate=EvaluateConfig(type="output_contains"),
                on_success="ghost",
                route=RouteConfig(default="a"),
            ),
            "b": StateConfig(),
        },
        initial="x",
    )

    assert [str(item) for item in validate_fsm(fsm)] == [
        "[ERROR] initial: Initial state 'x' not found in states",
        "[ERROR] states: No terminal state defined. At least one state must have 'terminal: true'",
        "[ERROR] states.a: References unknown state 'ghost' (states are: a, b)",
        "[ERROR] states.a.evaluate: Evaluator type 'output_contains' requires 'pattern' field",
        "[WARNING] states.a: Both shorthand routing (on_success/on_failure/on_error) and full "
        "route table defined. Route table will take precedence.",
        "[ERROR] states.b: State has no transition defined. Add routing, 'next', or mark as "
        "'terminal: true'",
        "[WARNING] states.a: State is not reachable from initial state",
        "[WARNING] states.b: State is not reachable from initial state",
    ]


# ---------------------------------------------------------------------------
# check_loop_mapping: shape of the raw mapping
# ---------------------------------------------------------------------------


def test_valid_mapping_has_no_shape_errors() -> None:
    data = loop_dict(
        paradigm="fsm",
        context={"a": [1, {"b": None}]},
        scope=["src/"],
        max_iterations=1,
        backoff=0,
        timeout=1,
        maintain=False,
        llm={"enabled": False, "model": "m", "max_tokens": 1, "timeout": 1},
        on_handoff="spawn",
    )
    data["states"]["check"] = {
        "action": "/cmd",
        "action_type": "slash_command",
        "capture": "c",
        "timeout": 5,
        "evaluate": {
            "type": "convergence",
            "operator": "le",
            "target": 1.5,
            "tolerance": "${context.t}",
            "pattern": "p",
            "negate": True,
            "path": ".a",
            "prompt": "p",
            "schema": {"type": "object"},
            "min_confidence": 1,
            "uncertain_suffix": False,
            "source": "${captured.c.output}",
            "previous": "${prev.output}",
            "direction": "maximize",
        },
        "route": {"target": "done", "progress": "$current", "_": "fix", "_error": "done"},
        "on_maintain": "check",
        "terminal": False,
    }

    assert check_loop_mapping(data) == []


def test_nulls_mean_unset_for_optional_keys() -> None:
    data = loop_dict(paradigm=None, backoff=None, timeout=None)
    data["states"]["fix"].update(action=None, capture=None, timeout=None, action_type=None)
    data["states"]["check"]["evaluate"] = {
        "type": "exit_code",
        **dict.fromkeys(["operator", "target", "tolerance", "pattern", "path"]),
        **dict.fromkeys(["prompt", "schema", "source", "previous"]),
    }

    assert check_loop_mapping(data) == []


def test_unknown_keys_at_every_level_name_the_allowed_keys() -> None:
    data = loop_dict(max_iteration=5, llm={"modle": "x"})
    data["states"]["check"]["on_sucess"] = "done"
    data["states"]["check"]["evaluate"] = {"type": "exit_code", "negated": True}
    data["states"]["fix"]["route"] = {"_retry": "fix", "_": "check"}

    assert messages(check_loop_mapping(data)) == [
        ("states.check.on_sucess", f"unknown key 'on_sucess' (allowed: {STATE_KEYS})"),
        ("states.check.evaluate.negated", f"unknown key 'negated' (allowed: {EVALUATE_KEYS})"),
        ("states.fix.route._retry", "unknown key '_retry' (allowed special keys: _, _error)"),
        ("max_iteration", f"unknown key 'max_iteration' (allowed: {LOOP_KEYS})"),
        ("llm.modle", "unknown key 'modle' (allowed: enabled, model, max_tokens, timeout)"),
    ]


def test_non_string_keys_are_unknown_keys() -> None:
    data: dict[Any, Any] = loop_dict()
    data[1] = "x"

    assert messages(check_loop_mapping(data)) == [("1", f"unknown key 1 (allowed: {LOOP_KEYS})")]


def test_missing_required_keys() -> None:
    data = loop_dict()
    del data["name"]
    data["states"]["check"]["evaluate"] = {"operator": "eq"}

    assert messages(check_loop_mapping(data)) == [
        ("states.check.evaluate", "missing required key 'type'"),
        (None, "missing required key 'name'"),
    ]


def test_shape_check_of_a_non_mapping() -> None:
    assert messages(check_loop_mapping([1])) == [(None, "a loop must be a mapping, got a list")]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("name", "", "must be a non-empty string, got ''"),
        ("name", 5, "must be a non-empty string, got 5"),
        ("initial", None, "must be a string, got null"),
        ("states", [], "must be a mapping of state names to states, got a list"),
        ("states", {}, "must define at least one state"),
        (
            "paradigm",
            "loopy",
            "unknown paradigm 'loopy' (allowed: convergence, fsm, goal, imperative, invariants)",
        ),
        ("context", [], "must be a mapping, got a list"),
        ("context", None, "must be a mapping, got null"),
        ("scope", "src", "must be a list of strings, got 'src'"),
        ("max_iterations", True, "must be an integer >= 1, got true"),
        ("max_iterations", 0, "must be an integer >= 1, got 0"),
        ("max_iterations", 5.0, "must be an integer >= 1, got 5.0 (write 5)"),
        ("max_iterations", "5", "must be an integer >= 1, got '5'"),
        ("max_iterations", None, "must be an integer >= 1, got null"),
        ("backoff", -0.5, "must be a number >= 0, got -0.5"),
        ("backoff", float("inf"), "must be a number >= 0, got inf"),
        ("backoff", False, "must be a number >= 0, got false"),
        ("timeout", 0, "must be an integer >= 1, got 0"),
        ("maintain", "yes", "must be true or false, got 'yes'"),
        ("llm", None, "must be a mapping, got null"),
        (
            "on_handoff",
            "stop",
            "unknown on_handoff value 'stop' (allowed: pause, spawn, terminate, continue)",
        ),
        (
            "on_handoff",
            None,
            "must be a string (allowed: pause, spawn, terminate, continue), got null",
        ),
        ("max_continuations", 0, "must be an integer >= 1, got 0"),
        ("max_continuations", 2.5, "must be an integer >= 1, got 2.5"),
        ("max_continuations", True, "must be an integer >= 1, got true"),
        ("max_continuations", None, "must be an integer >= 1, got null"),
    ],
)
def test_top_level_types(key: str, value: Any, message: str) -> None:
    assert messages(check_loop_mapping(loop_dict(**{key: value}))) == [(key, message)]


def test_scope_items_are_reported_by_index() -> None:
    data = loop_dict(scope=["src", 3, {"a": "b"}])

    assert messages(check_loop_mapping(data)) == [
        ("scope.1", "must be a string, got 3"),
        (
            "scope.2",
            "must be a string, got a mapping (quote text that contains ': ', or YAML reads it "
            "as a mapping)",
        ),
    ]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("enabled", "no", "must be true or false, got 'no'"),
        ("model", None, "must be a non-empty string, got null"),
        ("max_tokens", 0, "must be an integer >= 1, got 0"),
        ("timeout", 2.5, "must be an integer >= 1, got 2.5"),
    ],
)
def test_llm_types(key: str, value: Any, message: str) -> None:
    assert messages(check_loop_mapping(loop_dict(llm={key: value}))) == [(f"llm.{key}", message)]


def test_state_names_and_states_must_be_well_formed() -> None:
    data = loop_dict()
    data["states"][7] = {"terminal": True}
    data["states"]["empty"] = None

    assert messages(check_loop_mapping(data)) == [
        ("states", "state names must be strings, got 7"),
        ("states.empty", "must be a mapping, got null"),
    ]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "action",
            {"echo a": "b"},
            "must be a string, got a mapping (quote text that contains "
            "': ', or YAML reads it as a mapping)",
        ),
        ("action", ["a"], "must be a string, got a list"),
        ("on_success", 1, "must be a string, got 1"),
        ("on_failure", True, "must be a string, got true"),
        ("on_error", 1.0, "must be a string, got 1.0"),
        ("next", [], "must be a string, got a list"),
        ("on_maintain", {}, "must be a string, got a mapping"),
        ("capture", 3, "must be a string, got 3"),
        ("terminal", "yes", "must be true or false, got 'yes'"),
        ("terminal", None, "must be true or false, got null"),
        ("timeout", 0, "must be an integer >= 1, got 0"),
        ("timeout", True, "must be an integer >= 1, got true"),
        ("action_type", "python", "unknown action_type 'python' (allowed: shell, slash_command)"),
        ("evaluate", "exit_code", "must be a mapping, got 'exit_code'"),
        ("route", ["done"], "must be a mapping, got a list"),
    ],
)
def test_state_types(key: str, value: Any, message: str) -> None:
    data = loop_dict()
    data["states"]["check"][key] = value

    assert messages(check_loop_mapping(data)) == [(f"states.check.{key}", message)]


def test_route_entries() -> None:
    data = with_state(route={"success": "done", "failure": None, True: "fix", "_error": 3})

    assert messages(check_loop_mapping(data)) == [
        ("states.check.route.failure", "must be a string, got null"),
        ("states.check.route", "verdict names must be strings, got true"),
        ("states.check.route._error", "must be a string, got 3"),
    ]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("type", "exitcode", f"unknown evaluator type 'exitcode' (allowed: {EVALUATOR_TYPES})"),
        ("type", None, f"must be a string (allowed: {EVALUATOR_TYPES}), got null"),
        ("operator", "==", "unknown operator '==' (allowed: eq, ge, gt, le, lt, ne)"),
        ("target", True, "must be a number or a string, got true"),
        ("target", [1], "must be a number or a string, got a list"),
        ("tolerance", -1, "must be a number >= 0 or a string, got -1"),
        ("tolerance", float("nan"), "must be a number >= 0 or a string, got nan"),
        ("pattern", 5, "must be a string, got 5"),
        ("negate", "true", "must be true or false, got 'true'"),
        ("path", 1, "must be a string, got 1"),
        ("prompt", [], "must be a string, got a list"),
        ("schema", "object", "must be a mapping, got 'object'"),
        ("min_confidence", 1.5, "must be a number from 0 to 1, got 1.5"),
        ("min_confidence", "high", "must be a number from 0 to 1, got 'high'"),
        ("uncertain_suffix", 1, "must be true or false, got 1"),
        ("source", 1, "must be a string, got 1"),
        ("previous", 1, "must be a string, got 1"),
        ("direction", "down", "unknown direction 'down' (allowed: minimize, maximize)"),
    ],
)
def test_evaluate_types(key: str, value: Any, message: str) -> None:
    evaluate = {"type": "exit_code", key: value}

    assert messages(check_loop_mapping(with_evaluate(**evaluate))) == [
        (f"states.check.evaluate.{key}", message)
    ]


def test_errors_come_in_file_order() -> None:
    data = {"max_iterations": 0, "name": "", "states": {"a": {"terminal": 1}}, "initial": 3}

    assert [str(error) for error in check_loop_mapping(data)] == [
        "[ERROR] max_iterations: must be an integer >= 1, got 0",
        "[ERROR] name: must be a non-empty string, got ''",
        "[ERROR] states.a.terminal: must be true or false, got 1",
        "[ERROR] initial: must be a string, got 3",
    ]


def test_shape_check_does_not_mutate_its_input() -> None:
    data = loop_dict(bogus=1)
    before = copy.deepcopy(data)

    check_loop_mapping(data)

    assert data == before


# --- paradigm specs --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"paradigm": "goal"}, True),
        ({"paradigm": "bogus"}, True),
        ({"paradigm": ["goal"]}, True),
        ({"paradigm": "fsm"}, False),
        ({"paradigm": None}, False),
        ({}, False),
        ({"paradigm": "goal", "initial": "a"}, False),
        ({"paradigm": "goal", "states": {}}, False),
    ],
)
def test_is_paradigm_spec(data: dict[str, Any], expected: bool) -> None:
    assert is_paradigm_spec(data) is expected


def test_paradigm_spec_keys_cover_each_paradigm() -> None:
    assert PARADIGM_SPEC_KEYS["goal"] == (
        "paradigm", "name", "goal", "tools", "max_iterations", "backoff", "timeout",
        "context", "scope", "llm", "on_handoff", "max_continuations", "stall_threshold",
        "checkpoint", "logs_keep", "progress_paths",
    )  # fmt: skip
    assert set(PARADIGM_SPEC_KEYS) == {"goal", "convergence", "invariants", "imperative"}


def test_valid_paradigm_specs_have_no_shape_errors() -> None:
    specs: list[dict[str, Any]] = [
        {"paradigm": "goal", "goal": "g", "tools": ["a"], "llm": {"enabled": False}},
        {"paradigm": "convergence", "name": "c", "check": "x", "toward": 0, "using": "y",
         "tolerance": 1, "direction": "maximize", "scope": ["s"]},
        {"paradigm": "invariants", "name": "i", "maintain": True,
         "constraints": [{"name": "n", "check": "c", "fix": "f"}, "not a mapping"]},
        {"paradigm": "imperative", "name": "m", "steps": ["s"], "until": {"check": "c"}},
        {"paradigm": "invariants", "name": "i", "constraints": "compiler reports this"},
        {"paradigm": "imperative", "name": "m", "steps": [], "until": "compiler reports"},
    ]  # fmt: skip

    assert [check_loop_mapping(spec) for spec in specs] == [[] for _ in specs]


def test_paradigm_spec_unknown_and_badly_typed_keys() -> None:
    spec = {
        "paradigm": "imperative",
        "name": "m",
        "steps": ["s"],
        "until": {"check": "c", "passes": 3},
        "max_iterations": -1,
        "states_": {},
        "maintain": True,
    }
    allowed = (
        "paradigm, name, steps, until, max_iterations, backoff, timeout, context, scope, "
        "llm, on_handoff, max_continuations, stall_threshold, checkpoint, logs_keep, "
        "progress_paths"
    )

    assert messages(check_loop_mapping(spec)) == [
        ("until.passes", "unknown key 'passes' (allowed: check)"),
        ("max_iterations", "must be an integer >= 1, got -1"),
        ("states_", f"unknown key 'states_' (allowed: {allowed})"),
        ("maintain", f"unknown key 'maintain' (allowed: {allowed})"),
    ]


def test_paradigm_spec_constraint_keys() -> None:
    spec = {
        "paradigm": "invariants",
        "name": "i",
        "constraints": [{"name": "a", "check": "c", "fix": "f", "fixx": "g"}],
        "maintain": "yes",
    }

    assert messages(check_loop_mapping(spec)) == [
        ("constraints.0.fixx", "unknown key 'fixx' (allowed: name, check, fix)"),
        ("maintain", "must be true or false, got 'yes'"),
    ]


@pytest.mark.parametrize(
    ("paradigm", "message"),
    [
        (
            "loopy",
            "unknown paradigm 'loopy' (allowed: convergence, fsm, goal, imperative, invariants)",
        ),
        (
            ["goal"],
            "must be a string (allowed: convergence, fsm, goal, imperative, invariants), "
            "got a list",
        ),
    ],
)
def test_paradigm_spec_with_unknown_paradigm(paradigm: Any, message: str) -> None:
    assert messages(check_loop_mapping({"paradigm": paradigm, "x": 1})) == [("paradigm", message)]


# ---------------------------------------------------------------------------
# Loading files
# ---------------------------------------------------------------------------


def test_load_and_validate_returns_the_loop(tmp_path: Path) -> None:
    fsm = load_and_validate(write(tmp_path, GOOD_LOOP_YAML))

    assert fsm == FSMLoop.from_dict(loop_dict())


def test_load_accepts_a_string_path_and_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_LOOP_YAML.encode())

    assert load_and_validate(str(path)).name == "demo"
    assert load_loop(str(path)).name == "demo"


def test_yaml_11_booleans_stay_strings(tmp_path: Path) -> None:
    text = GOOD_LOOP_YAML.replace("on_failure: fix", "route: {on: done, 'no': fix, yes: done}")

    fsm = load_and_validate(write(tmp_path, text))

    route = fsm.states["check"].route
    assert route is not None
    assert route.routes == {"on": "done", "no": "fix", "yes": "done"}


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"

    with pytest.raises(LoopNotFoundError) as caught:
        load_and_validate(path)

    assert isinstance(caught.value, FileNotFoundError)
    assert str(caught.value) == f"FSM file not found: {path}"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(LoopFileError) as caught:
        load_and_validate(tmp_path)

    assert caught.value.user_lines() == [f"{tmp_path}: is a directory, not a loop file"]


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)

    with pytest.raises(LoopFileError) as caught:
        load_loop(fifo)

    assert caught.value.user_lines() == [f"{fifo}: is not a regular file"]


def test_too_large(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (MAX_LOOP_FILE_BYTES + 1))

    with pytest.raises(LoopFileError) as caught:
        load_and_validate(path)

    assert str(caught.value) == "is too large for a loop file (more than 5 MiB)"


def test_exactly_the_size_limit_is_read(tmp_path: Path) -> None:
    # Bytes that fail decoding at once show the file got past the size check, fast.
    path = tmp_path / "edge.yaml"
    path.write_bytes(b"\n" * (MAX_LOOP_FILE_BYTES - 1) + b"\xff")

    with pytest.raises(LoopFileError) as caught:
        load_and_validate(path)

    assert str(caught.value) == (
        f"is not UTF-8 text (invalid byte 0xff on line {MAX_LOOP_FILE_BYTES})"
    )


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: demo\ninitial: caf\xe9\n")

    with pytest.raises(LoopFileError) as caught:
        load_and_validate(path)

    assert caught.value.user_lines() == [f"{path}: is not UTF-8 text (invalid byte 0xe9 on line 2)"]


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests may run as root, which reads any file: the OS refusal is simulated.
    path = write(tmp_path, GOOD_LOOP_YAML)

    def refuse(self: Path, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)

    with pytest.raises(LoopFileError) as caught:
        load_and_validate(path)

    assert str(caught.value) == "cannot read file: Permission denied"


def test_file_removed_between_checks_is_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, GOOD_LOOP_YAML)

    def vanished(self: Path, *args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError(2, "No such file or directory", str(self))

    monkeypatch.setattr(Path, "open", vanished)

    with pytest.raises(LoopNotFoundError) as caught:
        load_loop(path)

    assert str(caught.value) == f"FSM file not found: {path}"


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "name: demo\nstates: [a\n")

    with pytest.raises(LoopSyntaxError) as caught:
        load_and_validate(path)

    assert caught.value.source == str(path)
    assert str(caught.value).startswith("YAML syntax error at line 3, column 1: ")


def test_yaml_nested_too_deeply(tmp_path: Path) -> None:
    path = write(tmp_path, "[" * 5000 + "]" * 5000)

    with pytest.raises(LoopFileError) as caught:
        load_loop_mapping(path)

    assert str(caught.value) == "YAML is nested too deeply"


def test_yaml_integer_with_too_many_digits(tmp_path: Path) -> None:
    path = write(tmp_path, "name: " + "9" * 5000 + "\n")

    with pytest.raises(LoopFileError) as caught:
        load_loop_mapping(path)

    assert str(caught.value).startswith("YAML value cannot be read: Exceeds the limit (4300")


@pytest.mark.parametrize(
    ("text", "got"),
    [("- a\n", "<class 'list'>"), ("", "<class 'NoneType'>"), ("just text\n", "<class 'str'>")],
)
def test_not_a_mapping(tmp_path: Path, text: str, got: str) -> None:
    with pytest.raises(LoopFileError) as caught:
        load_and_validate(write(tmp_path, text))

    assert str(caught.value) == f"FSM file must contain a YAML mapping, got {got}"


def test_missing_required_fields(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\n")

    with pytest.raises(LoopFileError) as caught:
        load_and_validate(path)

    assert not isinstance(caught.value, LoopValidationError)
    assert caught.value.user_lines() == [
        f"{path}: FSM file missing required fields: initial, states"
    ]


def test_paradigm_file_is_not_compiled_by_load_and_validate(tmp_path: Path) -> None:
    path = write(tmp_path, "paradigm: goal\ngoal: g\ntools: ['true']\n")

    with pytest.raises(LoopFileError) as caught:
        load_and_validate(path)

    assert str(caught.value) == "FSM file missing required fields: name, initial, states"


def test_shape_errors_raise_validation_error_before_graph_checks(tmp_path: Path) -> None:
    text = GOOD_LOOP_YAML.replace("on_success: done", "on_sucess: done").replace(
        "next: check", "next: chek"
    )
    path = write(tmp_path, text)

    with pytest.raises(LoopValidationError) as caught:
        load_and_validate(path)

    error = caught.value
    assert isinstance(error, ValueError)
    assert str(error) == (
        "FSM validation failed:\n"
        f"  [ERROR] states.check.on_sucess: unknown key 'on_sucess' (allowed: {STATE_KEYS})"
    )
    assert error.user_lines() == [
        f"{path}: states.check.on_sucess: unknown key 'on_sucess' (allowed: {STATE_KEYS})"
    ]


def test_graph_errors_raise_validation_error(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_LOOP_YAML.replace("next: check", "next: chek"))

    with pytest.raises(LoopValidationError) as caught:
        load_and_validate(path)

    assert str(caught.value) == (
        "FSM validation failed:\n"
        "  [ERROR] states.fix: References unknown state 'chek' (states are: check, fix, done)"
    )
    assert caught.value.errors == [
        ValidationError(
            "References unknown state 'chek' (states are: check, fix, done)", "states.fix"
        )
    ]


def test_warnings_are_logged_and_the_loop_returned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = GOOD_LOOP_YAML + "  island:\n    next: done\n"
    caplog.set_level(logging.WARNING, logger="little_loops.fsm.validation")

    fsm = load_and_validate(write(tmp_path, text))

    assert list(fsm.states) == ["check", "fix", "done", "island"]
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            "little_loops.fsm.validation",
            logging.WARNING,
            "[WARNING] states.island: State is not reachable from initial state",
        )
    ]


def test_errors_suppress_warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = GOOD_LOOP_YAML.replace("terminal: true", "next: nowhere") + "  island:\n    next: x\n"
    caplog.set_level(logging.WARNING)

    with pytest.raises(LoopValidationError):
        load_and_validate(write(tmp_path, text))

    assert caplog.records == []


def test_load_loop_mapping_returns_the_raw_mapping(tmp_path: Path) -> None:
    assert load_loop_mapping(write(tmp_path, "a: {b: [1, yes]}\n")) == {"a": {"b": [1, "yes"]}}


# --- load_loop ---------------------------------------------------------------


def test_load_loop_reads_plain_fsm_files_like_load_and_validate(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_LOOP_YAML.replace("name: demo", "name: demo\nparadigm: fsm"))

    assert load_loop(path) == load_and_validate(path)


def test_load_loop_compiles_paradigm_files(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "paradigm: goal\ngoal: Tests pass\ntools: ['true', 'echo fix']\nmax_iterations: 7\n",
    )

    fsm = load_loop(path)

    assert fsm.name == "goal-tests-pass"
    assert fsm.paradigm == "goal"
    assert fsm.max_iterations == 7
    assert list(fsm.states) == ["evaluate", "fix", "done"]


def test_load_loop_reports_compiler_errors_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "paradigm: goal\ngoal: g\n")

    with pytest.raises(LoopFileError) as caught:
        load_loop(path)

    assert not isinstance(caught.value, LoopValidationError)
    assert caught.value.user_lines() == [
        f"{path}: Goal paradigm requires 'tools' field with at least one tool"
    ]


def test_load_loop_reports_unknown_paradigm(tmp_path: Path) -> None:
    path = write(tmp_path, "paradigm: loopy\n")

    with pytest.raises(LoopValidationError) as caught:
        load_loop(path)

    assert caught.value.user_lines() == [
        f"{path}: paradigm: unknown paradigm 'loopy' (allowed: convergence, fsm, goal, "
        "imperative, invariants)"
    ]


def test_load_loop_reports_shape_errors_of_paradigm_files(tmp_path: Path) -> None:
    path = write(tmp_path, "paradigm: goal\ngoal: g\ntools: [a]\nmax_iteration: 5\nbackoff: -1\n")

    with pytest.raises(LoopValidationError) as caught:
        load_loop(path)

    assert [str(error) for error in caught.value.errors] == [
        "[ERROR] max_iteration: unknown key 'max_iteration' (allowed: paradigm, name, goal, "
        "tools, max_iterations, backoff, timeout, context, scope, llm, on_handoff, "
        "max_continuations, stall_threshold, checkpoint, logs_keep, progress_paths)",
        "[ERROR] backoff: must be a number >= 0, got -1",
    ]


def test_load_loop_logs_warnings_of_compiled_loops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, "paradigm: goal\ngoal: g\ntools: [a]\non_handoff: terminate\n")
    caplog.set_level(logging.WARNING)

    fsm = load_loop(path)

    assert fsm.on_handoff == "terminate"
    assert caplog.records == []


def test_loop_errors_are_loop_errors() -> None:
    for error_class in (LoopNotFoundError, LoopFileError, LoopSyntaxError, LoopValidationError):
        assert issubclass(error_class, LoopError)


# ---------------------------------------------------------------------------
# Any file content: loading fails only with a LoopError
# ---------------------------------------------------------------------------

FILE_KEYS = st.sampled_from(
    [
        "name", "initial", "states", "paradigm", "max_iterations", "llm", "context", "scope",
        "goal", "tools", "check", "toward", "using", "constraints", "steps", "until",
        "evaluate", "route", "type", "next", "terminal", "a", "done",
    ]
)  # fmt: skip
FILE_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from(["a", "done", "goal", "fsm", "exit_code", "x: y", "$current"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FILE_KEYS, inner, max_size=4),
    max_leaves=15,
)
FILE_TEXTS = (
    st.dictionaries(FILE_KEYS, FILE_VALUES, max_size=6).map(dump_yaml)
    | st.text(alphabet="ab:-[]{}&*!|>'\"# \n\t", max_size=60)
    | st.text(max_size=30)
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=FILE_TEXTS)
@pytest.mark.slow  # over 2 s: not in the development loop
def test_loading_any_text_fails_only_with_loop_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "random.yaml"
    path.write_text(text, encoding="utf-8")

    for load in (load_loop, load_and_validate):
        try:
            fsm = load(path)
        except LoopError as error:
            assert error.user_lines()
        else:
            assert all(item.severity is WARNING for item in validate_fsm(fsm))
