"""`ll-loop show` and its diagrams for loops in little-loops' current dialect (issue 21, item 8):
a HEAD state's routes read in its own words (yes/no, on_<verdict>, the retry/throttle/rate
limit redirects), and a sub-loop state is a box naming its child with the command that draws
the child, checked with the real graphviz and Mermaid parsers. Legacy states keep the words
they had."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import run_cli, write_loop
from test_cli_show import assert_dot_accepts, assert_mermaid_accepts

from little_loops.cli.diagram import render_dot, render_mermaid
from little_loops.cli.loop_graph import loop_edges, state_routes
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop

HEAD_LOOP = HeadLoop.from_dict(
    {
        "name": "parent",
        "description": "Drawn.",
        "initial": "draft",
        "states": {
            "draft": {"loop": "writers/draft", "on_yes": "check", "on_no": "fail"},
            "check": {
                "action": "true",
                "on_yes": "done",
                "on_partial": "draft",
                "on_error": "fail",
                "max_retries": 2,
                "on_retry_exhausted": "fail",
            },
            "done": {"terminal": True},
            "fail": {"terminal": True, "failure": True},
        },
    }
)


def test_head_routes_read_in_the_head_words_and_redirects_are_dashed() -> None:
    check = HEAD_LOOP.states["check"]

    assert state_routes("check", check) == [
        ("yes", "done"),
        ("partial", "draft"),
        ("error", "fail"),
        ("on_retry_exhausted", "fail"),
    ]
    guards = {(edge.source, edge.label): edge.guard for edge in loop_edges(HEAD_LOOP)}
    assert guards[("check", "on_retry_exhausted")] is True
    assert guards[("check", "yes")] is False


def test_legacy_routes_keep_their_words() -> None:
    """The reference-era words stay: success/failure/error, in that order."""
    legacy = FSMLoop.from_dict(
        {
            "name": "x",
            "initial": "a",
            "states": {
                "a": {"action": "true", "on_error": "z", "on_failure": "z", "on_success": "z"},
                "z": {"terminal": True},
            },
        }
    )
    assert state_routes("a", legacy.states["a"]) == [
        ("success", "z"),
        ("failure", "z"),
        ("error", "z"),
    ]


def test_a_sub_loop_state_is_a_box_that_names_its_child_in_both_languages() -> None:
    mermaid = render_mermaid(HEAD_LOOP)
    dot = render_dot(HEAD_LOOP)

    assert '    s0[["draft<br>[sub-loop: writers/draft]"]]' in mermaid
    assert '    click s0 "#" "ll-loop show writers/draft --diagram"' in mermaid
    assert (
        's0 [label="draft\\n[sub-loop: writers/draft]", peripheries=2, '
        'tooltip="ll-loop show writers/draft --diagram"];'
    ) in dot


@pytest.mark.slow
def test_the_real_parsers_accept_a_sub_loop_diagram(
    tmp_path: Path, graphviz_dot: Path, mermaid_parser: Path
) -> None:
    write_loop(tmp_path, "parent", PARENT)
    write_loop(tmp_path, "child", CHILD)
    shown = run_cli(tmp_path, "show", "parent", "--diagram", "dot")
    assert shown.returncode == 0, shown.stderr
    svg = assert_dot_accepts(graphviz_dot, shown.stdout)
    assert "[sub&#45;loop: child]" in svg  # SVG writes the dash as an entity
    mermaid = tmp_path / "parent.mmd"
    mermaid.write_text(run_cli(tmp_path, "show", "parent", "--diagram").stdout)
    assert_mermaid_accepts(mermaid_parser, [mermaid])


def test_show_prints_head_routes_in_the_head_words(tmp_path: Path) -> None:
    write_loop(tmp_path, "parent", PARENT)
    write_loop(tmp_path, "child", CHILD)

    shown = run_cli(tmp_path, "show", "parent")

    assert shown.returncode == 0, shown.stderr
    assert "    sub-loop: child\n    yes -> done\n    no -> done\n" in shown.stdout


PARENT = """\
name: parent
description: Calls a child.
initial: go
states:
  go: {loop: child, on_yes: done, on_no: done}
  done: {terminal: true}
"""

CHILD = """\
name: child
description: Does nothing.
initial: end
states:
  end: {terminal: true}
"""


def test_the_dry_run_plan_names_head_routes_in_head_words() -> None:
    """`run --dry-run` (§4.8): a HEAD state's shorthands as written (`on_yes`, `on_no`, any
    `on_<verdict>`); the legacy plan keeps the reference's lines byte for byte."""
    from little_loops.cli.plan import plan_lines

    lines = plan_lines(HEAD_LOOP)

    assert lines[4:7] == [
        "    [sub-loop: writers/draft]",
        "    on_yes -> check",
        "    on_no -> fail",
    ]
    assert "    on_partial -> draft" in lines
    legacy = FSMLoop.from_dict(
        {"name": "x", "initial": "a", "states": {"a": {"action": "true", "on_success": "a"}}}
    )
    assert plan_lines(legacy)[4:6] == ["    action: true", "    on_success -> a"]
