"""Resume inside a sub-loop (spec/ll-head-dialect.md §9b, §9f).

A parent stopped, interrupted or killed (SIGKILL) while its child runs is saved with the
child's place in `head.sub_loops`; its resume goes on inside the child at the child's
state: the interrupted action runs again, a finished, routed state never does, then the
parent routes as if nothing happened. Every action appends its name to `marks`, so a
state that ran twice shows.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import LL_LOOP, cli_env

from little_loops.cli.processes import action_groups, wait_until_gone
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.persistence import PersistentExecutor, StatePersistence

# `two` waits (a stand-in for a long action) until `go-fast` exists.
CHILD = """\
name: child
initial: one
states:
  one:
    action: "echo one >> marks"
    next: two
  two:
    action: "echo two >> marks; test -f go-fast || sleep 30"
    next: three
  three:
    action: "echo three >> marks; printf ${context.who}"
    capture: said
    next: done
  done:
    terminal: true
"""

PARENT: dict[str, Any] = {
    "name": "parent",
    "initial": "before",
    "context": {"run_dir": "runs/p/"},
    "states": {
        "before": {"action": "echo before >> marks", "next": "go"},
        "go": {"loop": "child", "with": {"who": "bound"}, "on_yes": "after", "on_no": "failed"},
        "after": {"action": "echo after ${captured.go.said.output} >> marks", "next": "done"},
        "done": {"terminal": True},
        "failed": {"terminal": True},
    },
}

EXPECTED_MARKS = ["before", "one", "two", "two", "three", "after bound"]


def _marks(root: Path) -> list[str]:
    return (root / "marks").read_text().splitlines()


def _wait_for_mark(root: Path, mark: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not ((root / "marks").exists() and mark in _marks(root)):
        assert time.monotonic() < deadline, f"no mark {mark!r}"
        time.sleep(0.01)


def _executor(root: Path, parent: dict[str, Any] = PARENT) -> PersistentExecutor:
    return PersistentExecutor(HeadLoop.from_dict(parent), loops_dir=root / ".loops")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".loops").mkdir()
    (tmp_path / ".loops" / "child.yaml").write_text(CHILD)
    return tmp_path


def _stop_when(executor: PersistentExecutor, root: Path, mark: str) -> threading.Thread:
    def stop() -> None:
        _wait_for_mark(root, mark)
        executor.request_shutdown()

    thread = threading.Thread(target=stop)
    thread.start()
    return thread


def _resume(root: Path, parent: dict[str, Any] = PARENT) -> ExecutionResult:
    (root / "go-fast").touch()
    return _executor(root, parent).resume_checked()


def test_9b_stopped_inside_the_child_saves_its_place(project: Path) -> None:
    """§9b: a stop while the child's `two` runs saves the parent at its `loop:` state,
    entered, with the child's place (the state it runs next, its bound context)."""
    executor = _executor(project)
    thread = _stop_when(executor, project, "two")
    result = executor.run()
    thread.join()
    assert (result.terminated_by, result.final_state) == ("signal", "go")
    state = StatePersistence("parent", project / ".loops").load_state_checked()
    assert state is not None
    assert (state.status, state.current_state, state.phase) == ("interrupted", "go", "entered")
    [record] = state.head["sub_loops"]
    assert record["parent_state"] == "go"
    assert (record["loop_name"], record["loop_path"]) == (
        "child",
        str(project / ".loops/child.yaml"),
    )
    assert (record["current_state"], record["iteration"]) == ("two", 1)
    assert record["context"] == {"who": "bound", "run_dir": "runs/p/"}  # §4.2: run_dir added
    assert record["timeout"] is None


def test_9b_resume_goes_on_inside_the_child(project: Path) -> None:
    """§9b: resume runs the cut-off `two` again, never `one`, then the parent's route and
    write-backs run as if the child had not paused."""
    executor = _executor(project)
    thread = _stop_when(executor, project, "two")
    executor.run()
    thread.join()
    result = _resume(project)
    assert (result.terminated_by, result.final_state) == ("terminal", "done")
    assert _marks(project) == EXPECTED_MARKS
    assert result.captured["go"]["terminated_by"] == "terminal"
    state = StatePersistence("parent", project / ".loops").load_state_checked()
    assert state is not None and state.status == "completed" and "sub_loops" not in state.head
    events = StatePersistence("parent", project / ".loops").read_events()
    resumed = [e for e in events if e["event"] == "loop_start" and e.get("depth") == 1]
    assert len(resumed) == 2  # the child started, then went on after the resume
    enters = [
        (e["state"], e["iteration"], e.get("depth", 0))
        for e in events
        if e["event"] == "state_enter"
    ]
    assert enters == [
        ("before", 1, 0),
        ("go", 2, 0),
        ("one", 1, 1),
        ("two", 2, 1),
        ("go", 2, 0),
        ("two", 2, 1),
        ("three", 3, 1),
        ("after", 3, 0),
    ]


MIDDLE = """\
name: middle
initial: enter
states:
  enter:
    action: "echo middle >> marks"
    next: down
  down:
    loop: child
    with: {who: deep}
    on_yes: done
    on_no: failed
  done:
    terminal: true
  failed:
    terminal: true
"""


def test_9b_resume_lands_two_levels_down(project: Path) -> None:
    """§9b: with a grandchild, the saved record has both levels, outermost first, and the
    resume goes on in the grandchild; nothing finished runs twice at any depth."""
    (project / ".loops" / "middle.yaml").write_text(MIDDLE)
    parent = json.loads(json.dumps(PARENT))
    parent["states"]["go"] = {"loop": "middle", "on_yes": "after", "on_no": "failed"}
    parent["states"]["after"] = {"action": "echo after >> marks", "next": "done"}
    executor = _executor(project, parent)
    thread = _stop_when(executor, project, "two")
    executor.run()
    thread.join()
    state = StatePersistence("parent", project / ".loops").load_state_checked()
    assert state is not None
    records = state.head["sub_loops"]
    assert [(r["parent_state"], r["loop_name"], r["current_state"]) for r in records] == [
        ("go", "middle", "down"),
        ("down", "child", "two"),
    ]
    result = _resume(project, parent)
    assert result.final_state == "done"
    assert _marks(project) == ["before", "middle", "one", "two", "two", "three", "after"]


HANDOFF_CHILD = """\
name: child
initial: one
states:
  one:
    action: "echo one >> marks"
    next: ask
  ask:
    action: "echo ask >> marks; test -f go-fast || echo 'CONTEXT_HANDOFF: carry on'"
    next: done
  done:
    terminal: true
"""


def test_9f_handoff_in_a_child_pauses_the_run_and_reruns_the_state(project: Path) -> None:
    """§9f: a handoff printed by a child pauses the whole run (`on_handoff: pause`) with
    the child's place saved; resume runs the printing state again, not the ones before."""
    (project / ".loops" / "child.yaml").write_text(HANDOFF_CHILD)
    parent = json.loads(json.dumps(PARENT))
    parent["states"]["after"] = {"action": "echo after >> marks", "next": "done"}
    result = _executor(project, parent).run()
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "carry on")
    state = StatePersistence("parent", project / ".loops").load_state_checked()
    assert state is not None
    assert (state.status, state.current_state) == ("awaiting_continuation", "go")
    [record] = state.head["sub_loops"]
    assert record["current_state"] == "ask"
    assert record["handoff_context"] == {"prompt": "carry on", "count": 1, "state": "ask"}
    resumed = _resume(project, parent)
    assert resumed.final_state == "done"
    assert _marks(project) == ["before", "one", "ask", "ask", "after"]


# -- the real ll-loop, stopped, interrupted or killed mid-child --------------------------

PARENT_FILE = """\
name: parent
description: Runs the child between two marks.
initial: before
states:
  before:
    action: "echo before >> marks"
    next: go
  go:
    loop: child
    with: {who: bound}
    on_yes: after
    on_no: failed
  after:
    action: "echo after ${captured.go.said.output} >> marks"
    next: done
  done: {terminal: true}
  failed: {terminal: true}
"""


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LL_LOOP), *args],
        cwd=root,
        env=cli_env(root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _stop_mid_child(root: Path, process: subprocess.Popen[str], how: str) -> None:
    """Stop the run the way `how` says while the child's `two` runs."""
    _wait_for_mark(root, "two")
    groups = action_groups(process.pid)
    if how == "kill -9":
        process.send_signal(signal.SIGKILL)
    elif how == "Ctrl-C":
        process.send_signal(signal.SIGINT)
    else:
        stopped = _cli(root, "stop", "parent")
        assert stopped.returncode == 0, stopped.stderr
    process.communicate(timeout=30)
    expected = -signal.SIGKILL if how == "kill -9" else 130
    assert process.returncode == expected
    for group in groups:  # a killed run leaves its action behind: end it as stop would
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        assert wait_until_gone(group, 10)


@pytest.mark.parametrize("how", ["kill -9", "Ctrl-C", "ll-loop stop"])
def test_9b_ll_loop_resumes_inside_the_child(project: Path, how: str) -> None:
    """§9b: `ll-loop run` stopped mid-child (SIGKILL, Ctrl-C, `ll-loop stop`); its state
    file names the child's place; `ll-loop resume` goes on inside the child: `two` runs
    again, `before` and `one` never do, then the parent routes and reads the child's
    capture."""
    (project / ".loops" / "parent.yaml").write_text(PARENT_FILE)
    process = subprocess.Popen(
        [str(LL_LOOP), "run", "parent", "-q"],
        cwd=project,
        env=cli_env(project),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _stop_mid_child(project, process, how)
    state = StatePersistence("parent", project / ".loops").load_state_checked()
    assert state is not None
    status = "running" if how == "kill -9" else "interrupted"
    assert (state.status, state.current_state, state.phase) == (status, "go", "entered")
    assert [(r["loop_name"], r["current_state"]) for r in state.head["sub_loops"]] == [
        ("child", "two")
    ]
    (project / "go-fast").touch()
    resumed = _cli(project, "resume", "parent", "-q")
    assert resumed.returncode == 0, resumed.stderr
    assert _marks(project) == EXPECTED_MARKS


def test_child_action_logs_have_a_folder_of_their_own(project: Path) -> None:
    """A child's action logs go to `<iteration>-<state>.sub-<depth>/` beside the run's,
    so a child state never overwrites a parent log of the same number and name."""
    (project / "go-fast").touch()
    parent = json.loads(json.dumps(PARENT))
    parent["states"]["before"]["action"] = "echo before >> marks; echo parent-log"
    parent["states"]["go"]["capture"] = "run"
    result = _executor(project, parent).run()
    assert result.final_state == "done"
    logs = StatePersistence("parent", project / ".loops").logs_dir
    assert (logs / "1-before.log").read_text() == "parent-log\n"
    assert (logs / "2-go.sub-1" / "3-three.log").read_text() == "bound"
    assert sorted(path.name for path in (logs / "2-go.sub-1").iterdir()) == ["3-three.log"]


def test_9b_saved_child_outputs_are_cut_like_the_runs(project: Path) -> None:
    """§9b: a child's captures in the saved place are cut to the state file's cap (each
    child route rewrites the file), the whole output staying in the child's log."""
    (project / ".loops" / "child.yaml").write_text(
        CHILD.replace(
            'echo one >> marks"', "echo one >> marks; yes x | tr -d '[:space:]' | head -c 40000\""
        ).replace("  one:\n", "  one:\n    capture: big\n")
    )
    executor = _executor(project)
    thread = _stop_when(executor, project, "two")
    executor.run()
    thread.join()
    state = StatePersistence("parent", project / ".loops").load_state_checked()
    assert state is not None
    big = state.head["sub_loops"][0]["captured"]["big"]
    assert len(big["output"].encode()) < 20_000
    assert big["output"].endswith("x" * 100)
    assert Path(big["log_path"]).stat().st_size == 40_000
