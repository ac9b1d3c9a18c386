"""`from:` (spec/ll-head-dialect.md §6) and `flow:`/`state_defs:` (§8.2): a HEAD file is
merged over its parent, and a linear flow becomes states, before the shape checks."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from little_loops.fsm.errors import LoopFileError
from little_loops.fsm.loading.inheritance import deep_merge
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.model.head_loop import HeadLoop, HeadStateConfig

TEMPLATE = """\
name: review-template
max_steps: 20
context: {strictness: normal, keep: 1}
labels: [a, b]
states:
  review: {action: "/review ${context.strictness}", action_type: prompt, on_yes: done, on_no: done}
  done: {terminal: true}
"""
CHILD = """\
name: strict-review
description: The review template with a strict reviewer and an escalation.
from: lib/review-template
initial: review
context: {strictness: high, keep: null}
labels: [c]
states:
  review: {on_no: escalate}
  escalate: {terminal: true, failure: true}
"""


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(LoopFileError) as caught:
        load_loop(path)
    return caught.value.user_lines()[0]


def test_section_6_child_merged_over_parent(tmp_path: Path) -> None:
    write(tmp_path, "lib/review-template.yaml", TEMPLATE)
    fsm = load_loop(write(tmp_path, "strict-review.yaml", CHILD))

    assert isinstance(fsm, HeadLoop)
    assert fsm.max_steps == 20
    assert fsm.context == {"strictness": "high"}  # null removes `keep`
    assert fsm.labels == ["c"]  # lists are replaced
    review = fsm.states["review"]
    assert isinstance(review, HeadStateConfig)
    assert (review.action, review.action_type) == ("/review ${context.strictness}", "prompt")
    assert (review.on_success, review.on_failure) == ("done", "escalate")
    assert fsm.states["escalate"].failure is True  # type: ignore[attr-defined]


def test_section_6_multi_level_chain_and_inherited_name(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", "name: base\nstates:\n  s: {terminal: true}\n")
    write(tmp_path, "mid.yaml", "from: base\ninitial: s\n")
    fsm = load_loop(write(tmp_path, "leaf.yaml", "from: mid\ndescription: d\nmax_steps: 3\n"))

    assert (fsm.name, fsm.initial, list(fsm.states), fsm.max_iterations) == ("base", "s", ["s"], 3)


def test_section_6_cycle(tmp_path: Path) -> None:
    write(tmp_path, "b.yaml", "from: a\n")
    path = write(tmp_path, "a.yaml", "from: b\n")

    assert load_error(path) == f"{tmp_path / 'b.yaml'}: Circular `from:` chain: a -> b -> a"


def test_section_6_self_reference(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "from: a\n")

    assert load_error(path) == f"{path}: Circular `from:` chain: a -> a"


def test_section_6_missing_parent_and_non_string_from(tmp_path: Path) -> None:
    missing = write(tmp_path, "a.yaml", "from: nowhere\n")
    number = write(tmp_path, "b.yaml", "from: 3\n")

    assert load_error(missing) == f"{missing}: Loop not found: nowhere"
    assert load_error(number) == f"{number}: `from:` must be a string"


def test_section_6_parent_not_a_mapping(tmp_path: Path) -> None:
    write(tmp_path, "p.yaml", "- a\n")
    path = write(tmp_path, "c.yaml", "from: p\n")

    assert load_error(path) == (
        f"{tmp_path / 'p.yaml'}: top level is a list; a loop file is a mapping "
        "(name:, initial:, states:)"
    )


def test_section_6_deep_merge_rules() -> None:
    parent = {"a": {"x": 1, "y": [1, 2]}, "b": 2, "c": 3}
    child = {"a": {"y": [3], "z": None}, "b": None, "d": 4}

    assert deep_merge(parent, child) == {"a": {"x": 1, "y": [3]}, "c": 3, "d": 4}


# --- §8.2 flow ----------------------------------------------------------------------

FLOW = """\
name: docs-refresh
description: Collect docs, check links, repair, publish.
initial: collect
flow: [collect, "check?publish:repair", repair, publish, done]
state_defs:
  collect: {action: "scripts/collect-docs.sh"}
  check:   {action: "scripts/check-links.sh"}
  repair:  {action: "/fix-links", action_type: prompt, next: check}
  publish: {action: "scripts/publish.sh"}
"""


def test_section_8_2_flow_becomes_states(tmp_path: Path) -> None:
    fsm = load_loop(write(tmp_path, "docs.yaml", FLOW))

    assert {name: state.to_dict() for name, state in fsm.states.items()} == {
        "collect": {"action": "scripts/collect-docs.sh", "next": "check"},
        "check": {
            "action": "scripts/check-links.sh",
            "on_success": "publish",
            "on_failure": "repair",
        },
        "repair": {"action": "/fix-links", "next": "check", "action_type": "prompt"},
        "publish": {"action": "scripts/publish.sh", "next": "done"},
        "done": {"terminal": True},
    }


def test_section_8_2_flow_replaces_inherited_states(tmp_path: Path) -> None:
    write(tmp_path, "p.yaml", "name: p\ninitial: old\nstates:\n  old: {terminal: true}\n")
    fsm = load_loop(write(tmp_path, "c.yaml", "from: p\ninitial: a\nflow: [a, b]\n"))

    assert list(fsm.states) == ["a", "b"]


@pytest.mark.parametrize(
    ("flow", "message"),
    [
        ("[]", "`flow:` must be a non-empty list of strings, got a list"),
        ("[a, 3]", "`flow:` must be a non-empty list of strings, got a list"),
        ("x", "`flow:` must be a non-empty list of strings, got 'x'"),
        ('["a?b", c]', "`flow:` entry 'a?b' must read name?yes_target:no_target"),
        ('["a?:c", c]', "`flow:` entry 'a?:c' must read name?yes_target:no_target"),
    ],
)
def test_section_8_2_bad_flow(tmp_path: Path, flow: str, message: str) -> None:
    path = write(tmp_path, "f.yaml", f"name: f\ninitial: a\nflow: {flow}\n")

    assert load_error(path) == f"{path}: {message}"


def test_section_8_2_unused_state_defs_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="little_loops.fsm.validation")
    text = "name: f\ndescription: d\ninitial: a\nflow: [a, b]\nstate_defs: {zzz: {action: x}}\n"
    load_loop(write(tmp_path, "f.yaml", text))

    assert [record.getMessage() for record in caplog.records] == [
        f"[WARNING] {tmp_path / 'f.yaml'}: state_defs.zzz: not a state of flow: "
        "(these definitions are dropped)"
    ]
