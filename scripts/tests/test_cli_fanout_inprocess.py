"""A `parallel:` fan-out as a person sees it, in this process (docs/parallel.md; issue 25
items 3 and 8): the progress lines `run` prints per branch (`cli.branch_lines`) and the
rows `status` shows of a fan-out under way (`cli.branch_status`).

One branch at a time (`max_workers: 1`) so the branches' lines come in item order.
(test_parallel_views.py runs `ll-loop` as a subprocess, where coverage is not kept.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process, save_state, write_loop

from little_loops.cli.branch_lines import BranchLines, is_fanout_event
from little_loops.cli.branch_status import branch_rows, branch_status_lines

# `bad` fails at `work` and is confirmed by `again`; `spin` goes round work/again until
# the child's max_iterations stops it; any other item is done at once.
CHILD = """\
name: one
initial: work
max_iterations: 3
states:
  work:
    action: "test ${context.item} != bad && test ${context.item} != spin"
    on_success: done
    on_failure: again
  again:
    action: "test ${context.item} = bad"
    on_success: failed
    on_failure: work
  done: {terminal: true}
  failed: {terminal: true}
"""

PARENT = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "a\\nbad\\nspin\\nan-item-whose-name-is-longer-than-thirty"
      loop: one
      max_workers: 1
    on_success: done
    on_partial: triage
    on_failure: done
  triage:
    action: "true"
    next: done
  done: {terminal: true}
"""

LONG = "an-item-whose-name-is-longer-than-thirty"
SHORT = "an-item-whose-name-is-longe..."


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_issue25_item3_run_prints_each_branchs_steps_and_the_fanouts_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "one", CHILD)
    write_loop(tmp_path, "fan", PARENT)

    code, out, err = cli_in_process(capsys, "run", "fan")

    assert (code, err) == (0, "")
    lines = [line.strip() for line in out.splitlines()]
    start = lines.index("fan-out of 'one' over 4 items (1 at once)")
    end = lines.index("fan-out done: 2 yes, 2 no, 0 error -> partial")
    assert lines[start + 1 : end] == [
        "[go 1/4] a: work -> test a != bad && test a != spin",
        "[go 1/4] a: work -> done (success)",
        "[go 1/4] a: yes (terminal)",
        "[go 2/4] bad: work -> test bad != bad && test bad != spin",
        "[go 2/4] bad: work -> again (failure)",
        "[go 2/4] bad: again -> test bad = bad",
        "[go 2/4] bad: again -> failed (success)",
        "[go 2/4] bad: no (terminal)",
        "[go 3/4] spin: work -> test spin != bad && test spin != spin",
        "[go 3/4] spin: work -> again (failure)",
        "[go 3/4] spin: again -> test spin = bad",
        "[go 3/4] spin: again -> work (failure)",
        "[go 3/4] spin: work -> test spin != bad && test spin != spin",
        "[go 3/4] spin: work -> again (failure)",
        "[go 3/4] spin: stopped: max_iterations",
        "[go 3/4] spin: no (max_iterations)",  # a stop of its own is a no
        f"[go 4/4] {SHORT}: work -> test {LONG} != bad && t...",
        f"[go 4/4] {SHORT}: work -> done (success)",
        f"[go 4/4] {SHORT}: yes (terminal)",
    ]
    assert lines[end + 1].startswith("-> triage (")


def test_issue25_item3_status_shows_one_row_per_item_of_a_fanout_under_way(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The run's record (`head.parallel`, as the engine saves it): item 1 finished, item 2
    started (its child at `again`), item 3 queued."""
    record = {
        "state": "go",
        "iteration": 1,
        "loop": "one",
        "items": ["a", "bad", "a   long\nitem that is wrapped over two lines"],
        "results": {"0": {"item": "a", "verdict": "yes", "terminated_by": "terminal"}},
        "places": {"1": [{"current_state": "again", "iteration": 2}]},
    }
    save_state("fan", "interrupted", current_state="go", head={"parallel": record})

    code, out, _ = cli_in_process(capsys, "status", "fan")

    assert code == 0
    lines = out.splitlines()
    start = lines.index("Branches of go: 3 items (1 finished)")
    assert lines[start + 1 : start + 4] == [
        "  [go 1/3] a: yes",
        "  [go 2/3] bad: at again",
        "  [go 3/3] a long item that is wrapped...: queued",
    ]
    assert branch_rows({"parallel": record})[1] == {
        "item_index": 1,
        "item": "bad",
        "status": "started",
        "state": "again",
    }


def test_status_of_a_run_without_a_fanout_has_no_branch_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    save_state("plain", "interrupted")

    assert "Branches of" not in cli_in_process(capsys, "status", "plain")[1]
    assert branch_status_lines(None) == []
    assert branch_status_lines({"parallel": {"state": "go", "items": []}}) == []


def test_a_branch_started_before_any_place_was_saved_has_no_state_yet() -> None:
    record = {"state": "go", "items": ["x"], "results": {}, "places": {"0": [{}]}}

    assert branch_status_lines({"parallel": record}) == [
        "Branches of go: 1 items (0 finished)",
        "  [go 1/1] x: at None",
    ]


def test_fanout_events_without_their_item_or_state_show_question_marks() -> None:
    """Lines built from what an event carries: a branch event seen before its item was
    named shows `?` where the item goes (e.g. `watch` attached mid-run)."""
    lines = BranchLines()
    step = {"event": "route", "parallel_state": "go", "branch": 1, "branches": 2}

    assert lines.line({**step, "from": "work", "to": "done", "verdict": None}) == (
        "[go 2/2] ?: work -> done"
    )
    assert lines.line({**step, "event": "action_start", "action": "make"}) == (
        "[go 2/2] ?: ? -> make"
    )
    assert lines.line({**step, "event": "loop_complete", "terminated_by": "terminal"}) is None
    assert lines.line({**step, "event": "evaluate"}) is None
    assert is_fanout_event(step)
    assert is_fanout_event({"event": "parallel_end"})
    assert not is_fanout_event({"event": "route", "branch": "feature-x"})


def test_the_fanout_record_in_status_json_is_the_saved_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    record = {"state": "go", "items": ["a"], "results": {}, "places": {}}
    save_state("fan", "interrupted", current_state="go", head={"parallel": record})

    data = json.loads(cli_in_process(capsys, "status", "fan", "--json")[1])

    assert data["head"]["parallel"] == record
