"""Running `parallel:` states on the local engine (issue 25 items 1, 2, 3, 5, 7).

Real loop files in a temporary project, real shell actions, the real persistence: the
items run side by side up to `max_workers`, each child gets `${context.item}`,
`${context.item_index}` and `with:`, `captured.<state>.results` is a JSON list in item
order, and the state routes yes / partial / no, in both dialects.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.persistence import PersistentExecutor, StatePersistence

# Says its item and index (and `with:`'s prefix); fails for the item `bad`; sleeps `nap`.
CHILD = """\
name: one
initial: work
context:
  prefix: none
  nap: "0"
states:
  work:
    action: >-
      sleep ${context.nap};
      echo ${context.prefix}-${context.item}-${context.item_index};
      test ${context.item} != bad
    capture: said
    on_success: done
    on_failure: failed
  done:
    terminal: true
  failed:
    terminal: true
"""

LEGACY_PARENT = """\
name: fan
initial: go
states:
  go:
    parallel:
      items: "{items}"
      loop: one
{block}    on_success: all_yes
    on_partial: mixed
    on_failure: none_yes
    on_error: broken
  all_yes: {{terminal: true}}
  mixed: {{terminal: true}}
  none_yes: {{terminal: true}}
  broken: {{terminal: true}}
"""

HEAD_PARENT = """\
name: fan
description: The same fan-out, written in HEAD's words.
initial: go
states:
  go:
    parallel:
      items: "{items}"
      loop: one
{block}    on_yes: all_yes
    on_partial: mixed
    on_no: none_yes
    on_error: broken
  all_yes: {{terminal: true}}
  mixed: {{terminal: true}}
  none_yes: {{terminal: true}}
  broken: {{terminal: true}}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "one.yaml").write_text(CHILD)
    return tmp_path


def _run(
    root: Path, items: str, block: str = "", parent: str = LEGACY_PARENT
) -> tuple[Any, PersistentExecutor]:
    (root / ".loops" / "fan.yaml").write_text(parent.format(items=items, block=block))
    executor = PersistentExecutor(
        load_loop(root / ".loops" / "fan.yaml"), loops_dir=root / ".loops"
    )
    return executor.run(), executor


def _results(executor: PersistentExecutor) -> list[dict[str, Any]]:
    captured = executor._executor.captured["go"]
    assert captured["output"] == captured["results"]
    results: list[dict[str, Any]] = json.loads(captured["results"])
    return results


def _verdicts(executor: PersistentExecutor) -> list[str]:
    return [entry["verdict"] for entry in _results(executor)]


@pytest.mark.slow
@pytest.mark.parametrize("nap", [2, 1])
def test_issue25_three_items_run_side_by_side(project: Path, nap: int) -> None:
    """Done-when: three items of `nap` seconds with max_workers 3 take about one item's
    time, not three (a generous margin: under two item lengths)."""
    started = time.monotonic()
    result, _ = _run(project, "a\\nb\\nc", f"      max_workers: 3\n      with: {{nap: '{nap}'}}\n")
    elapsed = time.monotonic() - started
    assert result.final_state == "all_yes"
    assert nap <= elapsed < 2 * nap, elapsed


@pytest.mark.slow
def test_issue25_excess_items_queue_behind_max_workers(project: Path) -> None:
    """Four one-second items, two at a time: two rounds, never four at once."""
    started = time.monotonic()
    result, _ = _run(project, "a\\nb\\nc\\nd", "      max_workers: 2\n      with: {nap: '1'}\n")
    elapsed = time.monotonic() - started
    assert result.final_state == "all_yes"
    assert 2 <= elapsed < 3.5, elapsed


def test_issue25_item2_results_are_a_json_list_in_item_order(project: Path) -> None:
    result, executor = _run(project, "a\\nbad\\nc", "      with: {prefix: p}\n")
    assert result.final_state == "mixed"
    results = _results(executor)
    for entry in results:  # the child's whole capture: its output and exit code here
        said = entry["captured"]["said"]
        entry["captured"]["said"] = {key: said[key] for key in ("output", "exit_code")}
    assert results == [
        {
            "item": "a",
            "item_index": 0,
            "verdict": "yes",
            "terminated_by": "terminal",
            "captured": {"said": _said("p-a-0")},
            "error": None,
        },
        {
            "item": "bad",
            "item_index": 1,
            "verdict": "no",
            "terminated_by": "terminal",
            "captured": {"said": _said("p-bad-1", exit_code=1)},
            "error": None,
        },
        {
            "item": "c",
            "item_index": 2,
            "verdict": "yes",
            "terminated_by": "terminal",
            "captured": {"said": _said("p-c-2")},
            "error": None,
        },
    ]


def _said(output: str, exit_code: int = 0) -> dict[str, Any]:
    return {"output": output + "\n", "exit_code": exit_code}


@pytest.mark.parametrize("parent", [LEGACY_PARENT, HEAD_PARENT], ids=["legacy", "head"])
@pytest.mark.parametrize(
    ("items", "final"),
    [("a\\nb", "all_yes"), ("a\\nbad", "mixed"), ("bad\\nbad", "none_yes"), ("", "all_yes")],
)
def test_issue25_routes_yes_partial_no_in_both_dialects(
    project: Path, parent: str, items: str, final: str
) -> None:
    """Every item yes: on_yes; mixed: on_partial; none yes: on_no; no items: yes."""
    result, _ = _run(project, items, parent=parent)
    assert (result.final_state, result.terminated_by) == (final, "terminal")


def test_issue25_a_later_state_reads_the_results(project: Path) -> None:
    parent = LEGACY_PARENT.replace(
        "  all_yes: {{terminal: true}}",
        "  all_yes:\n"
        "    action: \"echo '${{captured.go.results}}' > results.json\"\n"
        "    next: none_yes",
    )
    result, _ = _run(project, "x\\ny", parent=parent)
    assert result.final_state == "none_yes"
    written = json.loads((project / "results.json").read_text())
    assert [(e["item"], e["verdict"]) for e in written] == [("x", "yes"), ("y", "yes")]


def test_issue25_item5_fail_fast_cancels_the_rest(project: Path) -> None:
    """The first non-yes item ends the fan-out: running items are stopped, queued ones
    never start (both `cancelled`), the state routes no."""
    block = "      max_workers: 2\n      fail_mode: fail_fast\n"
    parent = LEGACY_PARENT
    (project / ".loops" / "one.yaml").write_text(
        CHILD.replace("sleep ${context.nap}", "test ${context.item} = bad || sleep 20")
    )
    started = time.monotonic()
    result, executor = _run(project, "bad\\nslow\\nqueued", block, parent)
    assert time.monotonic() - started < 10
    assert result.final_state == "none_yes"
    assert _verdicts(executor) == ["no", "cancelled", "cancelled"]
    assert [e["terminated_by"] for e in _results(executor)] == ["terminal", "signal", "cancelled"]


def test_issue25_timeout_seconds_bounds_each_item(project: Path) -> None:
    started = time.monotonic()
    result, executor = _run(project, "a\\nb", "      timeout_seconds: 1\n      with: {nap: '30'}\n")
    assert time.monotonic() - started < 10
    assert result.final_state == "none_yes"
    assert [(e["verdict"], e["terminated_by"]) for e in _results(executor)] == [
        ("no", "timeout"),
        ("no", "timeout"),
    ]


def test_issue25_item7_max_items_refuses_before_anything_starts(project: Path) -> None:
    parent = LEGACY_PARENT.replace(
        "    on_error: broken\n", "    on_error: broken\n    capture: q\n"
    )
    result, executor = _run(project, "a\\nb\\nc", "      max_items: 2\n", parent)
    assert result.final_state == "broken"
    assert executor._executor.captured["go"]["error"] == (
        "parallel: 3 items, more than max_items (2)"
    )
    assert not (project / ".loops" / ".running" / "fan.logs" / "1-go.branch-0").exists()


def test_issue25_items_from_a_capture_and_a_yaml_list(project: Path) -> None:
    parent = LEGACY_PARENT.replace("initial: go", "initial: queue").replace(
        "states:\n",
        "states:\n  queue:\n    action: \"printf 'q1\\\\nq2\\\\n'\"\n    capture: queue\n"
        "    next: go\n",
    )
    result, executor = _run(project, "${captured.queue.output}", parent=parent)
    assert result.final_state == "all_yes"
    assert [e["item"] for e in _results(executor)] == ["q1", "q2"]
    listed = HEAD_PARENT.replace('items: "{items}"', "items: [l1, '${{context.extra}}']")
    listed = listed.replace("initial: go", "initial: go\ncontext: {{extra: l2}}")
    result, executor = _run(project, "", parent=listed)
    assert [e["item"] for e in _results(executor)] == ["l1", "l2"]


def test_issue25_each_branch_keeps_its_own_logs_and_events(project: Path) -> None:
    _run(project, "a\\nb")
    logs = StatePersistence("fan", project / ".loops").logs_dir
    assert (logs / "1-go.branch-0" / "1-work.log").read_text() == "none-a-0\n"
    assert (logs / "1-go.branch-1" / "1-work.log").read_text() == "none-b-1\n"
    lines = (project / ".loops" / ".running" / "fan.events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    ends = [e for e in events if e["event"] == "parallel_branch_end"]
    assert sorted((e["item_index"], e["verdict"]) for e in ends) == [(0, "yes"), (1, "yes")]
    branch_routes = [e for e in events if e["event"] == "route" and "branch" in e]
    assert sorted((e["branch"], e["branch_item"], e["depth"]) for e in branch_routes) == [
        (0, "a", 1),
        (1, "b", 1),
    ]
