"""Tests for `${namespace.path}` interpolation (fsm-api.md §6, plus the `handoff` namespace)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from little_loops.fsm.interpolation import (
    ESCAPED_PATTERN,
    ESCAPED_PLACEHOLDER,
    VARIABLE_PATTERN,
    InterpolationContext,
    InterpolationError,
    format_elapsed,
    interpolate,
    interpolate_dict,
    resolve_template,
)


def full_context() -> InterpolationContext:
    return InterpolationContext(
        context={"name": "demo", "limits": {"max": 5, "items": [1, 2]}, "empty": None},
        captured={"build": {"output": "ok\n", "exit_code": 0}},
        prev={"output": "42", "exit_code": 1, "state": "check"},
        result={"verdict": "failure", "details": {"reason": "tests red"}},
        state_name="fix",
        iteration=3,
        loop_name="my-loop",
        started_at="2024-01-01T00:00:00+00:00",
        elapsed_ms=61_000,
    )


def raised_message(template: str, ctx: InterpolationContext) -> str:
    with pytest.raises(InterpolationError) as caught:
        interpolate(template, ctx)
    return str(caught.value)


# --- constants and defaults ---------------------------------------------------------


def test_constants_match_the_syntax() -> None:
    assert VARIABLE_PATTERN.findall("${a.b} and ${c} ${") == ["a.b", "c"]
    assert ESCAPED_PATTERN.sub("X", "$${a} ${b}") == "Xa} ${b}"
    assert ESCAPED_PLACEHOLDER.startswith("\x00")
    assert ESCAPED_PLACEHOLDER.endswith("\x00")


def test_context_defaults() -> None:
    ctx = InterpolationContext()
    assert (ctx.context, ctx.captured, ctx.prev, ctx.result) == ({}, {}, None, None)
    assert (ctx.state_name, ctx.iteration, ctx.loop_name) == ("", 1, "")
    assert (ctx.started_at, ctx.elapsed_ms, ctx.handoff) == ("", 0, None)
    assert InterpolationContext().context is not ctx.context


# --- resolve ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "path", "expected"),
    [
        ("context", "name", "demo"),
        ("context", "limits.max", 5),
        ("context", "limits", {"max": 5, "items": [1, 2]}),
        ("context", "empty", None),
        ("captured", "build.output", "ok\n"),
        ("captured", "build.exit_code", 0),
        ("prev", "output", "42"),
        ("prev", "state", "check"),
        ("result", "verdict", "failure"),
        ("result", "details.reason", "tests red"),
        ("state", "name", "fix"),
        ("state", "iteration", 3),
        ("loop", "name", "my-loop"),
        ("loop", "started_at", "2024-01-01T00:00:00+00:00"),
        ("loop", "elapsed_ms", 61_000),
        ("loop", "elapsed", "1m 1s"),
    ],
)
def test_resolve_each_namespace(namespace: str, path: str, expected: Any) -> None:
    assert full_context().resolve(namespace, path) == expected


@pytest.mark.parametrize(
    ("namespace", "path", "message"),
    [
        ("context", "missing", "Path 'missing' not found in context"),
        ("context", "limits.min", "Path 'limits.min' not found in context"),
        ("context", "limits.max.deeper", "Path 'limits.max.deeper' not found in context"),
        ("context", "limits.items.0", "Path 'limits.items.0' not found in context"),
        ("context", "", "Path '' not found in context"),
        ("captured", "test.output", "Path 'test' not found in captured"),
        ("prev", "stderr", "Path 'stderr' not found in prev"),
        ("result", "details.x.y", "Path 'details.x' not found in result"),
        ("state", "label", "Unknown state property: label"),
        ("state", "name.x", "Unknown state property: name.x"),
        ("loop", "duration", "Unknown loop property: duration"),
        ("secrets", "key", "Unknown namespace: secrets"),
    ],
)
def test_resolve_failures_name_the_path(namespace: str, path: str, message: str) -> None:
    with pytest.raises(InterpolationError) as caught:
        full_context().resolve(namespace, path)
    assert str(caught.value) == message


def test_prev_and_result_absent() -> None:
    ctx = InterpolationContext()
    assert raised_message("${prev.output}", ctx) == "No previous state result available"
    assert raised_message("${result.verdict}", ctx) == "No evaluation result available"


def test_env_reads_the_whole_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LL_TEST_VALUE", "from env")
    monkeypatch.setenv("LL.DOTTED", "dots kept")
    monkeypatch.setenv("LL_EMPTY", "")
    ctx = InterpolationContext()
    assert interpolate("${env.LL_TEST_VALUE}/${env.LL.DOTTED}/${env.LL_EMPTY}", ctx) == (
        "from env/dots kept/"
    )


def test_env_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LL_TEST_UNSET", raising=False)
    message = raised_message("${env.LL_TEST_UNSET}", InterpolationContext())
    assert message == "Environment variable 'LL_TEST_UNSET' not set"


@pytest.mark.parametrize(
    ("elapsed_ms", "text"),
    [
        (0, "0ms"),
        (999, "999ms"),
        (1000, "1s"),
        (1999, "1s"),
        (59_999, "59s"),
        (60_000, "1m"),
        (61_500, "1m 1s"),
        (3_600_000, "60m"),
        (3_661_000, "61m 1s"),
    ],
)
def test_elapsed_is_human_readable(elapsed_ms: int, text: str) -> None:
    assert format_elapsed(elapsed_ms) == text
    ctx = InterpolationContext(elapsed_ms=elapsed_ms)
    assert interpolate("${loop.elapsed}", ctx) == text


# --- handoff (addition) -------------------------------------------------------------


def test_handoff_defaults_when_no_handoff() -> None:
    ctx = InterpolationContext()
    assert ctx.resolve("handoff", "prompt") == ""
    assert ctx.resolve("handoff", "count") == 0
    assert ctx.resolve("handoff", "state") == ""
    assert interpolate("[${handoff.prompt}|${handoff.count}|${handoff.state}]", ctx) == "[|0|]"


def test_handoff_values() -> None:
    ctx = InterpolationContext(handoff={"prompt": "finish step 3", "count": 2, "state": "work"})
    assert interpolate("${handoff.prompt} (#${handoff.count} in ${handoff.state})", ctx) == (
        "finish step 3 (#2 in work)"
    )


def test_handoff_missing_or_null_keys_use_defaults() -> None:
    ctx = InterpolationContext(handoff={"prompt": None})
    assert ctx.resolve("handoff", "prompt") == ""
    assert ctx.resolve("handoff", "count") == 0


def test_handoff_unknown_key() -> None:
    ctx = InterpolationContext(handoff={"prompt": "p"})
    assert raised_message("${handoff.reason}", ctx) == "Unknown handoff property: reason"
    no_handoff = InterpolationContext()
    assert raised_message("${handoff.x}", no_handoff) == "Unknown handoff property: x"


# --- interpolate --------------------------------------------------------------------


def test_interpolate_replaces_every_variable() -> None:
    template = "${state.name}#${state.iteration} of ${loop.name}: ${prev.output}"
    assert interpolate(template, full_context()) == "fix#3 of my-loop: 42"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (True, "True"),
        (5.0, "5.0"),
        (7, "7"),
        ({"a": 1}, "{'a': 1}"),
        ([1, "x"], "[1, 'x']"),
    ],
)
def test_values_render_with_str(value: Any, text: str) -> None:
    ctx = InterpolationContext(context={"v": value})
    assert interpolate("<${context.v}>", ctx) == f"<{text}>"


def test_escape_gives_literal_dollar_brace() -> None:
    ctx = InterpolationContext(context={"x": "1"})
    assert interpolate("$${context.x} is ${context.x}", ctx) == "${context.x} is 1"
    assert interpolate("cost: $$5, $${", ctx) == "cost: $$5, ${"


def test_single_pass_leaves_nested_references_literal() -> None:
    ctx = InterpolationContext(context={"a": "${context.b}", "b": "deep"})
    assert interpolate("${context.a}", ctx) == "${context.b}"


def test_resolved_placeholder_text_is_not_an_escape() -> None:
    ctx = InterpolationContext(context={"a": "$${x}"})
    assert interpolate("${context.a}", ctx) == "$${x}"


def test_unclosed_variable_is_left_as_is() -> None:
    ctx = InterpolationContext(context={"x": "1"})
    assert interpolate("${context.x} and ${context.x", ctx) == "1 and ${context.x"


def test_variable_without_dot_is_invalid() -> None:
    message = raised_message("a ${name} b", InterpolationContext())
    assert message == "Invalid variable: ${name} (expected namespace.path)"


def test_first_failure_aborts_the_call() -> None:
    ctx = InterpolationContext(context={"ok": "fine"})
    assert raised_message("${context.ok} ${context.bad} ${x}", ctx) == (
        "Path 'bad' not found in context"
    )


@pytest.mark.parametrize(
    "text", ["", "plain", "{context.x}", "braces } { }", "line\nbreak", "\x00nul", "ünï ☃"]
)
def test_text_without_dollar_is_unchanged(text: str) -> None:
    assert interpolate(text, InterpolationContext()) == text


# --- resolve_template (addition) ----------------------------------------------------


def test_resolve_template_keeps_the_type_of_a_whole_variable() -> None:
    ctx = full_context()
    assert resolve_template("${context.limits.max}", ctx) == 5
    assert resolve_template("${context.limits}", ctx) == {"max": 5, "items": [1, 2]}
    assert resolve_template("max=${context.limits.max}", ctx) == "max=5"
    assert resolve_template("$${context.name}", ctx) == "${context.name}"
    assert resolve_template("plain", ctx) == "plain"


def test_resolve_template_rejects_a_variable_without_dot() -> None:
    with pytest.raises(InterpolationError) as caught:
        resolve_template("${name}", InterpolationContext())
    assert str(caught.value) == "Invalid variable: ${name} (expected namespace.path)"


# --- interpolate_dict ---------------------------------------------------------------


def test_interpolate_dict_walks_dicts_and_lists() -> None:
    ctx = InterpolationContext(context={"who": "ann"})
    source: dict[str, Any] = {
        "${context.who}": "hi ${context.who}",
        "nested": {"list": ["${context.who}", {"k": "${context.who}"}, ["${context.who}"], 3]},
        "number": 1,
        "none": None,
    }
    result = interpolate_dict(source, ctx)
    assert result == {
        "${context.who}": "hi ann",
        "nested": {"list": ["ann", {"k": "ann"}, ["ann"], 3]},
        "number": 1,
        "none": None,
    }
    assert source["nested"]["list"][0] == "${context.who}"


def test_interpolate_dict_raises_on_first_failure() -> None:
    with pytest.raises(InterpolationError, match=re.escape("Path 'nope' not found in context")):
        interpolate_dict({"a": ["${context.nope}"]}, InterpolationContext())
