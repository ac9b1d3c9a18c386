"""HEAD-dialect interpolation, `${param.*}`, `${messages}`, captures and injected context
(spec/ll-head-dialect.md §2.5 and §5, `${param.*}` bullet). Legacy loops keep theirs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import run_cli, write_loop

from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.executor import FSMExecutor
from little_loops.fsm.interpolation import (
    InterpolationContext,
    InterpolationError,
    interpolate,
    resolve_template,
)
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop


def head_ctx(**extra: Any) -> InterpolationContext:
    return InterpolationContext(
        context={"name": "demo", "empty": None, "path": "a b's", "n": 5},
        captured={"build": {"output": "ok"}},
        head=True,
        **extra,
    )


def failure(template: str, ctx: InterpolationContext) -> str:
    with pytest.raises(InterpolationError) as caught:
        interpolate(template, ctx)
    return str(caught.value)


# --- modifiers (§2.5 Interpolation) ---------------------------------------------------------


def test_section_2_5_default_optional_and_shell_modifiers() -> None:
    ctx = head_ctx()
    assert interpolate("${context.missing:default=fallback text}", ctx) == "fallback text"
    assert interpolate("${context.name:default=other}", ctx) == "demo"
    assert interpolate("[${context.missing?}]", ctx) == "[]"
    assert interpolate("[${captured.nope.output?}]", ctx) == "[]"
    assert interpolate("${context.name?}", ctx) == "demo"
    assert interpolate("echo ${context.path:shell}", ctx) == "echo 'a b'\"'\"'s'"
    assert interpolate("[${context.empty}]", ctx) == "[]"  # null renders as empty
    assert failure("${context.missing}", ctx) == "Path 'missing' not found in context"


def test_section_2_5_modifiers_are_exclusive() -> None:
    ctx = head_ctx()
    combined = "(:default=, ? and :shell cannot be combined)"
    for inside in ("context.x?:shell", "context.x:default=a:shell", "context.x:shell:default=a"):
        assert failure(f"${{{inside}}}", ctx) == f"Invalid variable: ${{{inside}}} {combined}"
    assert failure("${context.x:upper}", ctx) == (
        "Invalid variable: ${context.x:upper} (unknown modifier ':upper'; "
        "expected :default=TEXT, :shell or ?)"
    )


def test_section_2_5_a_whole_variable_keeps_its_value_unless_modified() -> None:
    ctx = head_ctx()
    assert resolve_template("${context.n}", ctx) == 5
    assert resolve_template("${context.n:shell}", ctx) == "5"
    assert resolve_template("${context.gone:default=7}", ctx) == "7"


def test_section_2_5_legacy_context_has_no_modifiers() -> None:
    legacy = InterpolationContext(context={"name": "demo"})
    assert failure("${context.name?}", legacy) == "Path 'name?' not found in context"
    assert failure("${context.x:default=a}", legacy) == "Path 'x:default=a' not found in context"
    assert failure("${param.key}", legacy) == "Unknown namespace: param"
    assert failure("${messages}", legacy) == (
        "Invalid variable: ${messages} (expected namespace.path)"
    )


# --- messages and param (§2.5, §5) ----------------------------------------------------------


def test_section_2_5_messages_namespace() -> None:
    ctx = head_ctx(messages=["one", "two", "three"])
    assert interpolate("${messages}", ctx) == "one\ntwo\nthree"
    assert interpolate("${messages.last(2)}", ctx) == "two\nthree"
    assert interpolate("${messages.last(9)}", ctx) == "one\ntwo\nthree"
    assert interpolate("[${messages.last(0)}]", ctx) == "[]"
    assert interpolate("[${messages.summary}]", ctx) == "[]"
    assert interpolate("[${messages}]", head_ctx()) == "[]"
    assert failure("${messages.first}", ctx) == "Unknown messages property: first"


def test_section_5_param_outside_a_fragment_state() -> None:
    assert failure("${param.key}", head_ctx()) == (
        "No fragment parameters: ${param.*} is only available in a state built from a fragment"
    )
    assert interpolate("${param.key}", head_ctx(param={"key": "lint"})) == "lint"
    assert failure("${param.other}", head_ctx(param={})) == "Path 'other' not found in param"


# --- a HEAD run ----------------------------------------------------------------------------


def head_loop(states: dict[str, Any], **top: Any) -> HeadLoop:
    return HeadLoop.from_dict({"name": "h", "initial": "a", "states": states, **top})


def fragment_state(action: str, bindings: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return {
        "fragment": "gate",
        "with": bindings,
        "parameters": {
            "key": {"type": "string", "required": True},
            "limit": {"type": "integer", "default": 3},
            "note": {"type": "string"},
        },
        "action": action,
        "capture": "out",
        "next": "done",
        **extra,
    }


def test_section_5_param_bindings_interpolated_and_defaults_filled() -> None:
    states = {
        "a": {"action": "echo first", "capture": "first", "next": "b"},
        "b": fragment_state(
            "echo ${param.key}-${param.limit}-[${param.note?}]",
            {"key": "${context.prefix}.${captured.first.output}"},
        ),
        "done": {"terminal": True},
    }
    result = FSMExecutor(head_loop(states, context={"prefix": "p"})).run()
    assert result.terminated_by == "terminal"
    assert result.captured["out"]["output"] == "p.first-3-[]"


def test_section_5_required_parameter_unbound_ends_the_run_error() -> None:
    events: list[dict[str, Any]] = []
    states = {"a": fragment_state("echo ${param.key}", {"limit": 2}), "done": {"terminal": True}}
    result = FSMExecutor(head_loop(states), event_callback=events.append).run()
    message = "Fragment 'gate' requires parameter 'key' but it is not bound in 'with'"
    assert (result.terminated_by, result.error) == ("error", message)
    # The state is entered, its action never starts.
    assert [e["event"] for e in events] == ["loop_start", "state_enter", "loop_complete"]


def test_section_2_5_messages_reach_actions_from_the_cursor() -> None:
    executor = FSMExecutor(
        head_loop(
            {
                "a": {"action": "echo '${messages.last(1)}'", "capture": "m", "next": "done"},
                "done": {"terminal": True},
            },
        )
    )
    cursor = executor.snapshot()
    cursor.head = HeadMemory(messages=["old", "new"])
    executor.restore(cursor)
    assert executor.run().captured["m"]["output"] == "new"


def test_section_2_5_head_capture_fields_and_prev_timeout_kind() -> None:
    states = {
        "a": {
            "action": "printf 'out\\n\\n'; echo oops >&2; exit 1",
            "capture": "first",
            "on_yes": "done",
            "on_no": "b",
        },
        "b": {
            "action": "echo '${prev.timeout_kind?}|${captured.first.verdict}'",
            "capture": "second",
            "next": "c",
        },
        "c": {"action": "sleep 5", "timeout": 1, "capture": "slow", "next": "done"},
        "done": {"terminal": True},
    }
    result = FSMExecutor(head_loop(states)).run()
    first = dict(result.captured["first"])
    assert first.pop("duration_ms") >= 0
    assert first == {
        "output": "out",
        "stderr": "oops\n",
        "exit_code": 1,
        "failure_type": "exit_code",
        "timeout_kind": None,
        "verdict": "no",  # HEAD names the legacy `failure` `no` (§3.1)
    }
    second = result.captured["second"]
    assert (second["output"], second["failure_type"]) == ("|no", "")
    assert "verdict" not in second  # a `next:` state is not evaluated
    slow = result.captured["slow"]
    assert (slow["timeout_kind"], slow["failure_type"]) == ("wall", "timeout")


def test_section_2_5_legacy_capture_is_unchanged() -> None:
    loop = FSMLoop.from_dict(
        {
            "name": "l",
            "initial": "a",
            "states": {
                "a": {"action": "printf 'x\\n'", "capture": "c", "next": "done"},
                "done": {"terminal": True},
            },
        }
    )
    captured = FSMExecutor(loop).run().captured["c"]
    assert sorted(captured) == ["duration_ms", "exit_code", "output", "stderr"]
    assert captured["output"] == "x\n"


def test_section_2_5_injected_context_under_the_files_own() -> None:
    action = (
        "echo ${context.max_steps} ${context.max_iterations} ${context.readiness_threshold} "
        "${context.outcome_threshold} [${context.design_tokens_context}] ${context.input_hash} "
        "${context.run_dir}"
    )
    states = {"a": {"action": action, "capture": "c", "next": "done"}, "done": {"terminal": True}}
    loop = head_loop(
        states,
        max_steps=7,
        max_iterations=2,
        context={"input": "hello", "outcome_threshold": 1},
        config={"commands": {"confidence_gate": {"readiness_threshold": 90}}},
    )
    executor = FSMExecutor(loop)
    cursor = executor.snapshot()
    cursor.head.run_dir = ".loops/runs/h-1/"
    executor.restore(cursor)
    # sha256("hello") = 2cf24dba5fb0a30e...
    assert executor.run().captured["c"]["output"] == "7 2 90 1 [] 2cf24dba5fb0 .loops/runs/h-1/"


def test_section_2_5_no_injected_keys_for_legacy() -> None:
    loop = FSMLoop.from_dict(
        {
            "name": "l",
            "initial": "a",
            "states": {
                "a": {"action": "echo ${context.max_steps}", "next": "done"},
                "done": {"terminal": True},
            },
        }
    )
    events: list[dict[str, Any]] = []
    FSMExecutor(loop, event_callback=events.append).run()
    evaluated = [e for e in events if e["event"] == "evaluate"]
    assert evaluated[0]["error"] == (
        "Cannot interpolate action: Path 'max_steps' not found in context"
    )


# --- §5's example, loaded from files and run by a real `ll-loop` ------------------------------

CHECKS_LIBRARY = """\
fragments:
  counted_gate:
    description: Shell gate that fails after N attempts recorded in a file.
    parameters:
      key:   {type: string, required: true}
      limit: {type: integer, default: 3}
    action_type: shell
    action: |
      f="${context.run_dir}${param.key}.count"; n=$(( $(cat "$f" 2>/dev/null || echo 0) + 1 ))
      echo "$n" > "$f"; echo "$n"
    evaluate: {type: output_numeric, operator: le, target: "${param.limit}"}
"""

NIGHTLY = """\
name: nightly-lint
description: Lint, auto-fix, give up after three attempts.
initial: lint
import: [lib/checks.yaml]
states:
  lint: {action: "false", on_yes: done, on_no: attempt}
  attempt:
    fragment: counted_gate
    with: {key: lint}
    on_yes: fix
    on_no: gave_up
  fix: {action: "true", next: lint}
  done: {terminal: true}
  gave_up: {terminal: true, failure: true}
"""


def test_section_5_counted_gate_example_runs(tmp_path: Path) -> None:
    (tmp_path / ".loops" / "lib").mkdir(parents=True)
    (tmp_path / ".loops" / "lib" / "checks.yaml").write_text(CHECKS_LIBRARY)
    write_loop(tmp_path, "nightly-lint", NIGHTLY)
    run_cli(tmp_path, "run", "nightly-lint")
    state = json.loads((tmp_path / ".loops/.running/nightly-lint.state.json").read_text())
    assert state["current_state"] == "gave_up"
    run_dir = tmp_path / state["head"]["run_dir"]
    assert (run_dir / "lint.count").read_text() == "4\n"  # 1, 2, 3 pass; 4 > limit


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        ({}, "50 []"),
        ({"max_iterations": 4}, "4 [4]"),
        ({"max_steps": 9, "max_iterations": 2}, "9 [2]"),
    ],
)
def test_section_2_5_injected_caps(top: dict[str, Any], expected: str) -> None:
    action = "echo ${context.max_steps} [${context.max_iterations?}]"
    states = {"a": {"action": action, "capture": "c", "next": "done"}, "done": {"terminal": True}}
    assert FSMExecutor(head_loop(states, **top)).run().captured["c"]["output"] == expected


def test_section_5_binding_that_cannot_interpolate_ends_the_run_error() -> None:
    states = {
        "a": fragment_state("echo ${param.key}", {"key": "${captured.nope.output}"}),
        "done": {"terminal": True},
    }
    result = FSMExecutor(head_loop(states)).run()
    assert (result.terminated_by, result.error) == (
        "error",
        "Fragment 'gate': cannot interpolate its 'with' bindings: "
        "Path 'nope' not found in captured",
    )
