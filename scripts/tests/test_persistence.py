"""PersistentExecutor, resume, listing and history, with the real executor and bash actions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from little_loops.fsm.errors import LoopError, StateFileError
from little_loops.fsm.executor import DefaultActionRunner, ExecutionResult
from little_loops.fsm.persistence import (
    RUNNING_DIR,
    STATE_OUTPUT_CAP,
    LoopState,
    NotResumableError,
    PersistentExecutor,
    StatePersistence,
    cap_output,
    get_loop_history,
    list_running_loops,
)
from little_loops.fsm.process.runner import CLAUDE_NOT_FOUND
from little_loops.fsm.schema import FSMLoop

DONE = {"terminal": True}
HOST = socket.gethostname()


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


class CountingPersistence(StatePersistence):
    """The real files, plus a copy of every state written (to count and inspect writes)."""

    def __init__(self, loop_name: str, loops_dir: Path | None = None) -> None:
        super().__init__(loop_name, loops_dir)
        self.saved: list[dict[str, Any]] = []

    def save_state(self, state: LoopState) -> None:
        super().save_state(state)
        self.saved.append(state.to_dict())


@pytest.fixture
def loops_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work inside tmp_path: actions and the default `.loops` are relative to it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path / ".loops"


def state_file(loops_dir: Path) -> Path:
    return loops_dir / RUNNING_DIR / "demo.state.json"


def saved_state(loops_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(state_file(loops_dir).read_text(encoding="utf-8"))
    return data


def events(loops_dir: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "ts"} for e in get_loop_history("demo", loops_dir)]


def event_names(loops_dir: Path) -> list[str]:
    return [event["event"] for event in events(loops_dir)]


def write_state(loops_dir: Path, **fields: Any) -> None:
    """A saved run as another (dead) process would have left it."""
    data: dict[str, Any] = {
        "loop_name": "demo",
        "current_state": "work",
        "iteration": 3,
        "captured": {},
        "prev_result": None,
        "last_result": None,
        "started_at": "2020-01-01T00:00:00.000001+00:00",
        "updated_at": "2020-01-01T00:00:01.000001+00:00",
        "status": "running",
        "pid": dead_pid(),
        "host": HOST,
    }
    data.update(fields)
    files = StatePersistence("demo", loops_dir)
    files.initialize()
    files.state_file.write_text(json.dumps(data), encoding="utf-8")


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# --- a run, its events and its snapshots --------------------------------------------------


def test_completed_run_leaves_events_and_final_state(loops_dir: Path) -> None:
    loop = make_loop({"check": {"action": "echo hi", "on_success": "done"}, "done": DONE})
    result = PersistentExecutor(loop).run()
    assert (result.terminated_by, result.final_state, result.iterations) == ("terminal", "done", 1)
    assert event_names(loops_dir) == [
        "loop_start",
        "state_enter",
        "action_start",
        "action_complete",
        "evaluate",
        "route",
        "loop_complete",
    ]
    state = saved_state(loops_dir)
    assert state == {
        "loop_name": "demo",
        "current_state": "done",
        "iteration": 1,
        "captured": {},
        "prev_result": {
            "output": "hi\n",
            "exit_code": 0,
            "state": "check",
            "log_path": ".loops/.running/demo.logs/1-check.log",
        },
        "last_result": {"verdict": "success", "details": {"exit_code": 0}},
        "started_at": ANY,
        "updated_at": ANY,
        "status": "completed",
        "version": 1,
        "pid": os.getpid(),
        "host": HOST,
        "terminated_by": "terminal",
        "elapsed_ms": result.duration_ms,
        "phase": "routed",
    }
    assert list(state)[:9] == [
        "loop_name",
        "current_state",
        "iteration",
        "captured",
        "prev_result",
        "last_result",
        "started_at",
        "updated_at",
        "status",
    ]


THREE_STATES = {
    "first": {"action": "echo a", "on_success": "second"},
    "second": {"action": "echo b", "next": "done"},
    "done": DONE,
}


def test_one_write_per_transition_plus_the_start_and_the_end(
    loops_dir: Path,
) -> None:
    files = CountingPersistence("demo", loops_dir)
    PersistentExecutor(make_loop(THREE_STATES), files).run()
    written = [(s["current_state"], s["phase"], s["status"], s["iteration"]) for s in files.saved]
    assert written == [
        ("first", "routed", "running", 0),  # at loop_start: the state about to run
        ("second", "routed", "running", 1),
        ("done", "routed", "running", 2),  # `completed` only after `loop_complete`
        ("done", "routed", "completed", 2),  # the final save
    ]
    assert [s.get("terminated_by") for s in files.saved] == [None, None, None, "terminal"]
    assert all(s["pid"] == os.getpid() and s["host"] == HOST for s in files.saved)


def test_a_backoff_sleep_adds_no_write(loops_dir: Path) -> None:
    files = CountingPersistence("demo", loops_dir)
    PersistentExecutor(make_loop(THREE_STATES, backoff=0.01), files).run()
    written = [(s["current_state"], s["phase"], s["status"], s["iteration"]) for s in files.saved]
    assert written == [
        ("first", "routed", "running", 0),
        ("second", "routed", "running", 1),
        ("done", "routed", "running", 2),
        ("done", "routed", "completed", 2),
    ]


def test_a_run_opens_its_events_file_once_and_closes_it_at_the_end(
    loops_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = StatePersistence("demo", loops_dir)
    opened: list[int] = []
    real_open, real_close = os.open, os.close

    def open_and_note(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        if Path(path) == files.events_file:
            opened.append(fd)
        return fd

    closed: list[int] = []

    def close_and_note(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", open_and_note)
    monkeypatch.setattr(os, "close", close_and_note)
    PersistentExecutor(make_loop(THREE_STATES, max_iterations=1), files).run()
    assert len(opened) == 1
    assert opened[0] in closed
    assert event_names(loops_dir)[-1] == "loop_complete"


def test_a_run_that_does_not_end_in_a_terminal_state_gets_a_final_save(loops_dir: Path) -> None:
    files = CountingPersistence("demo", loops_dir)
    PersistentExecutor(make_loop(THREE_STATES, max_iterations=1), files).run()
    written = [(s["current_state"], s["status"], s.get("terminated_by")) for s in files.saved]
    assert written == [
        ("first", "running", None),
        ("second", "running", None),
        ("second", "interrupted", "max_iterations"),
    ]


def test_chained_callback_sees_each_event_after_it_is_saved(loops_dir: Path) -> None:
    seen: list[tuple[str, str | None, str | None]] = []

    def display(event: dict[str, Any]) -> None:
        last_line = StatePersistence("demo", loops_dir).read_events_tail(1)
        assert last_line == [event]
        state = saved_state(loops_dir) if state_file(loops_dir).exists() else {}
        seen.append((event["event"], state.get("current_state"), state.get("phase")))

    loop = make_loop({"check": {"action": "true", "on_success": "done"}, "done": DONE})
    PersistentExecutor(loop, event_callback=display).run()
    assert seen == [
        ("loop_start", "check", "routed"),
        # Entering a state writes nothing: the snapshot taken when it was chosen holds.
        ("state_enter", "check", "routed"),
        ("action_start", "check", "routed"),
        ("action_complete", "check", "routed"),
        ("evaluate", "check", "routed"),
        ("route", "done", "routed"),
        ("loop_complete", "done", "routed"),
    ]


def test_last_result_holds_the_evaluation_details(loops_dir: Path) -> None:
    loop = make_loop(
        {
            "measure": {
                "action": "echo 7",
                "evaluate": {"type": "output_numeric", "operator": "le", "target": 3},
                "on_failure": "done",
            },
            "done": DONE,
        }
    )
    executor = PersistentExecutor(loop)
    executor.run()
    assert saved_state(loops_dir)["last_result"] == {
        "verdict": "failure",
        "details": {"value": 7.0, "target": 3, "operator": "le"},
    }
    assert executor._last_result == executor._executor.last_result


HANDOFF = "echo 'CONTEXT_HANDOFF: do B next'"


@pytest.mark.parametrize(
    ("states", "top", "expected"),
    [
        (
            {"spin": {"action": "true", "on_success": "spin"}, "done": DONE},
            {"max_iterations": 2},
            {"status": "interrupted", "terminated_by": "max_iterations", "iteration": 2},
        ),
        (
            {"check": {"action": "exit 1", "on_success": "done"}, "done": DONE},
            {},
            {
                "status": "failed",
                "terminated_by": "error",
                "error": "No valid transition for verdict 'failure' in state 'check'",
            },
        ),
        (
            {"check": {"action": "echo 'FATAL_ERROR: disk full'", "next": "done"}, "done": DONE},
            {},
            {"status": "failed", "terminated_by": "error", "error": "disk full"},
        ),
        (
            {"check": {"action": "echo 'LOOP_STOP: enough'", "next": "done"}, "done": DONE},
            {},
            {"status": "stopped", "terminated_by": "signal_stop"},
        ),
        (
            {"check": {"action": HANDOFF, "next": "done"}, "done": DONE},
            {},
            {
                "status": "awaiting_continuation",
                "terminated_by": "handoff",
                "continuation_prompt": "do B next",
                "handoff_count": 1,
                "phase": "entered",
            },
        ),
        (
            {"check": {"action": HANDOFF, "next": "done"}, "done": DONE},
            {"on_handoff": "terminate"},
            {"status": "handoff_terminated", "continuation_prompt": "do B next"},
        ),
    ],
)
def test_final_status_follows_how_the_run_ended(
    loops_dir: Path, states: dict[str, Any], top: dict[str, Any], expected: dict[str, Any]
) -> None:
    PersistentExecutor(make_loop(states, **top)).run()
    state = saved_state(loops_dir)
    assert {key: state.get(key) for key in expected} == expected


def test_shutdown_between_states_saves_interrupted(loops_dir: Path) -> None:
    loop = make_loop({"a": {"action": "true", "on_success": "b"}, "b": {"action": "true"}})
    executor = PersistentExecutor(loop)

    def stop_on_route(event: dict[str, Any]) -> None:
        if event["event"] == "route":
            executor.request_shutdown()

    executor.event_callback = stop_on_route
    result = executor.run()
    assert result.terminated_by == "signal"
    state = saved_state(loops_dir)
    assert (state["status"], state["current_state"], state["phase"]) == (
        "interrupted",
        "b",
        "routed",
    )


def test_outputs_in_the_state_file_are_capped(loops_dir: Path) -> None:
    action = "head -c 20000 /dev/zero | tr '\\0' x; echo END"
    loop = make_loop({"big": {"action": action, "capture": "out", "next": "done"}, "done": DONE})
    result = PersistentExecutor(loop).run()
    full = "x" * 20000 + "END\n"
    assert result.captured["out"]["output"] == full
    cut = len(full) - STATE_OUTPUT_CAP
    saved = saved_state(loops_dir)["captured"]["out"]
    log = ".loops/.running/demo.logs/1-big.log"
    assert (
        saved["output"] == f"[... {cut} bytes truncated; full output in {log} ...]\n" + (full[cut:])
    )
    assert saved["log_path"] == log
    assert saved["stderr"] == ""


def test_cap_output_keeps_short_text_whole() -> None:
    assert cap_output("abc", cap=3) == "abc"
    assert cap_output("abcd", cap=3) == "[... 1 bytes truncated ...]\nbcd"


def test_run_clears_the_previous_run_files(loops_dir: Path) -> None:
    write_state(loops_dir, status="completed")
    StatePersistence("demo", loops_dir).append_event({"event": "old"})
    loop = make_loop({"check": {"action": "true", "on_success": "done"}, "done": DONE})
    PersistentExecutor(loop).run()
    assert event_names(loops_dir)[0] == "loop_start"
    assert "old" not in event_names(loops_dir)


def test_keyboard_interrupt_saves_a_resumable_state(loops_dir: Path) -> None:
    loop = make_loop({"a": {"action": "true", "on_success": "b"}, "b": {"action": "true"}})

    def interrupt_at_b(event: dict[str, Any]) -> None:
        if event["event"] == "state_enter" and event["state"] == "b":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        PersistentExecutor(loop, event_callback=interrupt_at_b).run()
    state = saved_state(loops_dir)
    assert {k: state.get(k) for k in ("status", "terminated_by", "current_state", "phase")} == {
        "status": "interrupted",
        "terminated_by": "signal",
        "current_state": "b",
        "phase": "entered",
    }
    assert "error" not in state


def test_system_exit_is_saved_with_its_reason(loops_dir: Path) -> None:
    def leave(event: dict[str, Any]) -> None:
        raise SystemExit(3)

    loop = make_loop({"a": {"action": "true", "on_success": "a"}})
    with pytest.raises(SystemExit):
        PersistentExecutor(loop, event_callback=leave).run()
    state = saved_state(loops_dir)
    assert (state["status"], state["error"]) == ("interrupted", "SystemExit: 3")


def test_spawn_handoff_saves_state_before_the_new_session_starts(
    loops_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    claude.write_text(
        "#!/bin/bash\ncp .loops/.running/demo.state.json seen.json\n"
        'printf "%s" "${@: -1}" > prompt.txt\n'
    )
    claude.chmod(0o755)
    monkeypatch.setenv("LL_CLAUDE_BIN", str(claude))
    loop = make_loop(
        {"check": {"action": HANDOFF, "next": "done"}, "done": DONE}, on_handoff="spawn"
    )
    executor = PersistentExecutor(loop)
    result = executor.run()
    handoff = executor._executor.handoff_result
    assert handoff is not None and handoff.spawned_process is not None
    assert handoff.spawned_process.wait(timeout=10) == 0
    assert result.terminated_by == "handoff"
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert (seen["status"], seen["continuation_prompt"]) == ("awaiting_continuation", "do B next")
    assert (tmp_path / "prompt.txt").read_text() == (
        "Continue loop execution. Run: ll-loop resume demo\n\ndo B next"
    )
    assert events(loops_dir)[-3:] == [
        {
            "event": "handoff_detected",
            "state": "check",
            "iteration": 1,
            "continuation": "do B next",
        },
        {
            "event": "loop_complete",
            "final_state": "check",
            "iterations": 1,
            "terminated_by": "handoff",
        },
        {
            "event": "handoff_spawned",
            "pid": handoff.spawned_process.pid,
            "log": str(loops_dir / RUNNING_DIR / "demo.handoff.log"),
        },
    ]
    assert saved_state(loops_dir)["pid"] == handoff.spawned_process.pid


def _command_line(pid: int) -> list[str]:
    """The process's argv (read again while the kernel still shows it empty after exec)."""
    deadline = time.monotonic() + 5
    while not (raw := Path(f"/proc/{pid}/cmdline").read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return raw.decode().split("\0")[:-1]


def test_spawned_session_starts_only_after_everything_is_written_and_before_spawn_ran(
    loops_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    claude.write_text("#!/bin/sh\ncp .loops/.running/demo.state.json seen.json\n")
    claude.chmod(0o755)
    monkeypatch.setenv("LL_CLAUDE_BIN", str(claude))
    seen_at_release: list[tuple[dict[str, Any], list[str], list[str]]] = []

    def before_spawn() -> None:
        process = executor._executor.handoff_result.spawned_process  # type: ignore[union-attr]
        assert process is not None
        seen_at_release.append(
            (saved_state(loops_dir), event_names(loops_dir), _command_line(process.pid)[:2])
        )

    loop = make_loop(
        {"check": {"action": HANDOFF, "next": "done"}, "done": DONE}, on_handoff="spawn"
    )
    executor = PersistentExecutor(loop, before_spawn=before_spawn)
    executor.run()
    process = executor._executor.handoff_result.spawned_process  # type: ignore[union-attr]
    assert process is not None and process.wait(timeout=10) == 0
    [(state, names, command)] = seen_at_release
    assert (state["status"], state["pid"], state["handoff_count"]) == (
        "awaiting_continuation",
        process.pid,
        1,
    )
    assert names[-3:] == ["handoff_detected", "loop_complete", "handoff_spawned"]
    assert command == ["/bin/sh", "-c"]  # still held while before_spawn runs
    assert json.loads((tmp_path / "seen.json").read_text()) == saved_state(loops_dir)


def test_spawn_without_claude_stays_awaiting_continuation_and_spawns_nothing(
    loops_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin") + ":/usr/bin:/bin")
    calls: list[str] = []
    loop = make_loop(
        {"check": {"action": HANDOFF, "next": "done"}, "done": DONE}, on_handoff="spawn"
    )
    result = PersistentExecutor(loop, before_spawn=lambda: calls.append("x")).run()
    state = saved_state(loops_dir)
    assert (result.terminated_by, result.error) == ("handoff", CLAUDE_NOT_FOUND)
    assert (state["status"], state["continuation_prompt"], state["error"]) == (
        "awaiting_continuation",
        "do B next",
        CLAUDE_NOT_FOUND,
    )
    assert state["pid"] == os.getpid()
    assert "handoff_spawned" not in event_names(loops_dir)
    assert calls == []
    assert not (loops_dir / RUNNING_DIR / "demo.handoff.log").exists()
    # Resumed by hand, it continues where it stopped.
    resumed = PersistentExecutor(
        make_loop({"check": {"action": "true", "next": "done"}, "done": DONE})
    )
    assert resumed.resume_checked().terminated_by == "terminal"


def test_an_empty_payload_pauses_without_prompt_and_resumes(loops_dir: Path) -> None:
    action = 'if [ ${handoff.count} -eq 0 ]; then echo "CONTEXT_HANDOFF:"; else echo ok; fi'
    loop = make_loop({"work": {"action": action, "next": "done"}, "done": DONE})
    result = PersistentExecutor(loop).run()
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "")
    state = saved_state(loops_dir)
    assert (state["status"], state["continuation_prompt"]) == ("awaiting_continuation", "")
    resumed = PersistentExecutor(loop).resume_checked()
    assert (resumed.terminated_by, resumed.iterations) == ("terminal", 2)


ALWAYS_HANDS_OFF = (
    'if [ ${handoff.count} -lt 3 ]; then echo "CONTEXT_HANDOFF: part ${handoff.count}"; '
    "else echo finished; fi"
)


def test_max_continuations_counts_handoffs_across_resumes(loops_dir: Path) -> None:
    def loop(limit: int) -> FSMLoop:
        states = {"work": {"action": ALWAYS_HANDS_OFF, "next": "done"}, "done": DONE}
        return make_loop(states, max_continuations=limit)

    assert PersistentExecutor(loop(2)).run().continuations_exhausted is False
    assert PersistentExecutor(loop(2)).resume_checked().continuations_exhausted is False
    third = PersistentExecutor(loop(2)).resume_checked()
    assert (third.terminated_by, third.continuations_exhausted) == ("handoff", True)
    state = saved_state(loops_dir)
    assert (state["status"], state["handoff_count"], state["continuation_prompt"]) == (
        "awaiting_continuation",
        3,
        "part 2",
    )
    assert state["error"] == "max_continuations (2) reached: this handoff is not continued"
    with pytest.raises(NotResumableError) as refused:
        PersistentExecutor(loop(2)).resume_checked()
    assert str(refused.value) == (
        "loop 'demo' reached max_continuations (2) after 3 handoffs; to continue anyway: "
        "ll-loop resume demo --max-continuations 3"
    )
    assert PersistentExecutor(loop(2)).resume() is None
    done = PersistentExecutor(loop(3)).resume_checked()
    assert (done.terminated_by, done.iterations) == ("terminal", 4)
    assert (saved_state(loops_dir)["handoff_count"], saved_state(loops_dir).get("error")) == (
        3,
        None,
    )


def test_max_continuations_also_bounds_spawns(
    loops_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_CLAUDE_BIN", str(tmp_path / "not-there"))
    states = {"work": {"action": HANDOFF, "next": "done"}, "done": DONE}
    loop = make_loop(states, on_handoff="spawn", max_continuations=1)
    save = PersistentExecutor(loop)
    save.run()  # first handoff: spawn tried (and failed: no claude)
    result = PersistentExecutor(loop).resume_checked()
    assert (result.continuations_exhausted, result.error) == (
        True,
        "max_continuations (1) reached: this handoff is not continued",
    )


# --- construction -------------------------------------------------------------------------


def test_invalid_on_handoff_fails_before_creating_files(loops_dir: Path) -> None:
    loop = make_loop({"done": DONE}, on_handoff="explode")
    with pytest.raises(ValueError):
        PersistentExecutor(loop)
    assert not loops_dir.exists()


def test_construction_wires_persistence_and_executor_arguments(
    loops_dir: Path, tmp_path: Path
) -> None:
    runner = DefaultActionRunner()
    loop = make_loop({"done": DONE})
    executor = PersistentExecutor(loop, action_runner=runner)
    assert executor.persistence.state_file == Path(".loops/.running/demo.state.json")
    assert (loops_dir / RUNNING_DIR).is_dir()
    assert executor._executor.action_runner is runner
    assert executor._executor.signal_detector is executor.signal_detector
    assert executor.handoff_handler.log_dir == Path(".loops/.running")
    elsewhere = PersistentExecutor(loop, loops_dir=tmp_path / "other")
    assert elsewhere.persistence.running_dir == tmp_path / "other" / RUNNING_DIR
    given = StatePersistence("custom", tmp_path / "given")
    assert PersistentExecutor(loop, given).persistence is given
    assert given.running_dir.is_dir()


# --- resume -------------------------------------------------------------------------------


def test_resume_after_handoff_reruns_the_state_with_the_prompt(loops_dir: Path) -> None:
    action = (
        'if [ -e seen ]; then echo "resumed: ${handoff.prompt}"; '
        "else touch seen; echo 'CONTEXT_HANDOFF: finish B'; fi"
    )
    loop = make_loop({"step": {"action": action, "capture": "out", "next": "done"}, "done": DONE})
    PersistentExecutor(loop).run()
    first = saved_state(loops_dir)
    result = PersistentExecutor(loop).resume_checked()
    assert (result.terminated_by, result.iterations) == ("terminal", 2)
    assert result.captured["out"]["output"] == "resumed: finish B\n"
    names = event_names(loops_dir)
    resume_at = names.index("loop_resume")
    assert names[resume_at - 2 :] == [
        "handoff_detected",
        "loop_complete",
        "loop_resume",
        "loop_start",
        "state_enter",
        "action_start",
        "action_complete",
        "route",
        "loop_complete",
    ]
    assert events(loops_dir)[resume_at] == {
        "event": "loop_resume",
        "loop": "demo",
        "from_state": "step",
        "iteration": 1,
        "from_handoff": True,
        "continuation_prompt": "finish B",
    }
    assert events(loops_dir)[resume_at + 2]["iteration"] == 2
    final = saved_state(loops_dir)
    assert final["started_at"] == first["started_at"]
    assert final["resumed_at"] > first["updated_at"]
    assert (final["status"], final["handoff_count"]) == ("completed", 1)
    assert "continuation_prompt" not in final


def test_resume_after_max_iterations_continues_the_count(loops_dir: Path) -> None:
    count = "n=$(( $(cat n 2>/dev/null || echo 0) + 1 )); echo $n > n; [ $n -ge 3 ]"
    states = {"work": {"action": count, "on_success": "done", "on_failure": "work"}, "done": DONE}
    PersistentExecutor(make_loop(states, max_iterations=2)).run()
    assert saved_state(loops_dir)["status"] == "interrupted"
    result = PersistentExecutor(make_loop(states, max_iterations=5)).resume_checked()
    assert (result.terminated_by, result.iterations) == ("terminal", 3)
    entered = [e["iteration"] for e in events(loops_dir) if e["event"] == "state_enter"]
    assert entered == [1, 2, 3]


def test_resume_of_a_state_cut_off_mid_action_reruns_the_same_iteration(loops_dir: Path) -> None:
    action = "if [ -e once ]; then echo again; else touch once; sleep 5; fi"
    loop = make_loop({"slow": {"action": action, "next": "done"}, "done": DONE})
    executor = PersistentExecutor(loop)
    timer = threading.Timer(0.3, executor.request_shutdown)
    timer.start()
    try:
        assert executor.run().terminated_by == "signal"
    finally:
        timer.cancel()
    state = saved_state(loops_dir)
    assert (state["status"], state["phase"], state["iteration"]) == ("interrupted", "entered", 1)
    result = PersistentExecutor(loop).resume_checked()
    assert (result.terminated_by, result.iterations) == ("terminal", 1)
    entered = [e["iteration"] for e in events(loops_dir) if e["event"] == "state_enter"]
    assert entered == [1, 1]


def test_resume_of_a_dead_running_process_restores_everything(loops_dir: Path) -> None:
    write_state(
        loops_dir,
        phase="entered",
        captured={"x": {"output": "cap", "stderr": "", "exit_code": 0, "duration_ms": 1}},
        prev_result={"output": "prev", "exit_code": 0, "state": "before"},
        last_result={"verdict": "partial", "details": {}},
        elapsed_ms=1000,
    )
    action = "echo ${captured.x.output} ${prev.output} ${result.verdict}"
    loop = make_loop({"work": {"action": action, "capture": "y", "next": "done"}, "done": DONE})
    result = PersistentExecutor(loop).resume_checked()
    assert result.captured["y"]["output"] == "cap prev partial\n"
    assert result.iterations == 3
    assert result.duration_ms >= 1000
    assert events(loops_dir)[:3] == [
        {"event": "loop_resume", "loop": "demo", "from_state": "work", "iteration": 3},
        {"event": "loop_start", "loop": "demo"},
        {"event": "state_enter", "state": "work", "iteration": 3},
    ]
    final = saved_state(loops_dir)
    assert final["started_at"] == "2020-01-01T00:00:00.000001+00:00"
    assert final["elapsed_ms"] >= 1000
    assert final["resumed_at"] > "2020"


def test_resume_after_a_route_starts_the_next_iteration(loops_dir: Path) -> None:
    write_state(loops_dir, phase="routed")
    loop = make_loop({"work": {"action": "true", "next": "done"}, "done": DONE})
    assert PersistentExecutor(loop).resume_checked().iterations == 4


def test_running_state_from_another_host_is_resumable(loops_dir: Path) -> None:
    write_state(loops_dir, pid=os.getpid(), host=HOST + "-elsewhere")
    loop = make_loop({"work": {"action": "true", "next": "done"}, "done": DONE})
    assert PersistentExecutor(loop).resume_checked().terminated_by == "terminal"


def test_loop_timeout_counts_time_spent_before_the_resume(loops_dir: Path) -> None:
    write_state(loops_dir, elapsed_ms=5000)
    loop = make_loop({"work": {"action": "true", "next": "done"}, "done": DONE}, timeout=2)
    result = PersistentExecutor(loop).resume_checked()
    assert (result.terminated_by, result.iterations) == ("timeout", 3)
    assert saved_state(loops_dir)["status"] == "failed"


_NEW_RUN = "; start a new run with: ll-loop run demo"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"status": "completed"}, "loop 'demo' already completed" + _NEW_RUN),
        ({"status": "failed", "error": "boom"}, "loop 'demo' failed: boom" + _NEW_RUN),
        ({"status": "failed"}, "loop 'demo' failed" + _NEW_RUN),
        ({"status": "stopped"}, "loop 'demo' was stopped by LOOP_STOP" + _NEW_RUN),
        (
            {"status": "handoff_terminated"},
            "loop 'demo' ended at a handoff (handoff_terminated)" + _NEW_RUN,
        ),
        ({"pid": os.getpid()}, f"loop 'demo' is running (pid {os.getpid()})"),
        ({"pid": os.getpid(), "host": None}, f"loop 'demo' is running (pid {os.getpid()})"),
        ({"status": "paused"}, "loop 'demo' has status 'paused', which cannot be resumed"),
    ],
)
def test_resume_refuses_with_a_one_line_reason(
    loops_dir: Path, fields: dict[str, Any], reason: str
) -> None:
    write_state(loops_dir, **fields)
    before = state_file(loops_dir).read_bytes()
    loop = make_loop({"work": {"action": "true", "next": "done"}, "done": DONE})
    with pytest.raises(NotResumableError) as info:
        PersistentExecutor(loop).resume_checked()
    assert isinstance(info.value, LoopError)
    assert info.value.user_lines() == [reason]
    assert PersistentExecutor(loop).resume() is None
    assert state_file(loops_dir).read_bytes() == before
    assert not (loops_dir / RUNNING_DIR / "demo.events.jsonl").exists()


def test_resume_without_state(loops_dir: Path) -> None:
    loop = make_loop({"done": DONE})
    with pytest.raises(NotResumableError) as info:
        PersistentExecutor(loop).resume_checked()
    assert str(info.value) == "no saved state for 'demo'"
    assert PersistentExecutor(loop).resume() is None


def test_resume_of_a_damaged_state_file(loops_dir: Path) -> None:
    loop = make_loop({"done": DONE})
    executor = PersistentExecutor(loop)
    executor.persistence.state_file.write_text('{"loop_name": ', encoding="utf-8")
    with pytest.raises(StateFileError) as info:
        executor.resume_checked()
    assert info.value.problem == "invalid JSON at line 1, column 15: Expecting value"
    assert executor.resume() is None


def test_resume_returns_the_execution_result(loops_dir: Path) -> None:
    write_state(loops_dir, status="interrupted", current_state="done")
    result = PersistentExecutor(make_loop({"done": DONE})).resume()
    assert isinstance(result, ExecutionResult)
    assert (result.terminated_by, result.final_state, result.iterations) == ("terminal", "done", 3)


# --- listing and history ------------------------------------------------------------------


def test_list_running_loops_reads_every_readable_state(loops_dir: Path) -> None:
    assert list_running_loops() == []
    for name, status in (("b", "completed"), ("a", "running")):
        files = StatePersistence(name, loops_dir)
        files.initialize()
        files.save_state(LoopState(name, "s", 1, {}, None, None, "t", "", status))
    running = loops_dir / RUNNING_DIR
    (running / "broken.state.json").write_text("{")
    (running / ".a.state.json.0a1b2c3d.tmp").write_text("{}")
    (running / "a.events.jsonl").write_text("")
    listed = list_running_loops()
    assert [(s.loop_name, s.status) for s in listed] == [("a", "running"), ("b", "completed")]
    assert list_running_loops(loops_dir) == listed


def test_get_loop_history_reads_the_events_in_order(loops_dir: Path, tmp_path: Path) -> None:
    assert get_loop_history("demo") == []
    files = StatePersistence("demo", tmp_path / "x")
    files.initialize()
    files.append_event({"event": "a"})
    files.append_event({"event": "b"})
    assert get_loop_history("demo", tmp_path / "x") == [{"event": "a"}, {"event": "b"}]
