"""State files written the way the reference wrote them load (issue 10 #6).

The reference's `LoopState.from_dict` checked no value types, and its `save_state` wrote the
nine reference keys (no `version`, no pid) indented by two spaces. These files are written
by hand, following fsm-api.md §9, and read back by real `ll-loop` processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import run_cli, write_loop

COUNTER_LOOP = """\
name: counter
initial: a
states:
  a:
    action: 'echo "note=${captured.note}"; echo $(( $(cat n) + 1 )) > n'
    next: b
  b:
    action: 'test $(cat n) -ge 3'
    on_success: done
    on_failure: a
  done:
    terminal: true
"""


def reference_state(**overrides: Any) -> dict[str, Any]:
    """What the reference's `LoopState.to_dict()` wrote for a run of the counter loop."""
    state: dict[str, Any] = {
        "loop_name": "counter",
        "current_state": "a",
        "iteration": 2,
        "captured": {
            "count": {"output": "1\n", "stderr": "", "exit_code": 0, "duration_ms": 4},
        },
        "prev_result": {"output": "", "exit_code": 1, "state": "b"},
        "last_result": {"verdict": "failure", "details": {}},
        "started_at": "2026-01-01T10:00:00.123456+00:00",
        "updated_at": "2026-01-01T10:00:05.654321+00:00",
        "status": "running",
    }
    state.update(overrides)
    return state


def write_state(root: Path, state: dict[str, Any]) -> Path:
    running = root / ".loops" / ".running"
    running.mkdir(parents=True, exist_ok=True)
    path = running / f"{state['loop_name']}.state.json"
    path.write_text(json.dumps(state, indent=2), encoding="utf-8")  # no newline, as it did
    return path


def test_status_reads_a_state_file_the_reference_wrote(tmp_path: Path) -> None:
    write_state(tmp_path, reference_state())
    finished = run_cli(tmp_path, "status", "counter")
    assert (finished.returncode, finished.stderr) == (0, "")
    assert finished.stdout.splitlines()[:7] == [
        "Loop: counter",
        "Status: running",
        "Current state: a",
        "Iteration: 2",
        "Started: 2026-01-01T10:00:00.123456+00:00",
        "Updated: 2026-01-01T10:00:05.654321+00:00",
        "Last verdict: failure",
    ]


def test_status_json_shows_a_string_captured_value_as_it_is(tmp_path: Path) -> None:
    """The reference stored whatever `captured` held; a string there is shown unchanged."""
    write_state(tmp_path, reference_state(captured={"note": "written by hand", "n": 3}))
    finished = run_cli(tmp_path, "status", "counter", "--json")
    assert finished.returncode == 0, finished.stderr
    assert json.loads(finished.stdout)["captured"] == {"note": "written by hand", "n": 3}


@pytest.mark.parametrize(
    ("loose", "iteration"),
    [
        ({"iteration": "2"}, 2),
        ({"iteration": 2.0}, 2),
        ({"captured": None, "updated_at": None, "handoff_count": None}, 2),
        ({"pid": 1.0e0, "elapsed_ms": "1500"}, 2),
    ],
)
def test_loose_values_are_read_as_what_they_mean(
    tmp_path: Path, loose: dict[str, Any], iteration: int
) -> None:
    write_state(tmp_path, reference_state(**loose))
    finished = run_cli(tmp_path, "status", "counter", "--json")
    assert finished.returncode == 0, finished.stderr
    shown = json.loads(finished.stdout)
    assert shown["iteration"] == iteration
    assert isinstance(shown["captured"], dict)


def test_list_running_lists_states_the_reference_wrote(tmp_path: Path) -> None:
    write_state(tmp_path, reference_state(captured={"note": "text"}))
    waiting = reference_state(
        loop_name="handoff", status="awaiting_continuation", continuation_prompt="go on"
    )
    write_state(tmp_path, waiting)
    finished = run_cli(tmp_path, "list", "--running")
    assert (finished.returncode, finished.stderr) == (0, "")
    assert finished.stdout.splitlines() == [
        "Unfinished runs:",
        "  counter: a (iteration 2) - running",
        "  handoff: a (iteration 2) - awaiting_continuation",
    ]


def test_resume_continues_a_state_the_reference_wrote(tmp_path: Path) -> None:
    """A string captured value is usable: `${captured.note}` expands to it on resume."""
    write_loop(tmp_path, "counter", COUNTER_LOOP)
    (tmp_path / "n").write_text("1\n")
    write_state(tmp_path, reference_state(captured={"note": "written by hand"}))
    finished = run_cli(tmp_path, "resume", "counter")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert 'echo "note=written by hand"' in finished.stdout
    assert (tmp_path / "n").read_text() == "3\n"
    saved = json.loads((tmp_path / ".loops/.running/counter.state.json").read_text())
    assert (saved["status"], saved["current_state"]) == ("completed", "done")
    assert saved["captured"]["note"] == "written by hand"


@pytest.mark.parametrize("command", [["status", "counter"], ["resume", "counter"]])
def test_a_value_that_cannot_be_used_is_refused_in_one_clear_line(
    tmp_path: Path, command: list[str]
) -> None:
    write_loop(tmp_path, "counter", COUNTER_LOOP)
    path = write_state(tmp_path, reference_state(iteration="many"))
    finished = run_cli(tmp_path, *command)
    assert finished.returncode == 1
    problem = "'iteration' must be an integer, got a string"
    assert (
        f".loops/.running/counter.state.json: damaged state file: {problem}"
        in (finished.stderr.splitlines()[0])
    )
    assert "Traceback" not in finished.stderr
    assert path.exists()  # refused, not overwritten
