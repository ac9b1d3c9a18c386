from __future__ import annotations

import pytest
import yaml

from little_loops.fsm.errors import LoopSyntaxError
from little_loops.fsm.yaml_loader import dump_yaml, parse_yaml


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
