from __future__ import annotations

import pytest
import yaml

from little_loops.fsm.errors import LoopSyntaxError
from little_loops.fsm.loading.yaml_text import dump_yaml, parse_yaml


def test_only_true_and_false_are_booleans() -> None:
    text = "a: on\nb: off\nc: yes\nd: no\ne: y\nf: true\ng: False\nh: TRUE\n"
    assert parse_yaml(text) == {
        "a": "on",
        "b": "off",
        "c": "yes",
        "d": "no",
        "e": "y",
        "f": True,
        "g": False,
        "h": True,
    }


def test_state_names_like_on_and_off_stay_strings_as_keys() -> None:
    assert parse_yaml("route:\n  on: next\n  off: done\n") == {
        "route": {"on": "next", "off": "done"}
    }


def test_syntax_error_is_one_line_with_line_and_column() -> None:
    with pytest.raises(LoopSyntaxError) as caught:
        parse_yaml("a: [1,\nb: 2", "x.yaml")
    assert caught.value.user_lines() == [
        "x.yaml: YAML syntax error at line 2, column 5: expected ',' or ']', but got '<stream end>'"
    ]
    assert isinstance(caught.value, yaml.YAMLError)
    assert isinstance(caught.value, ValueError)


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    with pytest.raises(LoopSyntaxError) as caught:
        parse_yaml("[" * 100_000, "deep.yaml")
    assert caught.value.user_lines() == ["deep.yaml: YAML is nested too deeply"]


def test_huge_integer_is_a_syntax_error_not_a_crash() -> None:
    with pytest.raises(LoopSyntaxError) as caught:
        parse_yaml("n: " + "9" * 5000, "big.yaml")
    assert caught.value.user_lines()[0].startswith("big.yaml: YAML value cannot be read: ")


def test_dump_keeps_key_order_and_block_style() -> None:
    assert dump_yaml({"name": "x", "initial": "a", "states": {"a": {"terminal": True}}}) == (
        "name: x\ninitial: a\nstates:\n  a:\n    terminal: true\n"
    )


def test_an_empty_document_is_none() -> None:
    assert parse_yaml("") is None
    assert parse_yaml("# only a comment\n") is None


def test_aliases_that_reuse_a_block_are_fine() -> None:
    text = "base: &base {type: exit_code}\na: *base\nb: *base\nloop: &loop [1, *loop]\n"
    data = parse_yaml(text)
    assert data["a"] == data["b"] == {"type": "exit_code"}
    assert data["loop"][1] is data["loop"]  # a structure inside itself counts once


def test_an_alias_bomb_is_refused_before_it_is_built() -> None:
    lines = ['l0: &l0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level in range(1, 7):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]")
    with pytest.raises(LoopSyntaxError) as info:
        parse_yaml("\n".join(lines), "bomb.yaml")
    assert info.value.user_lines() == [
        "bomb.yaml: YAML aliases expand to 12,345,660 more values than the file spells out "
        "(at most 100,000)"
    ]


@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_unclosed_quote_points_at_where_it_opens(quote: str) -> None:
    """Issue 23 item 18: PyYAML reports the end of the file; the mistake is the quote."""
    text = f"name: q\nstates:\n  a:\n    action: {quote}echo hi\n    next: done\n  done: {{}}\n"
    with pytest.raises(LoopSyntaxError) as caught:
        parse_yaml(text, "q.yaml")
    assert caught.value.user_lines() == [
        "q.yaml: YAML syntax error at line 4, column 13: a quoted string opened here is "
        "never closed (found unexpected end of stream)"
    ]
