"""json_scan: JSON objects in free text, found in linear time."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from little_loops.fsm.judging import json_scan
from little_loops.fsm.judging.json_scan import json_objects


def test_bare_fenced_and_inline_objects_in_order() -> None:
    text = (
        'Result: {"a": 1} inline\n'
        "```json\n"
        '{\n  "b": {"nested": true}\n}\n'
        "```\n"
        '{"c": [1, {"d": 2}]}\n'
    )
    assert json_objects(text) == [{"a": 1}, {"b": {"nested": True}}, {"c": [1, {"d": 2}]}]


def test_no_objects() -> None:
    assert json_objects("") == []
    assert json_objects("plain text, [1, 2] and } stray { braces") == []


def test_braces_inside_strings_do_not_break_pairing() -> None:
    text = 'done {"summary": "use } and { freely", "escaped": "a \\" } b"} end'
    assert json_objects(text) == [{"summary": "use } and { freely", "escaped": 'a " } b'}]


def test_an_unmatched_brace_in_prose_does_not_hide_a_later_object() -> None:
    text = 'Use { to open a block.\nThen: {"status": "partial"}\n'
    assert json_objects(text) == [{"status": "partial"}]


def test_a_stray_quote_in_prose_misleads_one_line_at_most() -> None:
    text = 'Note { the 5" screen\n{"ok": 1}\n'
    assert json_objects(text) == [{"ok": 1}]


def test_objects_inside_a_span_that_is_not_json_are_found() -> None:
    text = '{note: {"first": 1} and {"second": 2}} {"third": 3}'
    assert json_objects(text) == [{"first": 1}, {"second": 2}, {"third": 3}]


def test_objects_nested_in_a_found_object_are_not_reported_separately() -> None:
    assert json_objects('{"outer": {"inner": {"deep": 1}}}') == [{"outer": {"inner": {"deep": 1}}}]


def test_too_deep_nesting_is_not_an_object_and_does_not_raise() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"a": ' + deep + '} {"b": 1}'
    assert json_objects(text) == [{"b": 1}]


@pytest.mark.slow
def test_hostile_outputs_decode_a_bounded_amount_of_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Trying json at every `{` took over ten seconds for each of these: the work was
    # quadratic in the text. Counted in characters handed to the decoder, not in seconds
    # (a timed assertion fails on a loaded machine): at most the budget plus the last span.
    size = 256 * 1024
    hostile = ["{" * size, '{"a": "' + "{" * size, '{"a":' * (size // 5), "{}" * (size // 2)]
    decoded: list[int] = []
    real_decode = json_scan._decode

    def counting_decode(candidate: str) -> dict[str, Any] | None:
        decoded.append(len(candidate))
        return real_decode(candidate)

    monkeypatch.setattr(json_scan, "_decode", counting_decode)
    for text in hostile:
        decoded.clear()
        json_objects(text)
        budget = json_scan.DECODE_BUDGET_FACTOR * len(text) + 1024
        assert sum(decoded) <= budget + len(text)


def test_the_decode_budget_keeps_the_objects_nearest_the_end() -> None:
    # A deep nest of non-JSON spans costs quadratic work to search fully; the budget stops
    # the search, and what was found last in the text is kept.
    depth = 3000
    text = '{"first": 1} ' + "{x " * depth + '{"inner": 2}' + " y}" * depth + ' {"last": 3}'
    found = json_objects(text)
    assert found[-1] == {"last": 3}
    assert {"first": 1} not in found


_prose = st.text(alphabet=st.characters(blacklist_characters='{}"\\'), max_size=200)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


@pytest.mark.slow
@settings(max_examples=50)
@given(_prose, st.dictionaries(st.text(max_size=10), _values, max_size=4), _prose)
def test_an_object_between_prose_is_found(
    before: str, document: dict[str, object], after: str
) -> None:
    assert json_objects(before + json.dumps(document) + after) == [document]
