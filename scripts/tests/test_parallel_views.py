"""Seeing a `parallel:` fan-out (issue 25 items 3 and 8): the progress lines of `run`
(and `watch`, which feeds the same display), `history --state <branch state>` per branch,
`show` and `show --diagram` drawing the state, its child and its three routes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, run_cli

from little_loops.cli.branch_lines import is_fanout_event
from little_loops.cli.history_lines import readable_lines

CHILD = """\
name: one
initial: work
states:
  work:
    action: "sleep 0.${context.item_index}; test ${context.item} != bad"
    on_success: done
    on_failure: failed
  done: {terminal: true}
  failed: {terminal: true}
"""

PARENT = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nbad\\nc"
      loop: one
      max_workers: 3
    on_success: done
    on_partial: triage
    on_failure: done
  triage:
    action: "true"
    next: done
  done: {terminal: true}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "one.yaml").write_text(CHILD)
    (tmp_path / ".loops" / "fan.yaml").write_text(PARENT)
    return tmp_path


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_issue25_item3_progress_lines_name_each_branch(project: Path) -> None:
    ran = run_cli(project, "run", "fan")
    assert ran.returncode == 0, ran.stderr
    lines = _lines(ran.stdout)
    assert "fan-out of 'one' over 3 items (3 at once)" in lines
    for expected in (
        "[go 1/3] a: work -> sleep 0.0; test a != bad",
        "[go 2/3] bad: work -> sleep 0.1; test bad != bad",
        "[go 3/3] c: work -> sleep 0.2; test c != bad",
        "[go 1/3] a: work -> done (success)",
        "[go 2/3] bad: work -> failed (failure)",
        "[go 3/3] c: work -> done (success)",
        "[go 1/3] a: yes (terminal)",
        "[go 2/3] bad: no (terminal)",
        "[go 3/3] c: yes (terminal)",
        "fan-out done: 2 yes, 1 no, 0 error -> partial",
    ):
        assert expected in lines, (expected, lines)
    # the fan-out's own line, then the route of the state as for any state
    assert any(line.startswith("-> triage (") for line in lines)


def test_issue25_item8_history_of_the_branch_state_shows_each_branch(project: Path) -> None:
    assert run_cli(project, "run", "fan", "-q").returncode == 0
    shown = run_cli(project, "history", "fan", "--state", "work")
    assert shown.returncode == 0, shown.stderr
    lines = sorted(line[9:] for line in shown.stdout.splitlines())  # past the clock
    assert [line.split("  (")[0] for line in lines] == [
        "    [go 1/3] a: work  ✓ success -> done",
        "    [go 2/3] bad: work  ✗ failure -> failed",
        "    [go 3/3] c: work  ✓ success -> done",
    ]


def test_issue25_item8_show_and_diagram_draw_the_fanout(project: Path) -> None:
    shown = run_cli(project, "show", "fan")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    start = lines.index("  go")
    assert lines[start : start + 6] == [
        "  go",
        '    parallel: one per item of "a\\nbad\\nc"',
        "      max_workers 3, isolation none",
        "    success -> done",
        "    failure -> done",
        "    partial -> triage",
    ]
    drawn = run_cli(project, "show", "fan", "--diagram")
    assert drawn.returncode == 0, drawn.stderr
    diagram = drawn.stdout.splitlines()
    assert '    s0[["go<br>[parallel: one per item, 3 at once]"]]' in diagram
    assert '    s0 -->|"success, failure"| s2' in diagram
    assert '    s0 -->|"partial"| s1' in diagram
    assert '    click s0 "#" "ll-loop show one --diagram"' in diagram


def test_issue25_a_sub_loops_worktree_events_are_not_taken_for_a_branchs() -> None:
    """`sub_loop_worktree_attached` says `branch` (a git branch): its lines stay as they
    were; only events that say `parallel_state` are a fan-out's."""
    worktree = {"event": "sub_loop_worktree_attached", "branch": "feature", "path": "/w"}
    assert not is_fanout_event(worktree)
    assert readable_lines([worktree], lambda _: True, fold=True)[0].endswith(
        " sub_loop_worktree_attached branch=feature path=/w"
    )
    tagged = {**worktree, "parallel_state": "go", "branches": 2, "branch_item": "x"}
    tagged["branch"] = 1
    assert is_fanout_event(tagged)
    assert readable_lines([tagged], lambda _: True, fold=True)[0].endswith(
        " [go 2/2] x: sub_loop_worktree_attached path=/w"
    )


GATED_CHILD = """\
name: one
initial: work
states:
  work:
    action: "while [ ! -f gate ]; do sleep 0.05; done; echo ${context.item}"
    next: done
  done: {terminal: true}
"""


def test_issue25_item3_watch_follows_every_branch_to_the_runs_end(project: Path) -> None:
    """`watch` shows each branch's lines and goes on past the items' own ends (events of
    depth 1) to the run's end."""
    (project / ".loops" / "one.yaml").write_text(GATED_CHILD)
    started = run_cli(project, "run", "fan", "--background")
    assert started.returncode == 0, started.stderr
    watcher = subprocess.Popen(
        [str(LL_LOOP), "watch", "fan"],
        cwd=project,
        env=cli_env(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert watcher.stdout is not None
    seen = [watcher.stdout.readline() for _ in range(4)]  # header, caps, blank, `[1/50] go`
    assert seen[0].startswith("Watching loop: fan (pid "), seen
    (project / "gate").touch()  # the items were waiting: watch follows them from here
    out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, out + err
    lines = _lines("".join(seen) + out)
    for index, item in enumerate(("a", "bad", "c")):
        assert f"[go {index + 1}/3] {item}: work -> done" in lines, lines
        assert f"[go {index + 1}/3] {item}: yes (terminal)" in lines, lines
    assert "fan-out done: 3 yes, 0 no, 0 error -> yes" in lines
    assert lines[-1].startswith("Loop completed: done (1 iteration, ")
