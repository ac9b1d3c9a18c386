"""HEAD throttle and edge revisits (spec/ll-head-dialect.md §7.5), with the real
executor, persistence and shell actions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from head_engine_helpers import DONE, Recorder, head_loop, run_head

from little_loops.cli.exit_codes import exit_code_for
from little_loops.cli.history_lines import readable_lines
from little_loops.cli.summary import summarize
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.persistence import RUNNING_DIR, PersistentExecutor, get_loop_history
from little_loops.fsm.schema import FSMLoop


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def saved(project: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (project / ".loops" / RUNNING_DIR / "demo.state.json").read_text(encoding="utf-8")
    )
    return data


LIMITS = {"normal_max": 1, "warn_max": 2, "hard_max": 3}
# Fails on its first run (to `away`), then succeeds and re-enters itself.
FIRST_FAILS = "n=$(cat n 2>/dev/null || echo 0); echo $((n+1)) > n; [ $n -gt 0 ]"


# --- throttle ---------------------------------------------------------------------------


def test_s7_5_throttle_warns_then_leaves_at_hard_max_without_evaluating(project: Path) -> None:
    states = {
        "work": {
            "action": FIRST_FAILS,
            "on_no": "away",
            "on_yes": "$current",
            "throttle": LIMITS,
            "on_throttle_hard": "cool",
        },
        "away": {"next": "work"},
        "cool": DONE,
    }
    result, events = run_head(states)
    assert result.final_state == "cool"
    # The first visit's run is not counted in the second visit (cleared on leaving).
    assert events.routes() == [
        ("work", "away"),
        ("away", "work"),
        ("work", "work"),
        ("work", "work"),
        ("work", "cool"),
    ]
    assert events.of("throttle_warn") == [
        {
            "event": "throttle_warn",
            "state": "work",
            "count": 2,
            "normal_max": 1,
            "warn_max": 2,
            "hard_max": 3,
        }
    ]
    assert events.of("throttle_hard") == [
        {"event": "throttle_hard", "state": "work", "count": 3, "hard_max": 3, "next": "cool"}
    ]
    assert events.of("route")[-1] == {
        "event": "route",
        "from": "work",
        "to": "cool",
        "reason": "throttle_hard",
    }
    assert len(events.of("evaluate")) == 3  # 4 action runs, the last not evaluated


def test_s7_5_default_limits_and_on_error(project: Path) -> None:
    states = {"work": {"action": "true", "on_yes": "$current", "on_error": "rest"}, "rest": DONE}
    result, events = run_head(states)
    assert (result.final_state, result.iterations) == ("rest", 12)
    assert [e["count"] for e in events.of("throttle_warn")] == [8]
    assert [e["next"] for e in events.of("throttle_hard")] == ["rest"]


def test_s7_5_throttle_stop_past_hard_max_ends_the_run_error(project: Path) -> None:
    states = {"work": {"action": "true", "on_yes": "$current", "throttle": LIMITS}}
    result, events = run_head(states)
    assert (result.terminated_by, result.error) == (
        "error",
        "Throttle stop: state 'work' ran its action 4 times in one visit (throttle.hard_max: 3)",
    )
    assert events.of("throttle_hard") == [
        {"event": "throttle_hard", "state": "work", "count": 3, "hard_max": 3, "next": None}
    ]
    assert events.of("throttle_stop") == [
        {"event": "throttle_stop", "state": "work", "count": 4, "hard_max": 3}
    ]


def test_s7_5_learning_states_skip_the_hard_limits(project: Path) -> None:
    states = {
        "learn": {"action": "true", "on_yes": "$current", "throttle": LIMITS, "type": "learning"}
    }
    result, events = run_head(states, max_steps=6)
    assert result.terminated_by == "max_steps"
    assert [e["event"] for e in events.events if e["event"].startswith("throttle")] == [
        "throttle_warn"
    ]


# --- edge revisits ------------------------------------------------------------------------


PING_PONG = {"ping": {"action": "true", "on_yes": "pong"}, "pong": {"next": "ping"}}


def test_s7_5_an_edge_taken_too_often_ends_cycle_detected_stalled_exit_5(project: Path) -> None:
    loop = head_loop(PING_PONG, max_edge_revisits=2)
    recorder = Recorder()
    result = PersistentExecutor(loop, event_callback=recorder).run()
    message = "cycle detected: edge 'ping->pong' taken 3 times (max_edge_revisits: 2)"
    assert (result.terminated_by, result.error, result.final_state) == (
        "cycle_detected",
        message,
        "pong",
    )
    assert recorder.of("cycle_detected") == [
        {
            "event": "cycle_detected",
            "edge": "ping->pong",
            "from": "ping",
            "to": "pong",
            "count": 3,
            "max": 2,
        }
    ]
    assert (saved(project)["status"], exit_code_for(result.terminated_by)) == ("stalled", 5)
    assert saved(project)["head"]["edge_counts"] == {"ping->pong": 3, "pong->ping": 2}
    summary = summarize(result, loop, "demo")
    assert summary.is_problem
    assert summary.lines[0].endswith(f") - {message}")
    assert summary.lines[1] == (
        "Resume with: ll-loop resume demo (once what repeats is fixed, "
        "or after raising max_edge_revisits)"
    )


def test_s7_5_head_loops_cap_edges_at_100_and_legacy_loops_do_not(project: Path) -> None:
    spin = {"spin": {"on_success": "$current"}}  # a decision state: no process
    result, events = run_head(spin, max_steps=500)
    assert (result.terminated_by, result.iterations) == ("cycle_detected", 101)
    assert events.of("cycle_detected")[0]["max"] == 100
    legacy = FSMLoop.from_dict(
        {"name": "demo", "initial": "spin", "states": spin, "max_iterations": 150}
    )
    assert FSMExecutor(legacy).run().terminated_by == "max_iterations"


def test_s7_5_history_shows_the_throttle_events_and_the_move_they_made(project: Path) -> None:
    states = {
        "work": {
            "action": "true",
            "on_yes": "$current",
            "throttle": LIMITS,
            "on_throttle_hard": "cool",
        },
        "cool": DONE,
    }
    PersistentExecutor(head_loop(states)).run()
    lines = readable_lines(get_loop_history("demo", None), lambda index: True, fold=True)
    # without the clock time, and the visits' durations
    said = [line.split(" ", 1)[1].split("  (", 1)[0] for line in lines]
    assert said[2] == "throttle_warn state=work count=2 normal_max=1 warn_max=2 hard_max=3"
    assert said[3].startswith("work  ") and said[3].endswith(" -> work")  # a verdict's route
    assert said[4] == "throttle_hard state=work count=3 hard_max=3 next=cool"
    assert said[5] == "work  throttle_hard -> cool"
