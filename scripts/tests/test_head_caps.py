"""HEAD caps (spec/ll-head-dialect.md §7.3 `max_steps`/`on_max_steps`, §7.4
`max_iterations`/`on_max_iterations`), with the real executor, persistence and shell
actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from head_engine_helpers import DONE, Recorder, head_loop, run_head

from little_loops.cli.exit_codes import exit_code_for
from little_loops.cli.summary import summarize
from little_loops.fsm.persistence import RUNNING_DIR, NotResumableError, PersistentExecutor


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def saved(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (project / ".loops" / RUNNING_DIR / "demo.state.json").read_text(encoding="utf-8")
    )
    return data


SPIN = {"work": {"action": "echo run >> runs.txt", "on_yes": "$current"}}


def test_s7_3_the_step_cap_ends_the_run_max_steps_resumable_exit_4(project: Path) -> None:
    loop = head_loop(SPIN, max_steps=3)
    result = PersistentExecutor(loop).run()
    assert (result.terminated_by, result.iterations, result.final_state) == (
        "max_steps",
        3,
        "work",
    )
    assert (project / "runs.txt").read_text().count("run") == 3
    assert (saved(project)["status"], exit_code_for(result.terminated_by)) == ("interrupted", 4)
    summary = summarize(result, loop, "demo")
    assert summary.lines[0].startswith("Loop stopped: work (3 iterations, ")
    assert summary.lines[0].endswith(") - max_steps (3) reached")
    assert summary.lines[1:] == ["Resume with: ll-loop resume demo --max-steps 6"]
    assert not summary.is_problem


def test_s7_4_max_iterations_alone_is_the_step_cap(project: Path) -> None:
    result, _ = run_head(SPIN, max_iterations=2)
    assert (result.terminated_by, result.iterations) == ("max_steps", 2)


def test_s7_3_on_max_steps_runs_once_even_when_terminal_then_the_run_ends(project: Path) -> None:
    states = {**SPIN, "report": {"action": "echo report >> report.txt", "terminal": True}}
    loop = head_loop(states, max_steps=2, on_max_steps="report")
    recorder = Recorder()
    result = PersistentExecutor(loop, event_callback=recorder).run()
    assert (result.terminated_by, result.final_state, result.iterations) == (
        "max_steps",
        "work",
        3,
    )
    assert recorder.of("max_steps_summary") == [
        {"event": "max_steps_summary", "summary_state": "report", "iterations": 2}
    ]
    assert (project / "report.txt").read_text() == "report\n"
    assert saved(project)["head"]["summaries_run"] == ["on_max_steps"]
    # A resume with a higher cap goes on; at the cap again the summary does not run twice.
    resumed = PersistentExecutor(head_loop(states, max_steps=5, on_max_steps="report"))
    result = resumed.resume()
    assert result is not None
    assert (result.terminated_by, result.iterations) == ("max_steps", 5)
    assert (project / "report.txt").read_text() == "report\n"
    assert (project / "runs.txt").read_text().count("run") == 4


def test_s7_3_after_the_summary_the_run_stands_where_the_cap_stopped_it(project: Path) -> None:
    states = {
        **SPIN,
        "summarise": {"action": "echo summary > summary.txt", "next": "done"},
        "done": DONE,
    }
    result, events = run_head(states, max_steps=2, on_max_steps="summarise")
    assert (result.terminated_by, result.final_state) == ("max_steps", "work")
    assert (project / "summary.txt").read_text() == "summary\n"
    assert events.of("route")[-2:] == [
        {"event": "route", "from": "summarise", "to": "done"},
        {"event": "route", "from": "done", "to": "work", "reason": "max_steps"},
    ]


MAINTAINED = {
    "work": {"action": "echo pass >> passes.txt", "on_yes": "done"},
    "done": DONE,
    "wrap": {"action": "echo wrapped > wrap.txt", "next": "done"},
}


def test_s7_4_the_pass_cap_with_max_steps_runs_on_max_iterations_once(project: Path) -> None:
    loop = head_loop(
        MAINTAINED, maintain=True, max_steps=50, max_iterations=2, on_max_iterations="wrap"
    )
    recorder = Recorder()
    result = PersistentExecutor(loop, event_callback=recorder).run()
    assert result.terminated_by == "max_iterations_reached"
    assert (project / "passes.txt").read_text() == "pass\npass\n"
    assert (project / "wrap.txt").read_text() == "wrapped\n"
    assert recorder.of("max_iterations_reached_summary") == [
        {
            "event": "max_iterations_reached_summary",
            "summary_state": "wrap",
            "iteration_count": 2,
        }
    ]
    head = saved(project)["head"]
    assert (head["passes"], head["summaries_run"]) == (2, ["on_max_iterations"])
    assert (saved(project)["status"], exit_code_for(result.terminated_by)) == ("interrupted", 4)
    summary = summarize(result, loop, "demo")
    assert summary.lines[0].endswith(") - max_iterations (2 passes) reached")
    assert summary.lines[1] == "Resume with: ll-loop resume demo -n 4"
    # Without maintain the pass cap never fires (and max_iterations is not a step cap).
    result, events = run_head(MAINTAINED, max_steps=50, max_iterations=1)
    assert (result.terminated_by, result.final_state) == ("terminal", "done")
    assert "max_iterations_reached_summary" not in events.names()


def test_s7_3_a_resume_at_the_same_step_cap_is_refused_with_the_way_on(project: Path) -> None:
    PersistentExecutor(head_loop(SPIN, max_steps=2)).run()
    with pytest.raises(NotResumableError) as refused:
        PersistentExecutor(head_loop(SPIN, max_steps=2)).resume_checked()
    assert str(refused.value) == (
        "loop 'demo' reached max_steps (2 steps done); to go on: ll-loop resume demo --max-steps 4"
    )


def test_s9g_current_as_on_max_steps_summarises_in_the_state_the_cap_stopped(
    project: Path,
) -> None:
    states = {"work": {"action": "echo run >> runs.txt", "on_yes": "$current"}}
    result, events = run_head(states, max_steps=2, on_max_steps="$current")
    assert (result.terminated_by, result.iterations) == ("max_steps", 3)
    assert events.of("max_steps_summary") == [
        {"event": "max_steps_summary", "summary_state": "work", "iterations": 2}
    ]
    assert (project / "runs.txt").read_text().count("run") == 3
