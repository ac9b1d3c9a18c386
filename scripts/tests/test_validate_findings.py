"""Mistakes `ll-loop validate` (and so `run`) finds before the run (issue 11, items 5 and 12).

Each test asserts the whole `file: key.path: message` line the user sees.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.argument_limits import LINUX_MAX_ARG_STRLEN, max_argument_bytes
from little_loops.fsm.loading.pipeline import parse_loop_yaml
from little_loops.fsm.loading.yaml_text import parse_yaml
from little_loops.fsm.validation import load_and_validate


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _problems(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str) -> list[str]:
    """The problem lines `ll-loop validate` prints for `text` (it must be invalid)."""
    write_loop(tmp_path, "bad", text)
    code, out, err = cli_in_process(capsys, "validate", "bad")
    assert (code, out) == (1, "")
    header, *lines = err.splitlines()
    assert header == "[T] bad is invalid:"
    return [line.removeprefix("  ") for line in lines]


def _loop(action: str = "echo hi", *, extra_state: str = "", top: str = "") -> str:
    return (
        f"name: bad\ninitial: check\n{top}states:\n"
        f"  check:\n    action: {action}\n{extra_state}    next: done\n"
        "  done:\n    terminal: true\n"
    )


# ---------------------------------------------------------------------------
# Duplicate keys
# ---------------------------------------------------------------------------

STATE_DEFINED_TWICE = """\
name: bad
initial: check
states:
  check:
    action: echo hi
    next: done
  done:
    terminal: true
  check:
    action: echo again
    next: check
"""


def test_a_state_defined_twice_is_an_error_with_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference kept the last `check` silently (and this loop validated)."""
    assert _problems(capsys, tmp_path, STATE_DEFINED_TWICE) == [
        ".loops/bad.yaml: states.check: defined twice (lines 4 and 9)"
    ]


def test_duplicate_keys_at_any_depth_in_file_order(tmp_path: Path) -> None:
    text = "name: a\nllm:\n  model: x\n  model: y\n  model: z\nname: b\n"
    path = write_loop(tmp_path, "dups", text)
    with pytest.raises(LoopValidationError) as caught:
        load_and_validate(path)
    assert caught.value.user_lines() == [
        f"{path}: name: defined twice (lines 1 and 6)",
        f"{path}: llm.model: defined 3 times (lines 3, 4 and 5)",
    ]


def test_duplicates_inside_lists_and_verdicts_are_found() -> None:
    text = "a:\n  - x: 1\n    x: 2\nroute:\n  yes: s\n  yes: t\n"
    _data, errors = parse_loop_yaml(text)
    assert [(error.path, error.message) for error in errors] == [
        ("a.0.x", "defined twice (lines 2 and 3)"),
        ("route.yes", "defined twice (lines 5 and 6)"),
    ]


def test_boolean_keys_written_differently_are_one_key() -> None:
    _data, errors = parse_loop_yaml("true: 1\nTrue: 2\n")
    assert [(error.path, error.message) for error in errors] == [
        ("true", "defined twice (lines 1 and 2)")
    ]


def test_a_merge_key_override_is_not_a_duplicate() -> None:
    text = "base: &b\n  action: echo a\n  next: x\nstate:\n  <<: *b\n  action: echo b\n"
    data, errors = parse_loop_yaml(text)
    assert errors == []
    assert data["state"] == {"action": "echo b", "next": "x"}


def test_parse_yaml_still_returns_the_last_value() -> None:
    """`parse_yaml` keeps the reference's dict (last value wins); the loop loader reports."""
    assert parse_yaml("a: 1\na: 2\n") == {"a": 2}


# ---------------------------------------------------------------------------
# Interpolation
# ---------------------------------------------------------------------------


def test_unknown_namespace_and_missing_context_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _loop("echo ${undefined.var} ${context.bar} ${context.foo}", top="context:\n  foo: 1\n")
    assert _problems(capsys, tmp_path, text) == [
        ".loops/bad.yaml: states.check.action: ${undefined.var}: unknown namespace 'undefined' "
        "(known: context, captured, prev, result, state, loop, env, handoff)",
        ".loops/bad.yaml: states.check.action: ${context.bar}: the loop has no context key "
        "'bar' (keys: foo)",
    ]


def test_context_key_of_a_loop_without_context_and_a_nested_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _problems(capsys, tmp_path, _loop("echo ${context.x}")) == [
        ".loops/bad.yaml: states.check.action: ${context.x}: the loop has no context key 'x' "
        "(it defines no context)"
    ]
    nested = _loop("echo ${context.db.port}", top="context:\n  db:\n    host: h\n")
    assert _problems(capsys, tmp_path, nested) == [
        ".loops/bad.yaml: states.check.action: ${context.db.port}: the loop has no context key "
        "'db.port' (keys: host)"
    ]


def test_variables_in_targets_and_evaluator_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "name: bad\ninitial: check\nstates:\n  check:\n    action: echo hi\n"
        "    evaluate:\n      type: output_contains\n      pattern: ${nope.x}\n"
        "      source: ${name}\n"
        "    route:\n      success: ${ctx.next}\n      _: done\n"
        "  done:\n    terminal: true\n"
    )
    known = "(known: context, captured, prev, result, state, loop, env, handoff)"
    assert _problems(capsys, tmp_path, text) == [
        f".loops/bad.yaml: states.check.route.success: ${{ctx.next}}: unknown namespace 'ctx' "
        f"{known}",
        ".loops/bad.yaml: states.check.evaluate.source: ${name}: not a variable "
        "(expected ${namespace.path})",
        f".loops/bad.yaml: states.check.evaluate.pattern: ${{nope.x}}: unknown namespace "
        f"'nope' {known}",
    ]


def test_known_namespaces_and_escaped_variables_pass(tmp_path: Path) -> None:
    action = (
        '"echo ${context.foo} ${captured.x.output} ${prev.output} ${result.verdict} '
        '${state.name} ${loop.name} ${env.HOME} ${handoff.prompt} $${undefined.var}"'
    )
    path = write_loop(tmp_path, "good", _loop(action, top="context:\n  foo: 1\n"))
    assert load_and_validate(path).name == "bad"


# ---------------------------------------------------------------------------
# Numeric evaluator settings
# ---------------------------------------------------------------------------


def _evaluated_loop(evaluate: str, top: str = "") -> str:
    return (
        f"name: bad\ninitial: check\n{top}states:\n  check:\n    action: echo 1\n"
        f"    evaluate:\n{evaluate}    route:\n      _: done\n"
        "  done:\n    terminal: true\n"
    )


def test_non_numeric_target_and_tolerance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate = "      type: convergence\n      target: abc\n      tolerance: xyz\n"
    assert _problems(capsys, tmp_path, _evaluated_loop(evaluate)) == [
        ".loops/bad.yaml: states.check.evaluate.target: must be a number or a ${...} "
        "template, got 'abc'",
        ".loops/bad.yaml: states.check.evaluate.tolerance: must be a number or a ${...} "
        "template, got 'xyz'",
    ]
    numeric = "      type: output_numeric\n      operator: eq\n      target: ten\n"
    assert _problems(capsys, tmp_path, _evaluated_loop(numeric)) == [
        ".loops/bad.yaml: states.check.evaluate.target: must be a number or a ${...} "
        "template, got 'ten'"
    ]


def test_a_context_value_used_as_target_must_be_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The convergence paradigm passes `toward` through `${context.target}`."""
    spec = "paradigm: convergence\nname: bad\ncheck: echo 5\ntoward: abc\nusing: echo fix\n"
    assert _problems(capsys, tmp_path, spec) == [
        ".loops/bad.yaml: states.measure.evaluate.target: ${context.target} is 'abc' in the "
        "loop's context, not a number"
    ]


@pytest.mark.parametrize(
    "settings",
    [
        "      target: '5'\n      tolerance: '0.5'\n",
        "      target: ${context.goal}\n      tolerance: ${captured.t.output}\n",
        "      target: ${context.goal}0\n",
        "      target: 3\n      tolerance: 0\n",
    ],
)
def test_numbers_numeric_text_and_templates_pass(tmp_path: Path, settings: str) -> None:
    evaluate = "      type: convergence\n" + settings
    text = _evaluated_loop(evaluate, top="context:\n  goal: 4\n")
    assert load_and_validate(write_loop(tmp_path, "ok", text)).name == "bad"


def test_output_json_targets_may_be_any_text(tmp_path: Path) -> None:
    evaluate = "      type: output_json\n      path: a\n      operator: eq\n      target: ok\n"
    assert load_and_validate(write_loop(tmp_path, "ok", _evaluated_loop(evaluate))).name == "bad"


def test_unknown_direction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evaluate = "      type: convergence\n      target: 1\n      direction: up\n"
    assert _problems(capsys, tmp_path, _evaluated_loop(evaluate)) == [
        ".loops/bad.yaml: states.check.evaluate.direction: unknown direction 'up' "
        "(allowed: minimize, maximize)"
    ]


# ---------------------------------------------------------------------------
# Action length
# ---------------------------------------------------------------------------

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="Linux's per-argument limit"
)


@linux_only
def test_an_action_longer_than_one_argument_may_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert max_argument_bytes() == LINUX_MAX_ARG_STRLEN - 1
    action = "x" * LINUX_MAX_ARG_STRLEN
    assert _problems(capsys, tmp_path, _loop(action)) == [
        ".loops/bad.yaml: states.check.action: action is 131,072 bytes, longer than one command "
        "argument may be on this system (131,071 bytes); put the commands in a script file and "
        "run that"
    ]


@linux_only
def test_the_longest_allowed_action_really_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The limit is the real one: an action of exactly that size starts and succeeds."""
    action = ":" + " " * (max_argument_bytes() - 1)
    write_loop(tmp_path, "long", _loop(f'"{action}"').replace("name: bad", "name: long"))
    code, _out, err = cli_in_process(capsys, "run", "long", "-q")
    assert (code, err) == (0, "")


# ---------------------------------------------------------------------------
# Files that are not loops, and YAML mistakes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "file is empty"),
        ("# only a comment\n\n", "file is empty"),
        ("- a\n- b\n", "top level is a list; a loop file is a mapping (name:, initial:, states:)"),
        ("just text\n", "top level is text; a loop file is a mapping (name:, initial:, states:)"),
        ("42\n", "top level is a number; a loop file is a mapping (name:, initial:, states:)"),
    ],
)
def test_a_file_that_is_not_a_mapping_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    assert _problems(capsys, tmp_path, text) == [f".loops/bad.yaml: {problem}"]


def test_an_unquoted_colon_in_a_value_says_to_quote_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _problems(capsys, tmp_path, _loop("echo a: b")) == [
        ".loops/bad.yaml: YAML syntax error at line 5, column 19: mapping values are not "
        "allowed here (quote a value that contains ': ', e.g. action: \"echo a: b\")"
    ]
