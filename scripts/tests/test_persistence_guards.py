"""Loop guards in the state file: saved at every step, restored on resume, checked on read."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.errors import StateFileError
from little_loops.fsm.persistence import (
    RUNNING_DIR,
    LoopState,
    PersistentExecutor,
    StatePersistence,
)
from little_loops.fsm.schema import FSMLoop

DONE = {"terminal": True}
STALL_MESSAGE = (
    "state 'check' ended with verdict 'failure' and the same output {count} times in a row; "
    "it said:\n  | FAILED test_login"
)


@pytest.fixture
def loops_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path / ".loops"


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


def guarded(**top: Any) -> FSMLoop:
    """CHECK_AND_FIX with the stall guard asked for (it is off unless set)."""
    return make_loop(CHECK_AND_FIX, **{"stall_threshold": 3, **top})


def saved(loops_dir: Path) -> dict[str, Any]:
    path = loops_dir / RUNNING_DIR / "demo.state.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# The check reads `answer.txt` (absent: the same failure every time) after a fix that
# changes nothing; a person can make it pass by writing the file.
CHECK_AND_FIX = {
    "check": {
        "action": 'if [ -f answer.txt ]; then cat answer.txt; else echo "FAILED test_login"; '
        'echo "assert 500 == 200" >&2; exit 1; fi',
        "on_success": "done",
        "on_failure": "fix",
    },
    "fix": {"action": "echo trying", "next": "check"},
    "done": DONE,
}


def test_a_stalled_run_saves_its_counters_and_errors(loops_dir: Path) -> None:
    result = PersistentExecutor(guarded()).run()
    assert (result.terminated_by, result.iterations) == ("stalled", 5)
    state = saved(loops_dir)
    assert (state["status"], state["terminated_by"], state["current_state"]) == (
        "stalled",
        "stalled",
        "check",
    )
    assert state["error"] == STALL_MESSAGE.format(count=3)
    assert state["stall_streaks"] == {
        "check": {
            "verdict": "failure",
            "fingerprint": state["stall_streaks"]["check"]["fingerprint"],
            "count": 3,
            "preview": "FAILED test_login",
            "since": None,  # the resume re-runs `check` at once: not a round to compare
        }
    }
    entry = {"state": "check", "source": "action", "message": "exit code 1"}
    assert state["errors"] == [
        {**entry, "iteration": n, "stderr_tail": "assert 500 == 200"} for n in (1, 3, 5)
    ]
    assert "visits" not in state  # no state limits its visits


def test_resume_after_a_stall_keeps_the_counters(loops_dir: Path) -> None:
    PersistentExecutor(guarded()).run()
    # Nothing changed: the state that stalled runs once more and stalls again at once.
    again = PersistentExecutor(guarded()).resume_checked()
    assert (again.terminated_by, again.iterations) == ("stalled", 6)
    assert again.error == STALL_MESSAGE.format(count=4)
    assert [entry["iteration"] for entry in again.errors] == [1, 3, 5, 6]
    # A person fixed the cause: the resumed run goes on to the end.
    Path("answer.txt").write_text("all tests pass\n")
    fixed = PersistentExecutor(guarded()).resume_checked()
    assert (fixed.terminated_by, fixed.iterations, fixed.final_state) == ("terminal", 7, "done")
    assert saved(loops_dir)["status"] == "completed"
    assert "stall_streaks" not in saved(loops_dir)  # a success clears the streak


def test_resume_with_a_higher_threshold_continues(loops_dir: Path) -> None:
    PersistentExecutor(guarded()).run()
    loop = guarded(stall_threshold=5)
    result = PersistentExecutor(loop).resume_checked()
    assert (result.terminated_by, result.iterations) == ("stalled", 8)  # streak 3, 4, 5


def test_a_streak_saved_before_the_progress_fields_still_resumes(loops_dir: Path) -> None:
    """State files written before streaks kept `since`/`cycle`/`workspace` load, and the
    saved streak goes on: nothing changed, so the re-run check stalls at once."""
    PersistentExecutor(guarded()).run()
    path = loops_dir / RUNNING_DIR / "demo.state.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    old_streak = {"verdict", "fingerprint", "count", "preview"}
    data["stall_streaks"] = {
        name: {key: value for key, value in streak.items() if key in old_streak}
        for name, streak in data["stall_streaks"].items()
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    again = PersistentExecutor(guarded()).resume_checked()
    assert (again.terminated_by, again.iterations) == ("stalled", 6)
    assert again.error == STALL_MESSAGE.format(count=4)


def test_visits_are_saved_and_restored_for_loops_that_limit_them(loops_dir: Path) -> None:
    states = {
        "fix": {"action": "echo ${state.iteration}", "max_visits": 4, "next": "fix"},
        "done": DONE,
    }
    result = PersistentExecutor(make_loop(states, max_iterations=2)).run()
    assert result.terminated_by == "max_iterations"
    assert saved(loops_dir)["visits"] == {"fix": 2}
    resumed = PersistentExecutor(make_loop(states)).resume_checked()
    assert (resumed.terminated_by, resumed.iterations) == ("stalled", 4)
    assert resumed.error == "state 'fix' was entered 4 times (max_visits: 4)"
    assert saved(loops_dir)["status"] == "stalled"


def test_a_state_cut_off_gives_its_visit_back(loops_dir: Path) -> None:
    states = {
        "fix": {"action": "echo fixed", "max_visits": 2, "next": "done"},
        "done": DONE,
    }
    persistence = StatePersistence("demo", loops_dir)
    persistence.initialize()
    # A run killed while `fix` ran for the second time.
    persistence.save_state(
        LoopState(
            loop_name="demo",
            current_state="fix",
            iteration=2,
            captured={},
            prev_result=None,
            last_result=None,
            started_at="2026-02-17T10:00:00+00:00",
            updated_at="",
            status="running",
            phase="entered",
            visits={"fix": 2},
        )
    )
    result = PersistentExecutor(make_loop(states)).resume_checked()
    assert (result.terminated_by, result.iterations, result.final_state) == ("terminal", 2, "done")
    assert saved(loops_dir)["visits"] == {"fix": 2}


def test_guard_records_round_trip_through_loop_state() -> None:
    state = LoopState(
        loop_name="demo",
        current_state="a",
        iteration=1,
        captured={},
        prev_result=None,
        last_result=None,
        started_at="s",
        updated_at="u",
        status="stalled",
        visits={"a": 1},
        stall_streaks={"a": {"verdict": "failure", "fingerprint": "f", "count": 1, "preview": ""}},
        errors=[{"state": "a", "iteration": 1, "source": "action", "message": "exit code 1"}],
    )
    data = state.to_dict()
    assert list(data)[-3:] == ["visits", "stall_streaks", "errors"]
    assert LoopState.from_dict(json.loads(json.dumps(data))) == state


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("visits", {"a": -1}, "'visits' must be an object of state names to counts, got an object"),
        ("visits", [], "'visits' must be an object of state names to counts, got an array"),
        (
            "stall_streaks",
            {"a": {"verdict": "failure", "count": 1}},
            "'stall_streaks' must be an object of state names to streaks, got an object",
        ),
        (
            "stall_streaks",
            {"a": {"verdict": "failure", "fingerprint": "f", "count": True}},
            "'stall_streaks' must be an object of state names to streaks, got an object",
        ),
        (
            "stall_streaks",
            "x",
            "'stall_streaks' must be an object of state names to streaks, got a string",
        ),
        (
            "errors",
            [{"state": "a", "iteration": "1", "source": "action", "message": "m"}],
            "'errors' must be an array of error records, got an array",
        ),
        ("errors", [None], "'errors' must be an array of error records, got an array"),
        ("errors", {}, "'errors' must be an array of error records, got an object"),
    ],
)
def test_damaged_guard_records_are_reported(
    loops_dir: Path, key: str, value: Any, problem: str
) -> None:
    persistence = StatePersistence("demo", loops_dir)
    persistence.initialize()
    record = {
        "loop_name": "demo",
        "current_state": "a",
        "iteration": 1,
        "started_at": "s",
        "status": "stalled",
        key: value,
    }
    persistence.state_file.write_text(json.dumps(record))
    with pytest.raises(StateFileError) as caught:
        persistence.load_state_checked()
    assert str(caught.value) == f"{persistence.state_file}: {problem}"


def test_checkpoint_git_commits_each_session_of_a_persistent_run(
    loops_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    subprocess.run(["git", "init", "-q"], check=True)
    states = {
        "write": {"action": "echo ${state.iteration} >> notes.txt", "next": "decide"},
        "decide": {"evaluate": {"type": "exit_code"}, "next": "again"},
        "again": {"action": "echo again >> notes.txt", "next": "done"},
        "done": DONE,
    }
    result = PersistentExecutor(make_loop(states, checkpoint="git")).run()
    assert result.terminated_by == "terminal"
    log = subprocess.run(
        ["git", "log", "--format=%s"], capture_output=True, text=True, check=True
    ).stdout
    assert log == (
        "ll-loop demo: checkpoint after 'again' (iteration 3)\n"
        "ll-loop demo: checkpoint after 'write' (iteration 1)\n"
    )
