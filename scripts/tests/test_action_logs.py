"""Per-action logs end to end: the executor names them, evaluators read them, persistence
keeps them with the run, and a new run moves the previous run to `.loops/.history/`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from little_loops.fsm.executor import ActionResult, DefaultActionRunner, FSMExecutor
from little_loops.fsm.persistence import PersistentExecutor, StatePersistence
from little_loops.fsm.schema import FSMLoop

DONE = {"terminal": True}
CHATTY = "echo 'ERROR early'; seq 1 2000; echo '{\"fine\": true}' > /dev/null"


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


def small_runner() -> DefaultActionRunner:
    """Keeps 200 bytes in memory: anything longer is cut and read back from its log."""
    return DefaultActionRunner(output_cap=200)


class Events(list[dict[str, Any]]):
    def of(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self if event["event"] == name]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- the executor ---------------------------------------------------------------------


def test_each_action_gets_a_log_named_after_its_iteration_and_state(tmp_path: Path) -> None:
    events = Events()
    loop = make_loop(
        {
            "say hi": {"action": "echo hi", "next": "quiet"},
            "quiet": {"action": "true", "next": "done"},
            "done": DONE,
        }
    )
    FSMExecutor(loop, events.append, log_dir=tmp_path / "demo.logs").run()
    log = tmp_path / "demo.logs" / "1-say_hi.log"
    assert sorted(path.name for path in (tmp_path / "demo.logs").iterdir()) == ["1-say_hi.log"]
    assert log.read_text() == "hi\n"
    completed = events.of("action_complete")
    assert completed[0]["log_path"] == str(log)
    assert "log_path" not in completed[1]  # printed nothing: no log


def test_captures_and_prev_name_the_log_of_their_output(tmp_path: Path) -> None:
    loop = make_loop(
        {
            "talk": {"action": CHATTY, "capture": "talk", "on_success": "after"},
            "after": {"action": "echo '${prev.log_path}'", "capture": "after", "next": "done"},
            "done": DONE,
        }
    )
    executor = FSMExecutor(loop, action_runner=small_runner(), log_dir=tmp_path)
    result = executor.run()
    log = str(tmp_path / "1-talk.log")
    talk = result.captured["talk"]
    assert talk["log_path"] == log
    assert talk["output"].startswith(
        f"[output truncated: 8705 earlier bytes dropped; full output in {log}]\n"
    )
    assert talk["output"].endswith("1999\n2000\n")
    assert result.captured["after"]["output"] == log + "\n"
    assert result.captured["after"]["log_path"] == str(tmp_path / "2-after.log")


def test_evaluators_see_the_whole_output_through_the_log(tmp_path: Path) -> None:
    loop = make_loop(
        {
            "test": {
                "action": CHATTY,
                "evaluate": {"type": "output_contains", "pattern": "^ERROR early"},
                "on_success": "report",
                "on_failure": "missed",
            },
            "report": {
                "action": 'printf \'{"failed": 3, "pad": "%0500d"}\' 0',
                "evaluate": {"type": "output_json", "path": "failed", "target": 3},
                "on_success": "done",
                "on_failure": "missed",
            },
            "missed": DONE,
            "done": DONE,
        }
    )
    events = Events()
    result = FSMExecutor(loop, events.append, small_runner(), log_dir=tmp_path).run()
    assert result.final_state == "done"
    assert [event["verdict"] for event in events.of("evaluate")] == ["success", "success"]


def test_without_a_log_dir_evaluators_see_the_tail() -> None:
    loop = make_loop(
        {
            "test": {
                "action": CHATTY,
                "evaluate": {"type": "output_contains", "pattern": "ERROR early"},
                "on_success": "found",
                "on_failure": "tail_only",
            },
            "found": DONE,
            "tail_only": DONE,
        }
    )
    assert FSMExecutor(loop, action_runner=small_runner()).run().final_state == "tail_only"


def test_a_streaming_runner_that_keeps_no_logs_is_not_asked_to(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []

    class LineRunner:
        supports_streaming = True

        def run(self, action: str, timeout: float, is_slash_command: bool, **kwargs: Any) -> Any:
            calls.append(kwargs)
            return ActionResult("ok\n", "", 0, 1)

    loop = make_loop({"s": {"action": "x", "next": "done"}, "done": DONE})
    FSMExecutor(loop, action_runner=LineRunner(), log_dir=tmp_path).run()
    assert list(calls[0]) == ["on_line"]


# --- persistence ----------------------------------------------------------------------


def test_a_persistent_run_logs_under_running_and_the_state_points_there(in_tmp: Path) -> None:
    loop = make_loop(
        {"talk": {"action": "seq 1 20000", "capture": "talk", "on_success": "done"}, "done": DONE}
    )
    PersistentExecutor(loop).run()
    running = in_tmp / ".loops" / ".running"
    log = running / "demo.logs" / "1-talk.log"
    assert log.read_text() == "".join(f"{n}\n" for n in range(1, 20001))
    state = json.loads((running / "demo.state.json").read_text())
    kept = state["captured"]["talk"]["output"]
    relative = ".loops/.running/demo.logs/1-talk.log"
    cut = len(log.read_text()) - 16 * 1024
    marker = f"[... {cut} bytes truncated; full output in {relative} ...]\n"
    assert kept == marker + log.read_text()[cut:]
    assert state["captured"]["talk"]["log_path"] == relative
    assert state["prev_result"]["log_path"] == relative
    assert (running / "demo.state.json").stat().st_size < 40 * 1024


def test_a_long_stderr_in_the_state_points_to_its_log(in_tmp: Path) -> None:
    action = "seq 1 20000; seq 1 20000 >&2"
    loop = make_loop({"talk": {"action": action, "capture": "talk", "next": "done"}, "done": DONE})
    PersistentExecutor(loop).run()
    state = StatePersistence("demo", in_tmp / ".loops").load_state()
    assert state is not None
    stderr_log = ".loops/.running/demo.logs/1-talk.stderr.log"
    assert f"truncated; full output in {stderr_log} ...]\n" in state.captured["talk"]["stderr"]


def test_a_new_run_moves_the_previous_one_to_the_history(in_tmp: Path) -> None:
    loop = make_loop({"talk": {"action": "echo hi", "next": "done"}, "done": DONE})
    first = PersistentExecutor(loop)
    first.run()
    started = first.persistence.load_state()
    assert started is not None
    handoff_log = in_tmp / ".loops" / ".running" / "demo.handoff.log"
    handoff_log.write_text("a spawned session\n")
    PersistentExecutor(loop).run()
    runs = list((in_tmp / ".loops" / ".history" / "demo").iterdir())
    assert len(runs) == 1
    stamp = started.started_at[:26].replace("-", "").replace(":", "")
    assert runs[0].name == stamp + "Z"
    assert sorted(path.name for path in runs[0].iterdir()) == [
        "demo.events.jsonl",
        "demo.handoff.log",
        "demo.logs",
        "demo.state.json",
    ]
    assert (runs[0] / "demo.logs" / "1-talk.log").read_text() == "hi\n"
    assert not handoff_log.exists()
    running = in_tmp / ".loops" / ".running"
    assert (running / "demo.logs" / "1-talk.log").read_text() == "hi\n"  # the new run's


def test_a_resume_keeps_the_run_and_its_logs(in_tmp: Path) -> None:
    loop = make_loop(
        {
            "talk": {"action": "echo hi", "next": "more"},
            "more": {"action": "echo more", "next": "done"},
            "done": DONE,
        },
        max_iterations=1,
    )
    PersistentExecutor(loop).run()  # stops after one iteration: interrupted
    loop.max_iterations = 5
    PersistentExecutor(loop).resume_checked()
    logs = in_tmp / ".loops" / ".running" / "demo.logs"
    assert sorted(path.name for path in logs.iterdir()) == ["1-talk.log", "2-more.log"]
    assert not (in_tmp / ".loops" / ".history").exists()
