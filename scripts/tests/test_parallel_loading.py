"""Loading `parallel:` states (issue 25 items 7 and "both dialects").

The block is read in both dialects and never decides a file's dialect; each refusal is
one finding with its key path: bad fields, `parallel:` beside `action:`/`loop:`/`next:`,
a legacy `on_partial` without `parallel:`, a written item list over `max_items`, and a
child loop that fans out itself (nested `parallel:`, refused by `validate`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.cli_support import run_cli

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.model.head_loop import HeadStateConfig, loop_from_dict
from little_loops.fsm.model.parallel_config import ParallelConfig, ParallelStateConfig

CHILD = """\
name: one
initial: work
states:
  work:
    action: "echo ${context.item}"
    next: done
  done:
    terminal: true
"""

LEGACY = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nb"
      loop: one
{extra}    on_success: done
    on_partial: done
    on_failure: done
  done:
    terminal: true
"""

HEAD = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: [a, b]
      loop: one
      with: {{depth: 2}}
      max_workers: 2
      isolation: worktree
      fail_mode: fail_fast
      timeout_seconds: 9
      max_items: 5
{extra}    on_yes: done
    on_partial: done
    on_no: done
  done:
    terminal: true
"""


def _project(tmp_path: Path, text: str) -> Path:
    loops = tmp_path / ".loops"
    loops.mkdir(exist_ok=True)
    (loops / "one.yaml").write_text(CHILD)
    path = loops / "fan.yaml"
    path.write_text(text)
    return path


def _errors(path: Path) -> list[str]:
    with pytest.raises(LoopValidationError) as raised:
        load_loop(path)
    return [f"{error.path}: {error.message}" for error in raised.value.errors]


def test_issue25_legacy_file_with_parallel_and_on_partial_stays_legacy(tmp_path: Path) -> None:
    fsm = load_loop(_project(tmp_path, LEGACY.format(extra="")))
    state = fsm.states["go"]
    assert fsm.dialect == "legacy"
    assert isinstance(state, ParallelStateConfig)
    assert state.parallel == ParallelConfig(items="a\nb", loop="one")
    assert state.on_partial == "done"
    # what a Temporal payload carries builds the same state again
    assert loop_from_dict(fsm.to_dict(), "legacy").states["go"] == state


def test_issue25_head_file_reads_every_field(tmp_path: Path) -> None:
    fsm = load_loop(_project(tmp_path, HEAD.format(extra="")))
    state = fsm.states["go"]
    assert fsm.dialect == "head" and isinstance(state, HeadStateConfig)
    assert state.parallel == ParallelConfig(
        items=["a", "b"],
        loop="one",
        with_={"depth": 2},
        max_workers=2,
        isolation="worktree",
        fail_mode="fail_fast",
        timeout_seconds=9,
        max_items=5,
    )
    assert state.on_verdicts == {"partial": "done"}
    assert loop_from_dict(fsm.to_dict(), "head").states["go"] == state


@pytest.mark.parametrize("text", [LEGACY, HEAD])
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            '    action: "true"\n',
            "states.go.parallel: a parallel: state runs a child loop per item, "
            "it cannot also have action",
        ),
        (
            "    next: done\n",
            "states.go.parallel: a parallel: state runs a child loop per item, "
            "it cannot also have next",
        ),
    ],
)
def test_issue25_item7_parallel_beside_action_or_next_is_refused(
    tmp_path: Path, text: str, extra: str, message: str
) -> None:
    assert _errors(_project(tmp_path, text.format(extra=extra))) == [message]


def test_issue25_item7_parallel_beside_loop_is_refused(tmp_path: Path) -> None:
    text = HEAD.format(extra="    loop: one\n")
    assert _errors(_project(tmp_path, text)) == [
        "states.go.parallel: a parallel: state runs a child loop per item, it cannot also have loop"
    ]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("max_workers: 0", "states.go.parallel.max_workers: must be an integer >= 1, got 0"),
        (
            "isolation: docker",
            "states.go.parallel.isolation: unknown isolation 'docker' (allowed: none, worktree)",
        ),
        (
            "fail_mode: stop",
            "states.go.parallel.fail_mode: unknown fail_mode 'stop' (allowed: collect, fail_fast)",
        ),
        ("items: 3", "states.go.parallel.items: must be a string or a list, got 3"),
        (
            "workers: 2",
            "states.go.parallel.workers: unknown key 'workers' (allowed: items, loop, with, "
            "max_workers, isolation, fail_mode, timeout_seconds, max_items)",
        ),
    ],
)
def test_issue25_item7_bad_fields_are_one_line_with_their_key_path(
    tmp_path: Path, field: str, message: str
) -> None:
    text = LEGACY.format(extra="").replace("      loop: one\n", f"      loop: one\n      {field}\n")
    if field.startswith("items"):
        text = text.replace('      items: "a\\nb"\n', "")
    assert _errors(_project(tmp_path, text)) == [message]


def test_issue25_item7_items_and_loop_are_required(tmp_path: Path) -> None:
    text = LEGACY.format(extra="").replace("      loop: one\n", "")
    assert _errors(_project(tmp_path, text)) == ["states.go.parallel: missing required key 'loop'"]


def test_issue25_legacy_on_partial_needs_parallel(tmp_path: Path) -> None:
    text = """\
name: plain
initial: go
states:
  go:
    action: "true"
    on_success: done
    on_partial: done
  done:
    terminal: true
"""
    # `on_partial` outside a fan-out is HEAD's verdict route: the file is HEAD then
    fsm = load_loop(_project(tmp_path, text))
    assert fsm.dialect == "head"


def test_issue25_item7_written_items_over_max_items_are_refused(tmp_path: Path) -> None:
    text = HEAD.format(extra="").replace("max_items: 5", "max_items: 1")
    assert _errors(_project(tmp_path, text)) == [
        "states.go.parallel.items: 2 items, more than max_items (1)"
    ]


def test_issue25_item7_nested_parallel_in_the_child_is_refused_by_validate(
    tmp_path: Path,
) -> None:
    path = _project(tmp_path, LEGACY.format(extra=""))
    nested = (
        LEGACY.format(extra="").replace("name: fan", "name: one").replace("loop: one", "loop: x")
    )
    (path.parent / "one.yaml").write_text(nested)
    done = run_cli(tmp_path, "validate", "fan")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].strip() == (
        ".loops/fan.yaml: states.go.parallel.loop: child loop 'one' fans out itself "
        "(states.go.parallel); nested parallel: is not allowed"
    )


def test_issue25_a_missing_child_is_refused(tmp_path: Path) -> None:
    text = LEGACY.format(extra="").replace("loop: one", "loop: nothere")
    assert _errors(_project(tmp_path, text)) == [
        "states.go.parallel.loop: child loop 'nothere' not found next to this file or in .loops/"
    ]


def test_issue25_a_legacy_typo_keeps_the_reference_message(tmp_path: Path) -> None:
    """Our keys are accepted without changing the legacy "allowed" list."""
    text = LEGACY.format(extra="    colour: red\n")
    assert _errors(_project(tmp_path, text)) == [
        "states.go.colour: unknown key 'colour' (allowed: action, evaluate, route, "
        "on_success, on_failure, on_error, next, terminal, capture, timeout, on_maintain, "
        "action_type, max_visits, on_max_visits)"
    ]
