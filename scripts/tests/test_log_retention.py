"""Per-action logs stay bounded: a run keeps the logs of its last `logs_keep` actions
(default 100; 0 writes none), never deleting a log a capture or `${prev}` still uses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import LL_LOOP, cli_env, write_loop

from little_loops.fsm.persistence import PersistentExecutor
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.store.log_retention import LogRetention
from little_loops.fsm.validation import check_loop_mapping, load_loop

DONE = {"terminal": True}


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


def log_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir()) if folder.exists() else []


def saved_state(loops_dir: Path, name: str = "demo") -> dict[str, Any]:
    data = json.loads((loops_dir / ".running" / f"{name}.state.json").read_text())
    assert isinstance(data, dict)
    return data


# --- LogRetention ---------------------------------------------------------------------


def _write_action(folder: Path, iteration: int, *, stderr: bool = False) -> Path:
    folder.mkdir(exist_ok=True)
    log = folder / f"{iteration}-s.log"
    log.write_text("out\n")
    if stderr:
        (folder / f"{iteration}-s.stderr.log").write_text("err\n")
    return log


def test_the_logs_of_the_last_actions_stay_stderr_logs_included(tmp_path: Path) -> None:
    retention = LogRetention(tmp_path / "logs", keep=2)
    for iteration in range(1, 5):
        retention.add(_write_action(tmp_path / "logs", iteration, stderr=True), in_use=[])
    assert log_names(tmp_path / "logs") == [
        "3-s.log",
        "3-s.stderr.log",
        "4-s.log",
        "4-s.stderr.log",
    ]


def test_logs_in_use_are_spared_whatever_their_age(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    retention = LogRetention(folder, keep=2)
    captured = str(_write_action(folder, 1))
    retention.add(folder / "1-s.log", in_use=[])
    for iteration in range(2, 6):
        retention.add(_write_action(folder, iteration), in_use=[captured])
    assert log_names(folder) == ["1-s.log", "4-s.log", "5-s.log"]
    retention.add(_write_action(folder, 6), in_use=[])  # the capture moved on
    assert log_names(folder) == ["5-s.log", "6-s.log"]


def test_logs_already_in_the_folder_count_oldest_iteration_first(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    for iteration in (9, 10, 11):  # 10 sorts before 9 as text
        _write_action(folder, iteration)
    LogRetention(folder, keep=2).add(_write_action(folder, 12), in_use=[])
    assert log_names(folder) == ["11-s.log", "12-s.log"]


def test_a_state_run_again_under_its_number_is_the_newest(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    retention = LogRetention(folder, keep=2)
    for iteration in (1, 2, 2):
        retention.add(_write_action(folder, iteration), in_use=[])
    retention.add(_write_action(folder, 3), in_use=[])
    assert log_names(folder) == ["2-s.log", "3-s.log"]


# --- runs -----------------------------------------------------------------------------

COUNTING_LOOP = """\
name: many
initial: first
max_iterations: 600
states:
  first:
    action: echo first
    capture: first
    on_success: tick
  tick:
    action: echo tick
    next: tick
  done:
    terminal: true
"""


@pytest.mark.slow
def test_a_600_action_run_keeps_the_last_100_logs_and_those_in_use(tmp_path: Path) -> None:
    write_loop(tmp_path, "many", COUNTING_LOOP)
    run = subprocess.run(
        [str(LL_LOOP), "run", "many", "-q"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 4, run.stderr  # max_iterations
    logs = tmp_path / ".loops/.running/many.logs"
    expected = ["1-first.log", *(f"{n}-tick.log" for n in range(501, 601))]
    assert log_names(logs) == sorted(expected)
    state = saved_state(tmp_path / ".loops", "many")
    # `tick` is a `next` state: `${prev}` is still `first`'s result, as is the capture.
    named = [state["captured"]["first"]["log_path"], state["prev_result"]["log_path"]]
    assert [Path(path).name for path in named] == ["1-first.log", "1-first.log"]
    assert all((tmp_path / path).exists() for path in named)


def test_logs_keep_counts_the_logs_left_by_the_run_before_a_resume(tmp_path: Path) -> None:
    loops_dir = tmp_path / ".loops"
    states = {"tick": {"action": "echo tick", "next": "tick"}}
    PersistentExecutor(make_loop(states, max_iterations=8, logs_keep=3), loops_dir=loops_dir).run()
    logs = loops_dir / ".running" / "demo.logs"
    assert log_names(logs) == ["6-tick.log", "7-tick.log", "8-tick.log"]
    resumed = PersistentExecutor(
        make_loop(states, max_iterations=12, logs_keep=3), loops_dir=loops_dir
    )
    assert resumed.resume_checked().iterations == 12
    assert log_names(logs) == ["10-tick.log", "11-tick.log", "12-tick.log"]


def test_the_log_of_the_action_being_evaluated_is_never_pruned(tmp_path: Path) -> None:
    # 2 MiB of output: the evaluator sees only the last 1 MiB in memory and searches the
    # log for a line at the start, with every earlier log pruned (logs_keep: 1).
    big = "echo NEEDLE; head -c 2097152 /dev/zero | tr '\\0' x"
    states = {
        "warm": {"action": "echo warm", "next": "big"},
        "big": {
            "action": big,
            "evaluate": {"type": "output_contains", "pattern": "^NEEDLE"},
            "on_success": "done",
        },
        "done": DONE,
    }
    loops_dir = tmp_path / ".loops"
    result = PersistentExecutor(make_loop(states, logs_keep=1), loops_dir=loops_dir).run()
    assert result.terminated_by == "terminal"
    assert log_names(loops_dir / ".running" / "demo.logs") == ["2-big.log"]


def test_logs_keep_0_writes_no_logs(tmp_path: Path) -> None:
    loops_dir = tmp_path / ".loops"
    states = {"a": {"action": "echo out; echo err >&2", "capture": "a", "next": "done"}}
    states["done"] = DONE
    result = PersistentExecutor(make_loop(states, logs_keep=0), loops_dir=loops_dir).run()
    assert result.terminated_by == "terminal"
    assert "log_path" not in result.captured["a"]
    assert log_names(loops_dir / ".running" / "demo.logs") == []


def test_without_logs_keep_the_default_keeps_100(tmp_path: Path) -> None:
    loops_dir = tmp_path / ".loops"
    states = {"tick": {"action": "echo tick", "next": "tick"}}
    PersistentExecutor(make_loop(states, max_iterations=103), loops_dir=loops_dir).run()
    names = log_names(loops_dir / ".running" / "demo.logs")
    assert (len(names), "3-tick.log" in names, "4-tick.log" in names) == (100, False, True)


# --- the setting ----------------------------------------------------------------------


def test_logs_keep_is_written_back_only_when_set() -> None:
    states = {"a": DONE}
    assert "logs_keep" not in make_loop(states).to_dict()
    loop = make_loop(states, logs_keep=0)
    assert (loop.logs_keep, loop.to_dict()["logs_keep"]) == (0, 0)
    assert FSMLoop.from_dict(loop.to_dict()) == loop


@pytest.mark.parametrize("value", [-1, 1.5, "100", True])
def test_a_bad_logs_keep_is_one_clear_line(value: Any) -> None:
    data = {"name": "x", "initial": "a", "states": {"a": DONE}, "logs_keep": value}
    errors = check_loop_mapping(data)
    assert [(e.path, e.message.split(",")[0]) for e in errors] == [
        ("logs_keep", "must be an integer >= 0")
    ]


def test_ll_loop_validate_names_a_negative_logs_keep(tmp_path: Path) -> None:
    text = "name: bad\ninitial: a\nlogs_keep: -5\nstates:\n  a:\n    terminal: true\n"
    path = write_loop(tmp_path, "bad", text)
    run = subprocess.run(
        [str(LL_LOOP), "validate", "bad"],
        cwd=tmp_path,
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert f"{path.relative_to(tmp_path)}: logs_keep: must be an integer >= 0, got -5" in (
        run.stdout + run.stderr
    )


def test_a_paradigm_spec_carries_logs_keep(tmp_path: Path) -> None:
    spec = tmp_path / "goal.yaml"
    spec.write_text("paradigm: goal\nname: g\ngoal: be done\ntools: [echo hi]\nlogs_keep: 7\n")
    assert load_loop(spec).logs_keep == 7
