"""Tests for little_loops.fsm.compilers: paradigm specs compiled into FSM loops."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from little_loops.fsm.compilers import (
    compile_convergence,
    compile_goal,
    compile_imperative,
    compile_invariants,
    compile_paradigm,
)
from little_loops.fsm.loading.yaml_text import dump_yaml, parse_yaml
from little_loops.fsm.schema import FSMLoop, LLMConfig
from little_loops.fsm.validation import check_loop_mapping, validate_fsm

PARADIGM_NAMES = "convergence, fsm, goal, imperative, invariants"


def compile_error(compiler: Any, spec: Any) -> str:
    with pytest.raises(ValueError) as caught:
        compiler(spec)
    return str(caught.value)


# ---------------------------------------------------------------------------
# goal
# ---------------------------------------------------------------------------


def test_goal_generates_evaluate_fix_done() -> None:
    spec = {"paradigm": "goal", "goal": "Tests pass", "tools": ["true", "echo fix"]}

    assert compile_goal(spec).to_dict() == {
        "name": "goal-tests-pass",
        "initial": "evaluate",
        "states": {
            "evaluate": {"action": "true", "on_success": "done", "on_failure": "fix"},
            "fix": {"action": "echo fix", "next": "evaluate"},
            "done": {"terminal": True},
        },
        "paradigm": "goal",
    }


def test_goal_writes_the_documented_compile_output() -> None:
    spec: dict[str, Any] = {"paradigm": "goal", "goal": "Tests pass", "tools": ["true", "echo fix"]}
    spec["max_iterations"] = 7

    assert dump_yaml(compile_paradigm(spec).to_dict()) == (
        "name: goal-tests-pass\n"
        "initial: evaluate\n"
        "states:\n"
        "  evaluate:\n"
        "    action: 'true'\n"
        "    on_success: done\n"
        "    on_failure: fix\n"
        "  fix:\n"
        "    action: echo fix\n"
        "    next: evaluate\n"
        "  done:\n"
        "    terminal: true\n"
        "paradigm: goal\n"
        "max_iterations: 7\n"
    )


def test_goal_with_one_tool_uses_it_to_fix_and_ignores_extra_tools() -> None:
    one = compile_goal({"goal": "g", "tools": ["check"]})
    three = compile_goal({"goal": "g", "tools": ["check", "fix", "ignored"]})

    assert (one.states["evaluate"].action, one.states["fix"].action) == ("check", "check")
    assert (three.states["evaluate"].action, three.states["fix"].action) == ("check", "fix")


def test_goal_keeps_an_explicit_name() -> None:
    assert compile_goal({"goal": "g", "tools": ["a"], "name": "mine"}).name == "mine"
    assert compile_goal({"goal": "g", "tools": ["a"], "name": None}).name == "goal-g"


@pytest.mark.parametrize(
    ("goal", "name"),
    [
        ("No type errors in src/", "goal-no-type-errors-in-src"),
        ("  --Hello, World!! -- again__x  ", "goal-hello-world-again__x"),
        ("Ünïcödé wörds ok", "goal-ünïcödé-wörds-ok"),
        ("!!!", "goal-"),
        ("a" * 49 + " b", "goal-" + "a" * 49 + "-"),
        ("x" * 80, "goal-" + "x" * 50),
    ],
)
def test_goal_slug_rule(goal: str, name: str) -> None:
    assert compile_goal({"goal": goal, "tools": ["a"]}).name == name


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"tools": ["a"]}, "Goal paradigm requires 'goal' field"),
        ({"goal": "g"}, "Goal paradigm requires 'tools' field with at least one tool"),
        ({"goal": "g", "tools": []}, "Goal paradigm requires 'tools' field with at least one tool"),
        ({"goal": 5, "tools": ["a"]}, "Goal paradigm 'goal' must be a string, got 5"),
        (
            {"goal": "g", "tools": "a b"},
            "Goal paradigm 'tools' must be a list of strings, got 'a b'",
        ),
        (
            {"goal": "g", "tools": ["a", {"echo x": "y"}]},
            "Goal paradigm 'tools' entry 1 must be a string, got a mapping (quote text that "
            "contains ': ', or YAML reads it as a mapping)",
        ),
        ({"goal": "g", "tools": ["a"], "name": 3}, "Goal paradigm 'name' must be a string, got 3"),
    ],
)
def test_goal_errors(spec: dict[str, Any], message: str) -> None:
    assert compile_error(compile_goal, spec) == message


# ---------------------------------------------------------------------------
# convergence
# ---------------------------------------------------------------------------


def test_convergence_generates_measure_apply_done() -> None:
    spec = {"name": "c", "check": "wc -l < f", "toward": 0, "using": "shrink f"}

    assert compile_convergence(spec).to_dict() == {
        "name": "c",
        "initial": "measure",
        "states": {
            "measure": {
                "action": "${context.metric_cmd}",
                "evaluate": {
                    "type": "convergence",
                    "target": "${context.target}",
                    "tolerance": "${context.tolerance}",
                    "previous": "${prev.output}",
                },
                "route": {"target": "done", "progress": "apply", "stall": "done"},
                "capture": "current_value",
            },
            "apply": {"action": "shrink f", "next": "measure"},
            "done": {"terminal": True},
        },
        "paradigm": "convergence",
        "context": {"metric_cmd": "wc -l < f", "target": 0, "tolerance": 0},
    }


def test_convergence_direction_tolerance_and_extra_context() -> None:
    spec = {
        "name": "c",
        "check": "m",
        "toward": "${env.GOAL}",
        "using": "u",
        "tolerance": 0.5,
        "direction": "maximize",
        "context": {"extra": 1},
    }

    fsm = compile_convergence(spec)

    evaluate = fsm.states["measure"].evaluate
    assert evaluate is not None
    assert evaluate.direction == "maximize"
    assert fsm.context == {"metric_cmd": "m", "target": "${env.GOAL}", "tolerance": 0.5, "extra": 1}
    assert spec["context"] == {"extra": 1}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "Convergence paradigm requires: name, check, toward, using"),
        ({"name": "c", "toward": 1}, "Convergence paradigm requires: check, using"),
        (
            {"name": "c", "check": ["m"], "toward": 1, "using": "u"},
            "Convergence paradigm 'check' must be a string, got a list",
        ),
        (
            {"name": "c", "check": "m", "toward": True, "using": "u"},
            "Convergence paradigm 'toward' must be a number or a string, got true",
        ),
        (
            {"name": "c", "check": "m", "toward": 1, "using": "u", "tolerance": [1]},
            "Convergence paradigm 'tolerance' must be a number >= 0 or a string, got a list",
        ),
        (
            {"name": "c", "check": "m", "toward": 1, "using": "u", "tolerance": -0.5},
            "Convergence paradigm 'tolerance' must be a number >= 0 or a string, got -0.5",
        ),
        (
            {"name": "c", "check": "m", "toward": 1, "using": "u", "tolerance": False},
            "Convergence paradigm 'tolerance' must be a number >= 0 or a string, got false",
        ),
        (
            {"name": "c", "check": "m", "toward": 1, "using": "u", "direction": "up"},
            "Convergence paradigm 'direction' must be 'minimize' or 'maximize', got 'up'",
        ),
        (
            {"name": "c", "check": "m", "toward": 1, "using": "u", "context": {"target": 2}},
            "Convergence paradigm 'context' cannot set 'target' (metric_cmd, target and "
            "tolerance come from check, toward and tolerance)",
        ),
    ],
)
def test_convergence_errors(spec: dict[str, Any], message: str) -> None:
    assert compile_error(compile_convergence, spec) == message


# ---------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------

CONSTRAINTS = [
    {"name": "lint", "check": "ruff check", "fix": "ruff check --fix"},
    {"name": "types", "check": "mypy", "fix": "fix-types"},
]


def test_invariants_chain_the_constraints() -> None:
    fsm = compile_invariants({"name": "inv", "constraints": CONSTRAINTS})

    assert fsm.to_dict() == {
        "name": "inv",
        "initial": "check_lint",
        "states": {
            "check_lint": {
                "action": "ruff check",
                "on_success": "check_types",
                "on_failure": "fix_lint",
            },
            "fix_lint": {"action": "ruff check --fix", "next": "check_lint"},
            "check_types": {"action": "mypy", "on_success": "all_valid", "on_failure": "fix_types"},
            "fix_types": {"action": "fix-types", "next": "check_types"},
            "all_valid": {"terminal": True},
        },
        "paradigm": "invariants",
    }


def test_invariants_maintain_restarts_at_the_first_check() -> None:
    fsm = compile_invariants({"name": "inv", "constraints": CONSTRAINTS, "maintain": True})

    assert fsm.maintain is True
    assert fsm.states["all_valid"].on_maintain == "check_lint"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"constraints": CONSTRAINTS}, "Invariants paradigm requires 'name' field"),
        (
            {"name": "i"},
            "Invariants paradigm requires 'constraints' field with at least one constraint",
        ),
        (
            {"name": "i", "constraints": []},
            "Invariants paradigm requires 'constraints' field with at least one constraint",
        ),
        (
            {"name": 1, "constraints": CONSTRAINTS},
            "Invariants paradigm 'name' must be a string, got 1",
        ),
        (
            {"name": "i", "constraints": {"lint": {}}},
            "Invariants paradigm 'constraints' must be a list, got a mapping",
        ),
        (
            {"name": "i", "constraints": [CONSTRAINTS[0], {"check": "c", "fix": "f"}]},
            "Constraint 1 requires 'name' field",
        ),
        (
            {"name": "i", "constraints": [{"name": "n", "fix": "f"}]},
            "Constraint 'n' requires 'check' field",
        ),
        (
            {"name": "i", "constraints": [{"name": "n", "check": "c"}]},
            "Constraint 'n' requires 'fix' field",
        ),
        (
            {"name": "i", "constraints": ["ruff check"]},
            "Constraint 0 must be a mapping with name, check and fix, got 'ruff check'",
        ),
        (
            {"name": "i", "constraints": [{"name": 5, "check": "c", "fix": "f"}]},
            "Constraint 0 'name' must be a string, got 5",
        ),
        (
            {"name": "i", "constraints": [{"name": "n", "check": "c", "fix": None}]},
            "Constraint 'n' 'fix' must be a string, got null",
        ),
        (
            {"name": "i", "constraints": [CONSTRAINTS[0], CONSTRAINTS[0]]},
            "Constraint name 'lint' is used more than once",
        ),
        (
            {"name": "i", "constraints": CONSTRAINTS, "maintain": "yes"},
            "Invariants paradigm 'maintain' must be true or false, got 'yes'",
        ),
    ],
)
def test_invariants_errors(spec: dict[str, Any], message: str) -> None:
    assert compile_error(compile_invariants, spec) == message


# ---------------------------------------------------------------------------
# imperative
# ---------------------------------------------------------------------------


def test_imperative_runs_steps_then_the_check() -> None:
    spec = {"name": "imp", "steps": ["one", "two"], "until": {"check": "test -f done"}}

    assert compile_imperative(spec).to_dict() == {
        "name": "imp",
        "initial": "step_0",
        "states": {
            "step_0": {"action": "one", "next": "step_1"},
            "step_1": {"action": "two", "next": "check_done"},
            "check_done": {"action": "test -f done", "on_success": "done", "on_failure": "step_0"},
            "done": {"terminal": True},
        },
        "paradigm": "imperative",
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"steps": ["a"], "until": {"check": "c"}}, "Imperative paradigm requires 'name' field"),
        (
            {"name": "m", "until": {"check": "c"}},
            "Imperative paradigm requires 'steps' field with at least one step",
        ),
        ({"name": "m", "steps": ["a"]}, "Imperative paradigm requires 'until' field"),
        (
            {"name": "m", "steps": ["a"], "until": {}},
            "Imperative paradigm 'until' requires 'check' field",
        ),
        (
            {"name": "m", "steps": ["a"], "until": "c"},
            "Imperative paradigm 'until' must be a mapping, got 'c'",
        ),
        (
            {"name": "m", "steps": "a", "until": {"check": "c"}},
            "Imperative paradigm 'steps' must be a list of strings, got 'a'",
        ),
        (
            {"name": "m", "steps": [1], "until": {"check": "c"}},
            "Imperative paradigm 'steps' entry 0 must be a string, got 1",
        ),
        (
            {"name": "m", "steps": ["a"], "until": {"check": 2}},
            "Imperative paradigm 'until.check' must be a string, got 2",
        ),
        (
            {"name": None, "steps": ["a"], "until": {"check": "c"}},
            "Imperative paradigm 'name' must be a string, got null",
        ),
    ],
)
def test_imperative_errors(spec: dict[str, Any], message: str) -> None:
    assert compile_error(compile_imperative, spec) == message


# ---------------------------------------------------------------------------
# Keys carried from the spec into the loop
# ---------------------------------------------------------------------------

SPECS: dict[str, dict[str, Any]] = {
    "goal": {"paradigm": "goal", "goal": "g", "tools": ["a"]},
    "convergence": {
        "paradigm": "convergence",
        "name": "c",
        "check": "m",
        "toward": 1,
        "using": "u",
    },
    "invariants": {"paradigm": "invariants", "name": "i", "constraints": CONSTRAINTS},
    "imperative": {"paradigm": "imperative", "name": "m", "steps": ["a"], "until": {"check": "c"}},
}


@pytest.mark.parametrize("paradigm", list(SPECS))
def test_every_compiler_carries_the_loop_level_keys(paradigm: str) -> None:
    extra = {
        "max_iterations": 9,
        "backoff": 0.5,
        "timeout": 60,
        "context": {"k": "v"},
        "scope": ["src/"],
        "llm": {"enabled": False, "model": "m"},
        "on_handoff": "spawn",
        "stall_threshold": 0,
        "checkpoint": "git",
        "progress_paths": ["build/*.log"],
    }

    fsm = compile_paradigm({**SPECS[paradigm], **extra})

    assert fsm.paradigm == paradigm
    assert (fsm.max_iterations, fsm.backoff, fsm.timeout) == (9, 0.5, 60)
    assert fsm.context["k"] == "v"
    assert fsm.scope == ["src/"]
    assert fsm.llm == LLMConfig(enabled=False, model="m")
    assert fsm.on_handoff == "spawn"
    assert (fsm.stall_threshold, fsm.checkpoint) == (0, "git")
    assert fsm.progress_paths == ["build/*.log"]


@pytest.mark.parametrize("paradigm", list(SPECS))
def test_defaults_and_nulls_for_carried_keys(paradigm: str) -> None:
    nulls = dict.fromkeys(["max_iterations", "backoff", "timeout", "context", "scope", "llm"])

    plain = compile_paradigm(SPECS[paradigm])
    guard_nulls = {"stall_threshold": None, "checkpoint": None, "progress_paths": None}
    with_nulls = compile_paradigm({**SPECS[paradigm], **nulls, "on_handoff": None, **guard_nulls})

    assert plain == with_nulls
    assert (plain.max_iterations, plain.backoff, plain.timeout) == (50, None, None)
    assert (plain.scope, plain.llm, plain.on_handoff, plain.maintain) == (
        [],
        LLMConfig(),
        "pause",
        False,
    )
    # Faithful by default: no stall guard unless asked for (the reference has none).
    assert (plain.stall_threshold, plain.checkpoint, plain.progress_paths) == (None, None, [])
    assert plain.effective_stall_threshold() == 0


@pytest.mark.parametrize("paradigm", list(SPECS))
def test_compiled_loops_are_valid_and_survive_yaml(paradigm: str) -> None:
    fsm = compile_paradigm(SPECS[paradigm])
    data = parse_yaml(dump_yaml(fsm.to_dict()))

    assert validate_fsm(fsm) == []
    assert check_loop_mapping(data) == []
    assert FSMLoop.from_dict(data) == fsm


def test_compiling_does_not_share_the_specs_mutable_values() -> None:
    spec = {**SPECS["goal"], "context": {"k": "v"}, "scope": ["s"]}

    fsm = compile_paradigm(spec)
    fsm.context["new"] = 1
    fsm.scope.append("t")

    assert spec["context"] == {"k": "v"}
    assert spec["scope"] == ["s"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"context": ["k"]}, "Goal paradigm 'context' must be a mapping, got a list"),
        ({"scope": "src"}, "Goal paradigm 'scope' must be a list of strings, got 'src'"),
        ({"scope": [1]}, "Goal paradigm 'scope' entry 0 must be a string, got 1"),
        ({"llm": "fast"}, "Goal paradigm 'llm' must be a mapping, got 'fast'"),
    ],
)
def test_carried_keys_that_cannot_be_built(extra: dict[str, Any], message: str) -> None:
    assert compile_error(compile_paradigm, {**SPECS["goal"], **extra}) == message


# ---------------------------------------------------------------------------
# compile_paradigm dispatch and the fsm pass-through
# ---------------------------------------------------------------------------

FSM_SPEC: dict[str, Any] = {
    "name": "f",
    "initial": "a",
    "states": {"a": {"action": "x", "next": "done"}, "done": {"terminal": True}},
}


@pytest.mark.parametrize("paradigm", [None, "fsm", "absent"])
def test_pass_through(paradigm: str | None) -> None:
    spec = dict(FSM_SPEC)
    if paradigm != "absent":
        spec["paradigm"] = paradigm

    fsm = compile_paradigm(spec)

    assert fsm == FSMLoop.from_dict(spec)
    assert fsm.paradigm == paradigm if paradigm != "absent" else fsm.paradigm is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"states": {}}, "FSM paradigm requires: name, initial"),
        ({"name": "f", "paradigm": "fsm"}, "FSM paradigm requires: initial"),
        ({"name": "f", "initial": "a"}, "Invalid FSM loop: missing required key 'states'"),
        (
            {"name": "f", "initial": "a", "states": {"a": None, "b": {"evaluate": {}}}},
            "Invalid FSM loop: states.a: must be a mapping, got null; "
            "states.b.evaluate: missing required key 'type'",
        ),
        (
            {**FSM_SPEC, "llm": "x"},
            "Invalid FSM loop: llm: must be a mapping, got 'x'",
        ),
    ],
)
def test_pass_through_raises_value_error_for_malformed_loops(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        compile_paradigm(spec)

    assert type(caught.value) is ValueError
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("paradigm", "shown"),
    [("loopy", "loopy"), ("GOAL", "GOAL"), (["goal"], "['goal']"), (3, "3")],
)
def test_unknown_paradigm(paradigm: Any, shown: str) -> None:
    message = compile_error(compile_paradigm, {"paradigm": paradigm})

    assert message == f"Unknown paradigm: '{shown}'. Must be one of: {PARADIGM_NAMES}"


@pytest.mark.parametrize("paradigm", list(SPECS))
def test_dispatch_reaches_each_compiler(paradigm: str) -> None:
    compilers = {
        "goal": compile_goal,
        "convergence": compile_convergence,
        "invariants": compile_invariants,
        "imperative": compile_imperative,
    }

    assert compile_paradigm(SPECS[paradigm]) == compilers[paradigm](SPECS[paradigm])


# ---------------------------------------------------------------------------
# Any spec at all: compile_paradigm fails only with ValueError
# ---------------------------------------------------------------------------

SPEC_KEYS = st.sampled_from(
    [
        "paradigm", "name", "goal", "tools", "check", "toward", "using", "tolerance",
        "direction", "constraints", "maintain", "steps", "until", "initial", "states",
        "max_iterations", "backoff", "timeout", "context", "scope", "llm", "on_handoff",
    ]
)  # fmt: skip
SPEC_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.floats(allow_nan=True)
    | st.sampled_from(["", "x", "check", "fix", "name", "minimize", "goal", "fsm", "a b"])
)
SPEC_VALUES = st.recursive(
    SPEC_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SPEC_KEYS, inner, max_size=3),
    max_leaves=10,
)


@st.composite
def near_valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec = dict(draw(st.sampled_from([*SPECS.values(), FSM_SPEC])))
    overrides = draw(st.dictionaries(SPEC_KEYS, SPEC_VALUES, max_size=3))
    for key in draw(st.lists(st.sampled_from(list(spec)), max_size=2)):
        spec.pop(key, None)
    return {**spec, **overrides}


@settings(max_examples=300)
@given(near_valid_specs() | st.dictionaries(SPEC_KEYS, SPEC_VALUES, max_size=6))
def test_compile_paradigm_fails_only_with_value_error(spec: dict[str, Any]) -> None:
    try:
        fsm = compile_paradigm(spec)
    except ValueError as error:
        assert str(error)
        return
    assert isinstance(fsm, FSMLoop)
    assert all(error.path for error in validate_fsm(fsm))
