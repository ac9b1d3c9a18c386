"""HEAD retries (spec/ll-head-dialect.md §7.1 `max_retries`/`on_retry_exhausted`, §7.2
`retryable_exit_codes`, §9g `$current`), with the real executor, persistence (resume) and
shell actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from head_engine_helpers import DONE, Recorder, head_loop, run_head

from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.persistence import RUNNING_DIR, PersistentExecutor


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def runs(project: Path, name: str = "runs.txt") -> int:
    path = project / name
    return path.read_text().count("x") if path.exists() else 0


RETRYING = {
    "flaky": {
        "action": "echo x >> runs.txt; exit 1",
        "on_no": "$current",
        "max_retries": 2,
        "on_retry_exhausted": "gave_up",
    },
    "gave_up": {"terminal": True},
}


def test_s7_1_max_retries_n_allows_n_plus_one_runs_then_leaves_without_a_step(
    project: Path,
) -> None:
    result, events = run_head(RETRYING)
    assert (result.terminated_by, result.final_state, result.iterations) == (
        "terminal",
        "gave_up",
        3,
    )
    assert runs(project) == 3
    assert events.of("retry_exhausted") == [
        {"event": "retry_exhausted", "state": "flaky", "retries": 3, "next": "gave_up"}
    ]
    # No route event for the exhaustion, no state_enter for the state not run.
    assert events.routes() == [("flaky", "flaky")] * 3
    assert events.names()[-3:] == ["route", "retry_exhausted", "loop_complete"]
    assert len(events.of("state_enter")) == 3


def test_s7_1_entering_another_state_clears_the_count(project: Path) -> None:
    # flaky fails, succeeds, fails, succeeds...: never more than two runs in a row.
    flip = (
        "n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; echo x >> runs.txt; "
        "[ $((n % 2)) -eq 1 ]"
    )
    states = {
        "flaky": {
            "action": flip,
            "on_no": "$current",
            "on_yes": "check",
            "max_retries": 1,
            "on_retry_exhausted": "gave_up",
        },
        "check": {"action": "[ $(cat n) -ge 6 ]", "on_yes": "done", "on_no": "flaky"},
        "gave_up": DONE,
        "done": DONE,
    }
    executor = FSMExecutor(head_loop(states), event_callback=(events := Recorder()))
    result = executor.run()
    assert result.final_state == "done"
    assert runs(project) == 6
    assert events.of("retry_exhausted") == []
    head = executor.cursor.head
    assert (head.previous_state, head.retry_counts) == ("check", {})


def test_s9g_current_and_templates_in_on_retry_exhausted(project: Path) -> None:
    states: dict[str, Any] = {
        "flaky": {**RETRYING["flaky"], "max_retries": 1, "on_retry_exhausted": "$current"},
    }
    result, events = run_head(states, max_steps=5)
    assert result.terminated_by == "max_steps"
    # run, run, exhausted, then (the count cleared) run, exhausted... up to the cap
    assert [e["next"] for e in events.of("retry_exhausted")] == ["flaky"] * 3
    template = {**RETRYING["flaky"], "on_retry_exhausted": "${context.fallback}"}
    result, events = run_head({"flaky": template, "gave_up": DONE}, context={"fallback": "gave_up"})
    assert result.final_state == "gave_up"


def test_s7_1_counts_survive_a_resume_with_the_previous_state(project: Path) -> None:
    """Stopped by the step cap after two runs, resumed with a higher one: the state runs
    max_retries + 1 times in all, not max_retries + 1 more."""
    states = {**RETRYING, "flaky": {**RETRYING["flaky"], "max_retries": 3}}
    result = PersistentExecutor(head_loop(states, max_steps=2)).run()
    assert (result.terminated_by, runs(project)) == ("max_steps", 2)
    saved = json.loads((project / ".loops" / RUNNING_DIR / "demo.state.json").read_text())
    assert saved["head"]["previous_state"] == "flaky"
    assert saved["head"]["retry_counts"] == {"flaky": 1}
    resumed = PersistentExecutor(head_loop(states, max_steps=20)).resume()
    assert resumed is not None
    assert (resumed.terminated_by, resumed.final_state) == ("terminal", "gave_up")
    assert runs(project) == 4


def test_s7_2_an_error_verdict_with_an_unlisted_exit_code_is_not_retried(
    project: Path,
) -> None:
    fetch = {
        "action": "echo x >> runs.txt; exit ${context.code}",
        "on_error": "$current",
        "retryable_exit_codes": [75],
        "max_retries": 2,
        "on_retry_exhausted": "feed_down",
    }
    states = {"fetch": fetch, "feed_down": DONE}
    result, events = run_head(states, context={"code": "3"})
    assert (result.final_state, runs(project)) == ("feed_down", 1)
    assert events.of("route") == [
        {
            "event": "route",
            "from": "fetch",
            "to": "feed_down",
            "verdict": "error",
            "reason": "not_retryable",
        }
    ]
    # A listed code takes the normal error route (here: again, until exhausted).
    result, events = run_head(states, context={"code": "75"})
    assert (result.final_state, runs(project)) == ("feed_down", 4)
    assert [e["next"] for e in events.of("retry_exhausted")] == ["feed_down"]
    # Without on_retry_exhausted an unlisted code goes to on_error.
    no_exhausted = {
        k: v for k, v in fetch.items() if k not in ("max_retries", "on_retry_exhausted")
    }
    states = {"fetch": {**no_exhausted, "on_error": "feed_down"}, "feed_down": DONE}
    result, events = run_head(states, context={"code": "3"})
    assert events.routes() == [("fetch", "feed_down")]
