"""One loader, two dialects (spec/ll-head-dialect.md §1, §2, §3.1, §4, §8): the dialect
is decided on the raw file, HEAD files are checked against HEAD's key tables and built as
`HeadLoop`, legacy files keep their messages, "accept, warn once" keys warn once."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.dialect import loop_dialect
from little_loops.fsm.loading.head_shape import check_head_mapping
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig
from little_loops.fsm.schema import FSMLoop

LEGACY = {
    "name": "x",
    "initial": "a",
    "states": {
        "a": {"action": "true", "on_success": "done", "on_failure": "a"},
        "done": {"terminal": True},
    },
}


def head(**changes: Any) -> dict[str, Any]:
    """A valid HEAD loop (on_yes makes it HEAD) with top-level changes."""
    data: dict[str, Any] = {
        "name": "x",
        "description": "d",
        "initial": "a",
        "states": {
            "a": {"action": "true", "on_yes": "done", "on_no": "a"},
            "done": {"terminal": True},
        },
    }
    data.update(changes)
    return data


def with_state(extra: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = head(**changes)
    data["states"]["a"].update(extra)
    return data


def write(tmp_path: Path, data: dict[str, Any], name: str = "loop.yaml") -> Path:
    path = tmp_path / name
    path.write_text(dump_yaml(data), encoding="utf-8")
    return path


def load_errors(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(LoopValidationError) as caught:
        load_loop(write(tmp_path, data))
    return [f"{error.path}: {error.message}" for error in caught.value.errors]


WARNED = "[WARNING] loop.yaml: "
"""How a warning of the test's HEAD file starts (§1.2: it names the file)."""


def warnings_of(
    tmp_path: Path, data: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> list[str]:
    caplog.set_level(logging.WARNING, logger="little_loops.fsm.validation")
    with contextlib.chdir(tmp_path):  # a HEAD file's warnings name it from here (§1.2)
        load_loop(write(tmp_path, data))
    return [record.getMessage() for record in caplog.records]


# --- §1.1 the dialect -------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        head(),
        {**LEGACY, "max_steps": 3},
        {**LEGACY, "from": "base"},
        {**LEGACY, "llm": {"effort": "high"}},
        {"states": {"a": {"action_type": "prompt"}}},
        {"states": {"a": {"route": {"yes": "b"}}}},
        {"states": {"a": {"route": {"cannot_judge": "b"}}}},
        {"states": {"a": {"evaluate": {"type": "classify"}}}},
        {"states": {"a": {"evaluate": {"type": "exit_code", "error_patterns": []}}}},
        {"states": {"a": {"on_partial": "b"}}},
        {"states": {"a": {"loop": "child"}}},
    ],
)
def test_section_1_1_head_markers(data: dict[str, Any]) -> None:
    assert loop_dialect(data) == "head"


@pytest.mark.parametrize(
    "data",
    [
        LEGACY,
        {**LEGACY, "max_iteration": 3},  # a typo stays legacy
        {"states": {"a": {"on_sucess": "b"}}},
        {"states": {"a": {"colour": "b"}}},
        {"states": {"a": {"evaluate": {"type": "exit_cod"}}}},
        {"states": {"a": {"action_type": "slash_command", "route": {"ok": "b"}}}},
        {"paradigm": "goal", "goal": "g", "tools": ["true"]},
    ],
)
def test_section_1_1_when_in_doubt_legacy(data: dict[str, Any]) -> None:
    assert loop_dialect(data) == "legacy"


def test_section_1_1_head_file_builds_a_head_loop_and_legacy_a_plain_one(tmp_path: Path) -> None:
    fsm = load_loop(write(tmp_path, head()))
    legacy = load_loop(write(tmp_path, LEGACY, "legacy.yaml"))

    assert isinstance(fsm, HeadLoop) and fsm.dialect == "head"
    assert isinstance(fsm.states["a"], HeadStateConfig)
    assert fsm.states["a"].on_success == "done"
    assert type(legacy) is FSMLoop and legacy.dialect == "legacy"


def test_section_1_legacy_typo_keeps_the_legacy_message(tmp_path: Path) -> None:
    data = {**LEGACY, "states": {**LEGACY["states"], "a": {"action": "true", "on_sucess": "done"}}}

    assert load_errors(tmp_path, data) == [
        "states.a.on_sucess: unknown key 'on_sucess' (allowed: action, evaluate, route, "
        "on_success, on_failure, on_error, next, terminal, capture, timeout, on_maintain, "
        "action_type, max_visits, on_max_visits)"
    ]


# --- §2 HEAD shape ----------------------------------------------------------------


def test_section_2_a_head_loop_using_many_keys_is_valid() -> None:
    data = head(
        category="ci",
        labels=["a"],
        visibility="internal",
        parameters={"n": {"type": "integer", "default": 2}, "k": {"type": "enum", "values": [1]}},
        input_key="version",
        required_inputs=["version"],
        max_steps=20,
        max_iterations=3,
        on_max_steps="done",
        max_edge_revisits=5,
        default_timeout=30,
        default_idle_timeout=0,
        singleton=True,
        session_mode="continue",
        circuit={"repeated_failure": {"window": 2, "on_repeated_failure": "abort"}},
        commands=[{"cmd": "ll-loop run x", "comment": "run it"}],
        config={"automation": {"max_continuations": 4}},
        llm={"model": "sonnet", "effort": "high"},
    )
    data["states"]["a"].update(
        action_type="prompt",
        max_retries=2,
        on_retry_exhausted="done",
        retryable_exit_codes=[75],
        on_error="a",
        throttle={"normal_max": 1, "warn_max": 2, "hard_max": 3},
        rate_limit_long_wait_ladder=[60],
        append_to_messages="${captured.a.output}",
        evaluate={"type": "llm_structured", "min_confidence": 0.7},
        model="opus",
        on_cannot_judge="done",
    )

    assert check_head_mapping(data) == []


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"max_retries": 2}, "states.a.max_retries: max_retries needs on_retry_exhausted"),
        (
            {"on_retry_exhausted": "done"},
            "states.a.on_retry_exhausted: on_retry_exhausted needs max_retries",
        ),
        (
            {"retryable_exit_codes": [75]},
            "states.a.retryable_exit_codes: retryable_exit_codes needs on_error",
        ),
        (
            {"retryable_exit_codes": [0], "on_error": "a"},
            "states.a.retryable_exit_codes.0: must be an integer >= 1, got 0",
        ),
        (
            {"max_rate_limit_retries": 2},
            "states.a.max_rate_limit_retries: max_rate_limit_retries needs on_rate_limit_exhausted",
        ),
        ({"with": {"k": 1}}, "states.a.with: with needs loop or fragment"),
        (
            {"action": None, "loop": "c", "with": {"k": 1}, "context_passthrough": True},
            "states.a.with: with and context_passthrough cannot be used together",
        ),
        (
            {"loop": "c"},
            "states.a.loop: a loop: state runs a sub-loop, it cannot also have an action",
        ),
        ({"worktree": "b"}, "states.a.worktree: worktree needs loop"),
        ({"params": {"q": 1}}, "states.a.params: params is only for action_type: mcp_tool"),
        (
            {"throttle": {"normal_max": 3, "warn_max": 3}},
            "states.a.throttle: must be strictly increasing: normal_max < warn_max < hard_max "
            "(got 3, 3, 12)",
        ),
        (
            {"cost_ceiling": {"cost_ceiling_per_state": 1, "cost_warn_at": 2}},
            "states.a.cost_ceiling: cost_warn_at (2) must not be above cost_ceiling_per_state (1)",
        ),
        (
            {"append_to_messages": "plain"},
            "states.a.append_to_messages: must contain a ${...} template, got 'plain'",
        ),
        (
            {"rate_limit_long_wait_ladder": []},
            "states.a.rate_limit_long_wait_ladder: must be a non-empty list of integers >= 1",
        ),
        (
            {"session_mode": "sticky"},
            "states.a.session_mode: unknown session_mode 'sticky' (allowed: fresh, continue)",
        ),
        (
            {"evaluate": {"type": "llm_structured", "min_confidence": 2}},
            "states.a.evaluate.min_confidence: must be a number from 0 to 1, got 2",
        ),
        (
            {"evaluate": {"type": "diff_stall", "max_stall": 0}},
            "states.a.evaluate.max_stall: must be an integer >= 1, got 0",
        ),
        (
            {"evaluate": {"type": "convergence", "target": 1, "tolerance": -1}},
            "states.a.evaluate.tolerance: must be a number >= 0 or a string, got -1",
        ),
        (
            {"evaluate": {"type": "convergence", "target": 1, "direction": "up"}},
            "states.a.evaluate.direction: unknown direction 'up' (allowed: minimize, maximize)",
        ),
        (
            {"evaluate": {"type": "comparator"}},
            "states.a.evaluate: Evaluator type 'comparator' requires 'baseline_path' field",
        ),
        (
            {"evaluate": {"type": "output_numeric", "target": 3}},
            "states.a.evaluate: Evaluator type 'output_numeric' requires 'operator' field",
        ),
        (
            {"route": {"success": "done", "yes": "done"}},
            "states.a.route.yes: 'success' and 'yes' name the same verdict; keep one",
        ),
        (
            {"route": {"failure": "a", "no": "a"}},
            "states.a.route.no: 'failure' and 'no' name the same verdict; keep one",
        ),
        (
            {"parameters": {"k": {"type": "string"}}},
            "states.a.parameters: parameters of a state come from its fragment "
            "(declare them in fragments:)",
        ),
    ],
)
def test_section_2_2_state_errors(tmp_path: Path, extra: dict[str, Any], expected: str) -> None:
    assert load_errors(tmp_path, with_state(extra)) == [expected]


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"parameters": {"p": {"type": "enum"}}},
            "parameters.p.type: an enum parameter needs values",
        ),
        (
            {"parameters": {"p": {"type": "string", "required": True, "default": "x"}}},
            "parameters.p.default: a required parameter cannot have a default",
        ),
        (
            {"parameters": {"p": {"type": "text"}}},
            "parameters.p.type: unknown parameter type 'text' (allowed: string, integer, number, "
            "boolean, enum, path)",
        ),
        ({"max_steps": 0}, "max_steps: must be an integer >= 1, got 0"),
        (
            {"on_max_steps": "nowhere"},
            "on_max_steps: References unknown state 'nowhere' (states are: a, done)",
        ),
        (
            {"on_max_iterations": "nowhere"},
            "on_max_iterations: References unknown state 'nowhere' (states are: a, done)",
        ),
        (
            {"circuit": {"repeated_failure": {"on_repeated_failure": "gone"}}},
            "circuit.repeated_failure.on_repeated_failure: References unknown state 'gone' "
            "(states are: a, done)",
        ),
        ({"singleton": "yes"}, "singleton: must be true or false, got 'yes'"),
        (
            {"tamper_guard": "maybe"},
            "tamper_guard: unknown tamper_guard 'maybe' (allowed: revert, fail, allow)",
        ),
        (
            {"config": {"automation": {"max_continuations": 0}}},
            "config.automation.max_continuations: must be an integer >= 1, got 0",
        ),
    ],
)
def test_section_2_1_loop_errors(tmp_path: Path, changes: dict[str, Any], expected: str) -> None:
    assert load_errors(tmp_path, head(**changes)) == [expected]


def test_section_2_unknown_head_key_lists_the_head_keys(tmp_path: Path) -> None:
    [error] = load_errors(tmp_path, with_state({"colour": "red"}))

    assert error.startswith("states.a.colour: unknown key 'colour' (allowed: action, evaluate, ")
    assert "on_yes, on_no, failure, idle_timeout, loop, with," in error


def test_section_2_2_any_on_verdict_is_a_route(tmp_path: Path) -> None:
    fsm = load_loop(write(tmp_path, with_state({"on_weird_verdict": "done", "on_partial": "a"})))

    state = fsm.states["a"]
    assert isinstance(state, HeadStateConfig)
    assert state.on_verdicts == {"weird_verdict": "done", "partial": "a"}
    assert load_errors(tmp_path, with_state({"on_weird_verdict": "nowhere"})) == [
        "states.a: References unknown state 'nowhere' (states are: a, done)"
    ]


def test_section_9a_unquoted_yes_no_route_keys(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(
        "name: x\ndescription: d\ninitial: a\nstates:\n  a:\n    action: 'true'\n"
        "    route:\n      yes: done\n      no: a\n  done:\n    terminal: true\n",
        encoding="utf-8",
    )
    fsm = load_loop(path)

    route = fsm.states["a"].route
    assert fsm.dialect == "head" and route is not None
    assert route.routes == {"yes": "done", "no": "a"}


# --- §3, §4 warnings ----------------------------------------------------------------


def test_section_3_1_on_yes_and_on_success_differ(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = with_state({"on_success": "a"})

    assert warnings_of(tmp_path, data, caplog) == [
        WARNED + "states.a.on_success: on_yes ('done') and on_success ('a') name different "
        "targets; on_yes wins"
    ]


CHILD = "name: child\ninitial: s\nstates:\n  s: {terminal: true}\n"


def test_section_3_3_and_4_inert_keys_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "child.yaml").write_text(CHILD, encoding="utf-8")
    data = head()
    data["states"]["a"] = {"action": "true", "next": "b", "on_yes": "done", "on_partial": "b"}
    data["states"]["b"] = {"loop": "child", "on_yes": "done", "route": {"yes": "done"}}

    assert warnings_of(tmp_path, data, caplog) == [
        WARNED + "states.a.on_yes: on_yes has no effect: a next: state is not evaluated (§3.3)",
        WARNED + "states.a.on_partial: on_partial has no effect: a next: state is not "
        "evaluated (§3.3)",
        WARNED + "states.b.route: route has no effect: a loop: state routes on its sub-loop's "
        "outcome (§4)",
    ]


def test_section_4_a_loop_state_needs_no_other_transition(tmp_path: Path) -> None:
    (tmp_path / "child.yaml").write_text(CHILD, encoding="utf-8")
    data = head()
    data["states"]["a"] = {"loop": "child"}

    fsm = load_loop(write(tmp_path, data))
    assert fsm.states["a"].loop == "child"  # type: ignore[attr-defined]


def test_section_2_2_model_without_a_model_to_ask(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert warnings_of(tmp_path, with_state({"model": "opus"}), caplog) == [
        WARNED + "states.a.model: model has no effect: the state neither runs a prompt nor "
        "asks an LLM judge"
    ]


def test_section_2_1_unknown_visibility_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert warnings_of(tmp_path, head(visibility="secret"), caplog) == [
        WARNED + "visibility: unknown visibility 'secret' (allowed: public, internal, example); "
        "treated as public"
    ]


# --- §1.2 accept, warn once --------------------------------------------------------


def test_section_1_2_one_warning_per_key_name_with_the_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = head(tamper_guard="revert", shared_state_ok=True, targets=[{"file": "a"}])
    data["states"]["a"].update(tamper_guard="fail", output="x", with_={"k": 1})
    data["states"]["done"]["tamper_guard"] = "allow"
    data["states"]["b"] = {
        "action": "c",
        "action_type": "mcp_tool",
        "params": {"q": 1},
        "next": "done",
    }

    assert warnings_of(tmp_path, data, caplog) == [
        WARNED + "tamper_guard: little-loops feature not supported here, ignored (3 uses)",
        WARNED + "shared_state_ok: silences a little-loops lint rule we do not have, ignored "
        "(1 use)",
        WARNED + "targets: read by little-loops tools we do not ship, ignored (1 use)",
        WARNED + "states.a.output: ignored, as little-loops ignores it: a sub-loop's results "
        "come back through captures (${captured.<state>.<capture>.output}) (1 use)",
        WARNED + "states.a.with_: ignored, as little-loops ignores it: sub-loop bindings are "
        "written `with:` (1 use)",
        WARNED + "states.b.action_type: needs little-loops' mcp-call helper: run as "
        "`mcp-call <action> <json params>`; without it on PATH the verdict is not_found (1 use)",
        WARNED + "states.b.params: needs little-loops' mcp-call helper: run as "
        "`mcp-call <action> <json params>`; without it on PATH the verdict is not_found (1 use)",
        WARNED + "states.b: State is not reachable from initial state",
    ]


def test_section_1_2_warn_once_keys_are_type_checked(tmp_path: Path) -> None:
    assert load_errors(tmp_path, with_state({"request_path": "fax"})) == [
        "states.a.request_path: unknown request_path 'fax' (allowed: cli, sdk, batch)"
    ]


# --- validate prints the dialect ---------------------------------------------------


def test_section_1_1_validate_prints_the_head_dialect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = head(max_steps=7, name="gate")
    del data["description"]
    write_loop(tmp_path, "gate", dump_yaml(data))

    assert cli_in_process(capsys, "validate", "gate") == (
        0,
        "[T] gate is valid\n  States: a, done\n  Initial: a\n  Max steps: 7\n  dialect: head\n",
        "[WARNING] .loops/gate.yaml: description: a loop without a description "
        "(list and show print it)\n",
    )


# --- §2.5 interpolation in HEAD files ----------------------------------------------


def test_section_2_5_head_namespaces_and_run_time_context(tmp_path: Path) -> None:
    data = with_state(
        {"action": "echo ${param.x} ${messages} ${context.input:default=a} ${context.k?}"}
    )

    load_loop(write(tmp_path, data))
    assert load_errors(tmp_path, with_state({"action": "echo ${nope.x}"})) == [
        "states.a.action: ${nope.x}: unknown namespace 'nope' (known: context, captured, prev, "
        "result, state, loop, env, handoff, param, messages)"
    ]


def test_an_unknown_state_key_names_on_verdict_not_the_files_own_routes() -> None:
    """Any `on_<verdict>` is a route in a HEAD state, so the allowed keys end with
    `on_<verdict>`; a typo'd route the file wrote (`on_yess`) is not listed as allowed."""
    state = {"action": "true", "on_yess": "done", "max_retrys": 2}
    data = {"name": "x", "description": "d", "initial": "s", "states": {"s": state}}

    (error,) = check_head_mapping(data)

    assert error.path == "states.s.max_retrys"
    assert error.message.endswith(", description, output, with_, on_<verdict>)")
    assert "on_yess" not in error.message
