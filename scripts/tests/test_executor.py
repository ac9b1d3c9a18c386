"""FSMExecutor with real bash actions (DefaultActionRunner) and a fake `claude` script."""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from little_loops.fsm.evaluators import LLM_DISABLED_MESSAGE
from little_loops.fsm.executor import (
    ActionResult,
    DefaultActionRunner,
    ExecutionResult,
    FSMExecutor,
)
from little_loops.fsm.handoff_handler import HandoffBehavior, HandoffHandler
from little_loops.fsm.judging.llm_judge import MISSING_KEY_MESSAGE
from little_loops.fsm.process.claude_refusal import claude_not_found
from little_loops.fsm.process.runner import CLAUDE_NOT_FOUND
from little_loops.fsm.schema import FSMLoop
from little_loops.fsm.signal_detector import SignalDetector

DONE = {"terminal": True}


class Recorder:
    """Event callback that keeps every event."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [event["event"] for event in self.events]

    def without_ts(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in event.items() if k != "ts"} for event in self.events]

    def of(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.without_ts() if e["event"] == name]


def make_loop(states: dict[str, Any], **top: Any) -> FSMLoop:
    data = {"name": "demo", "initial": next(iter(states)), "states": states, **top}
    return FSMLoop.from_dict(data)


def run_loop(states: dict[str, Any], **top: Any) -> tuple[ExecutionResult, Recorder, FSMExecutor]:
    recorder = Recorder()
    executor = FSMExecutor(make_loop(states, **top), event_callback=recorder)
    return executor.run(), recorder, executor


def counter_action(path: Path, succeed_at: int) -> str:
    """A shell action that fails until it has run `succeed_at` times."""
    count = f"n=$(( $(cat {path} 2>/dev/null || echo 0) + 1 ))"
    return f"{count}; echo $n > {path}; [ $n -ge {succeed_at} ]"


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `claude` on PATH that prints its prompt; no API key in the environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text('#!/bin/bash\necho "claude did: ${@: -1}"\n')
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("ANTHROPIC_PROFILE", raising=False)
    # The SDK also looks for credentials under ~/.config: give it an empty home.
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return claude


# -- results and events ---------------------------------------------------------------


def test_execution_result_to_dict() -> None:
    plain = ExecutionResult("done", 2, "terminal", 15, {})
    assert plain.to_dict() == {
        "final_state": "done",
        "iterations": 2,
        "terminated_by": "terminal",
        "duration_ms": 15,
        "captured": {},
    }
    full = ExecutionResult("s", 1, "handoff", 1, {"x": {}}, "e", True, "go on", "enough")
    assert full.to_dict() == {
        "final_state": "s",
        "iterations": 1,
        "terminated_by": "handoff",
        "duration_ms": 1,
        "captured": {"x": {}},
        "error": "e",
        "handoff": True,
        "continuation_prompt": "go on",
        "stop_reason": "enough",
    }


def test_simple_run_emits_every_event_in_order() -> None:
    result, recorder, executor = run_loop(
        {"check": {"action": "echo ok", "on_success": "done"}, "done": DONE}
    )
    assert (result.final_state, result.iterations, result.terminated_by) == ("done", 1, "terminal")
    assert (result.error, result.handoff, result.continuation_prompt) == (None, False, None)
    assert recorder.without_ts() == [
        {"event": "loop_start", "loop": "demo"},
        {"event": "state_enter", "state": "check", "iteration": 1},
        {"event": "action_start", "action": "echo ok"},
        {"event": "action_complete", "exit_code": 0, "duration_ms": ANY},
        {"event": "evaluate", "type": "default", "verdict": "success", "exit_code": 0},
        {"event": "route", "from": "check", "to": "done", "verdict": "success"},
        {
            "event": "loop_complete",
            "final_state": "done",
            "iterations": 1,
            "terminated_by": "terminal",
        },
    ]
    for event in recorder.events:
        assert datetime.fromisoformat(event["ts"]).utcoffset() is not None
        assert event["ts"].endswith("+00:00")
    assert executor.started_at.endswith("+00:00")
    assert executor.start_time_ms > 0
    assert result.captured is executor.captured


def test_default_runner_and_callback() -> None:
    executor = FSMExecutor(make_loop({"a": {"next": "done"}, "done": DONE}))
    assert isinstance(executor.action_runner, DefaultActionRunner)
    assert executor.run().terminated_by == "terminal"
    assert (executor.current_state, executor.iteration) == ("done", 1)


# -- routing --------------------------------------------------------------------------


@pytest.mark.parametrize(("exit_code", "expected"), [(0, "win"), (1, "lose"), (2, "broken")])
def test_shorthand_routes(exit_code: int, expected: str) -> None:
    states = {
        "check": {
            "action": f"exit {exit_code}",
            "on_success": "win",
            "on_failure": "lose",
            "on_error": "broken",
        },
        "win": DONE,
        "lose": DONE,
        "broken": DONE,
    }
    assert run_loop(states)[0].final_state == expected


def route_states(action: str, route: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "check": {"action": action, "route": route, **extra},
        "exact": DONE,
        "err": DONE,
        "other": DONE,
    }


def test_route_table_exact_verdict_wins() -> None:
    states = route_states("exit 2", {"error": "exact", "_error": "err", "_": "other"})
    assert run_loop(states)[0].final_state == "exact"


def test_error_route_beats_default_for_the_error_verdict() -> None:
    states = route_states("exit 2", {"success": "exact", "_error": "err", "_": "other"})
    assert run_loop(states)[0].final_state == "err"


def test_default_route_takes_other_verdicts() -> None:
    states = route_states("exit 1", {"success": "exact", "_error": "err", "_": "other"})
    assert run_loop(states)[0].final_state == "other"


def test_route_table_takes_precedence_over_shorthand() -> None:
    states = route_states("exit 1", {"success": "exact"}, on_failure="other")
    result, recorder, _ = run_loop(states)
    assert (result.terminated_by, result.final_state) == ("error", "check")
    # Issue 27: the reference's bare text; the detail people read is `error_detail`.
    assert result.error == "No valid transition"
    assert result.error_detail == "No valid transition for verdict 'failure' in state 'check'"
    assert recorder.of("loop_complete") == [
        {
            "event": "loop_complete",
            "final_state": "check",
            "iterations": 1,
            "terminated_by": "error",
            "error": "No valid transition",
            "error_detail": "No valid transition for verdict 'failure' in state 'check'",
        }
    ]


def test_current_token_in_a_route_repeats_the_state(tmp_path: Path) -> None:
    states = {
        "retry": {
            "action": counter_action(tmp_path / "n", 3),
            "on_success": "done",
            "on_failure": "$current",
        },
        "done": DONE,
    }
    result, recorder, _ = run_loop(states)
    assert (result.final_state, result.iterations) == ("done", 3)
    assert [e["to"] for e in recorder.of("route")] == ["retry", "retry", "done"]


def test_current_token_in_next(tmp_path: Path) -> None:
    result, recorder, _ = run_loop(
        {"spin": {"action": "true", "next": "$current"}}, max_iterations=3
    )
    assert (result.terminated_by, result.final_state, result.iterations) == (
        "max_iterations",
        "spin",
        3,
    )
    assert recorder.of("route")[0] == {"event": "route", "from": "spin", "to": "spin"}


def test_dynamic_target_uses_the_new_result() -> None:
    states = {
        "pick": {
            "action": """echo '{"next": "fix"}'""",
            "evaluate": {"type": "output_json", "path": "next", "operator": "eq", "target": "fix"},
            "route": {"success": "${result.details.value}"},
        },
        "fix": DONE,
    }
    result, recorder, _ = run_loop(states)
    assert result.final_state == "fix"
    assert recorder.of("route") == [
        {"event": "route", "from": "pick", "to": "fix", "verdict": "success"}
    ]


def test_dynamic_target_from_context() -> None:
    states = {"a": {"next": "${context.where}"}, "b": DONE}
    assert run_loop(states, context={"where": "b"})[0].final_state == "b"


def test_dynamic_target_naming_an_unknown_state_ends_the_run() -> None:
    states = {"a": {"action": "true", "on_success": "${context.where}"}, "b": DONE}
    result, _, _ = run_loop(states, context={"where": "nowhere"})
    assert (result.terminated_by, result.final_state) == ("error", "a")
    assert result.error == "Route target '${context.where}' resolved to unknown state 'nowhere'"


def test_dynamic_target_that_cannot_be_interpolated_ends_the_run() -> None:
    result, _, _ = run_loop({"a": {"next": "${context.missing}"}, "b": DONE})
    assert result.error == (
        "Route target '${context.missing}' could not be resolved: "
        "Path 'missing' not found in context"
    )


def test_static_target_that_is_not_a_state_ends_the_run() -> None:
    result, _, _ = run_loop({"a": {"next": "ghost"}, "b": DONE})
    assert (result.terminated_by, result.error) == (
        "error",
        "Route target 'ghost' is not a state of this loop",
    )


def test_unknown_current_state_ends_the_run() -> None:
    executor = FSMExecutor(make_loop({"a": DONE}))
    executor.current_state = "ghost"
    result = executor.run()
    assert (result.terminated_by, result.error) == ("error", "State 'ghost' is not in the loop")


# -- execution errors become the error verdict -----------------------------------------


def test_missing_claude_routes_through_on_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_CLAUDE_BIN", str(tmp_path / "no-such-claude"))
    not_found = claude_not_found(str(tmp_path / "no-such-claude"))
    states = {"ask": {"action": "/ll:check", "on_error": "recover"}, "recover": DONE}
    result, recorder, _ = run_loop(states)
    assert (result.terminated_by, result.final_state) == ("terminal", "recover")
    assert recorder.without_ts()[2:6] == [
        {"event": "action_start", "action": "/ll:check"},
        {
            "event": "action_complete",
            "exit_code": 127,
            "duration_ms": ANY,
            "error": not_found,
        },
        {"event": "evaluate", "type": "default", "verdict": "error", "error": not_found},
        {"event": "route", "from": "ask", "to": "recover", "verdict": "error"},
    ]


def test_missing_claude_without_an_error_route_ends_the_run_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LL_CLAUDE_BIN", str(tmp_path / "no-such-claude"))
    result, recorder, _ = run_loop(
        {"ask": {"action": "/ll:check", "on_success": "done"}, "done": DONE}
    )
    not_found = claude_not_found(str(tmp_path / "no-such-claude"))
    assert (result.terminated_by, result.error) == ("error", not_found)
    assert recorder.of("loop_complete")[0]["error"] == not_found


def test_action_timeout_routes_through_error_route() -> None:
    states = {
        "slow": {
            "action": "echo partial; sleep 30",
            "timeout": 0.3,
            "capture": "slow",
            "route": {"success": "done", "_error": "recover"},
        },
        "recover": DONE,
        "done": DONE,
    }
    started = time.monotonic()
    result, recorder, _ = run_loop(states)
    assert time.monotonic() - started < 2.0
    assert result.final_state == "recover"
    assert recorder.of("evaluate") == [
        {
            "event": "evaluate",
            "type": "default",
            "verdict": "error",
            "error": "Action timed out after 0.3s",
        }
    ]
    assert result.captured["slow"] == {
        "output": "partial\n",
        "stderr": "Action timed out after 0.3s",
        "exit_code": 124,
        "duration_ms": ANY,
    }


def test_action_that_cannot_be_interpolated_gets_the_error_verdict() -> None:
    states = {"a": {"action": "echo ${context.missing}", "on_error": "b"}, "b": DONE}
    result, recorder, _ = run_loop(states)
    assert result.final_state == "b"
    assert "action_start" not in recorder.names()
    assert recorder.of("evaluate") == [
        {
            "event": "evaluate",
            "type": "default",
            "verdict": "error",
            "error": "Cannot interpolate action: Path 'missing' not found in context",
        }
    ]


def test_execution_error_in_a_next_state_uses_on_error() -> None:
    states = {
        "a": {"action": "echo ${context.missing}", "next": "b", "on_error": "c"},
        "b": DONE,
        "c": DONE,
    }
    result, recorder, executor = run_loop(states)
    assert result.final_state == "c"
    assert executor.prev_result is None  # next states never set prev
    assert recorder.of("route") == [{"event": "route", "from": "a", "to": "c", "verdict": "error"}]


def test_execution_error_in_a_next_state_without_error_route_ends_the_run() -> None:
    result, _, _ = run_loop({"a": {"action": "x", "timeout": 0.2, "next": "b"}, "b": DONE})
    assert result.final_state == "b"  # a normal failure (bash exit 127) just follows next
    result, _, _ = run_loop({"a": {"action": "echo ${context.nope}", "next": "b"}, "b": DONE})
    assert (result.terminated_by, result.error) == (
        "error",
        "Cannot interpolate action: Path 'nope' not found in context",
    )


def test_evaluator_that_raises_gives_the_error_verdict() -> None:
    states = {
        "a": {
            "action": "echo 5",
            "evaluate": {"type": "output_contains", "pattern": 5},
            "on_error": "b",
        },
        "b": DONE,
    }
    result, recorder, _ = run_loop(states)
    assert result.final_state == "b"
    assert recorder.of("evaluate")[0]["error"] == (
        "Evaluation failed: TypeError: argument of type 'int' is not iterable"
    )


# -- limits, timeouts, backoff, shutdown ----------------------------------------------


def test_max_iterations() -> None:
    result, recorder, _ = run_loop({"spin": {"action": "true", "next": "spin"}}, max_iterations=2)
    assert (result.terminated_by, result.iterations, result.final_state) == (
        "max_iterations",
        2,
        "spin",
    )
    assert recorder.names().count("state_enter") == 2


def test_terminal_reached_on_the_last_iteration_is_terminal() -> None:
    result, _, _ = run_loop(
        {"a": {"action": "true", "next": "done"}, "done": DONE}, max_iterations=1
    )
    assert (result.terminated_by, result.iterations) == ("terminal", 1)


def test_zero_max_iterations_stops_before_anything() -> None:
    result, recorder, _ = run_loop({"a": {"action": "true", "next": "a"}}, max_iterations=0)
    assert (result.terminated_by, result.iterations) == ("max_iterations", 0)
    assert recorder.names() == ["loop_start", "loop_complete"]


def test_loop_timeout_is_checked_between_states() -> None:
    result, _, _ = run_loop({"a": {"action": "sleep 0.2", "next": "a"}}, timeout=0.5)
    assert result.terminated_by == "timeout"
    assert 2 <= result.iterations <= 4


def test_loop_timeout_cuts_a_long_action() -> None:
    started = time.monotonic()
    result, recorder, _ = run_loop({"a": {"action": "sleep 30", "on_error": "a"}}, timeout=0.4)
    assert time.monotonic() - started < 2.0
    assert (result.terminated_by, result.iterations, result.error) == ("timeout", 1, None)
    assert recorder.names()[-2:] == ["action_complete", "loop_complete"]
    assert recorder.of("action_complete")[0]["error"].startswith("Action timed out after 0.")


def test_time_spent_before_a_resume_counts_toward_the_loop_timeout() -> None:
    executor = FSMExecutor(make_loop({"a": {"action": "true", "next": "a"}}, timeout=5))
    executor.start_time_ms = int(time.time() * 1000) - 6000
    executor.started_at = "2024-01-01T00:00:00+00:00"
    result = executor.run()
    assert (result.terminated_by, result.iterations) == ("timeout", 0)
    assert 6000 <= result.duration_ms < 7000
    assert executor.started_at == "2024-01-01T00:00:00+00:00"


def test_resumed_clock_reaches_interpolation() -> None:
    states = {"a": {"action": "echo ${loop.elapsed}", "capture": "a", "next": "done"}, "done": DONE}
    executor = FSMExecutor(make_loop(states))
    executor.start_time_ms = int(time.time() * 1000) - 125_000
    assert executor.run().captured["a"]["output"] == "2m 5s\n"


def test_backoff_sleeps_between_iterations_only() -> None:
    started = time.monotonic()
    result, _, _ = run_loop(
        {
            "a": {"action": "true", "next": "b"},
            "b": {"action": "true", "next": "done"},
            "done": DONE,
        },
        backoff=0.4,
    )
    elapsed = time.monotonic() - started
    assert result.terminated_by == "terminal"
    assert 0.4 <= elapsed < 0.8  # one sleep: none before the terminal state


def test_backoff_is_skipped_after_the_last_iteration() -> None:
    started = time.monotonic()
    result, _, _ = run_loop({"a": {"action": "true", "next": "a"}}, backoff=5, max_iterations=1)
    assert result.terminated_by == "max_iterations"
    assert time.monotonic() - started < 1.0


def test_backoff_never_outlasts_the_loop_timeout() -> None:
    started = time.monotonic()
    result, _, _ = run_loop({"a": {"action": "true", "next": "a"}}, backoff=30, timeout=0.3)
    assert result.terminated_by == "timeout"
    assert time.monotonic() - started < 1.0


def test_shutdown_wakes_the_backoff_sleep() -> None:
    executor = FSMExecutor(make_loop({"a": {"action": "true", "next": "a"}}, backoff=30))
    timer = threading.Timer(0.3, executor.request_shutdown)
    timer.start()
    started = time.monotonic()
    result = executor.run()
    timer.join()
    assert time.monotonic() - started < 2.0
    assert (result.terminated_by, result.iterations) == ("signal", 1)


def test_shutdown_cancels_the_running_action() -> None:
    recorder = Recorder()
    executor = FSMExecutor(
        make_loop(
            {"work": {"action": "echo started; sleep 30", "on_success": "done"}, "done": DONE}
        ),
        event_callback=recorder,
    )
    timer = threading.Timer(0.3, executor.request_shutdown)
    timer.start()
    started = time.monotonic()
    result = executor.run()
    timer.join()
    assert time.monotonic() - started < 2.0
    assert (result.terminated_by, result.final_state, result.iterations) == ("signal", "work", 1)
    assert recorder.names()[-3:] == ["action_start", "action_complete", "loop_complete"]
    assert recorder.of("action_complete")[0] == {
        "event": "action_complete",
        "exit_code": 130,
        "duration_ms": ANY,
        "error": "Action cancelled",
    }
    assert executor.prev_result is None  # the cut-off state was not evaluated


def test_shutdown_before_run() -> None:
    executor = FSMExecutor(make_loop({"a": {"action": "true", "next": "a"}}))
    executor.request_shutdown()
    result = executor.run()
    assert (result.terminated_by, result.iterations) == ("signal", 0)


class ScriptedRunner:
    """A runner without `cancel` or streaming: the three-argument interface only."""

    def __init__(self, *results: ActionResult) -> None:
        self.results = list(results)
        self.calls: list[tuple[str, float, bool]] = []

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
        self.calls.append((action, timeout, is_slash_command))
        return self.results.pop(0)


def test_shutdown_with_a_runner_that_cannot_cancel() -> None:
    runner = ScriptedRunner(ActionResult("", "", 0, 1))
    executor = FSMExecutor(make_loop({"a": {"action": "x", "next": "a"}}), action_runner=runner)
    executor.request_shutdown()
    assert executor.run().terminated_by == "signal"


def test_runner_gets_the_state_timeout_or_the_default() -> None:
    runner = ScriptedRunner(ActionResult("", "", 0, 1), ActionResult("", "", 0, 1))
    states = {
        "a": {"action": "one", "timeout": 7, "next": "b"},
        "b": {"action": "two", "next": "done"},
        "done": DONE,
    }
    FSMExecutor(make_loop(states), action_runner=runner).run()
    assert runner.calls == [("one", 7, False), ("two", 120, False)]


def test_action_timeout_is_capped_by_the_loop_timeout() -> None:
    runner = ScriptedRunner(ActionResult("", "", 0, 1))
    FSMExecutor(
        make_loop({"a": {"action": "x", "next": "done"}, "done": DONE}, timeout=10),
        action_runner=runner,
    ).run()
    assert 9 < runner.calls[0][1] <= 10


def test_runner_exception_ends_the_run_with_error() -> None:
    executor = FSMExecutor(
        make_loop({"a": {"action": "x", "next": "a"}}), action_runner=ScriptedRunner()
    )
    result = executor.run()
    assert (result.terminated_by, result.error) == ("error", "IndexError: pop from empty list")


# -- context: capture, prev, result, decision states -----------------------------------


def test_capture_prev_and_result_visibility() -> None:
    states = {
        "measure": {
            "action": "echo 42",
            "capture": "metric",
            "evaluate": {"type": "output_numeric", "operator": "gt", "target": 10},
            "on_success": "report",
        },
        "report": {
            "action": "echo ${captured.metric.exit_code} ${prev.state} ${result.details.value}",
            "capture": "report",
            "next": "again",
        },
        "again": {"action": "echo ${prev.output}", "capture": "again", "next": "done"},
        "done": DONE,
    }
    result, _, executor = run_loop(states)
    assert result.captured["metric"] == {
        "output": "42\n",
        "stderr": "",
        "exit_code": 0,
        "duration_ms": ANY,
    }
    assert result.captured["report"]["output"] == "0 measure 42.0\n"
    assert result.captured["again"]["output"] == "42\n"  # next states leave prev alone
    assert executor.prev_result == {"output": "42\n", "exit_code": 0, "state": "measure"}
    assert executor.last_result == {
        "verdict": "success",
        "details": {"value": 42.0, "target": 10, "operator": "gt"},
    }


def test_result_is_visible_to_the_next_state_action() -> None:
    states = {
        "check": {
            "action": "echo ok",
            "evaluate": {"type": "output_contains", "pattern": "ok"},
            "on_success": "say",
        },
        "say": {
            "action": "echo verdict=${result.verdict} matched=${result.details.matched}",
            "capture": "said",
            "next": "done",
        },
        "done": DONE,
    }
    result, _, _ = run_loop(states)
    assert result.captured["said"]["output"] == "verdict=success matched=True\n"


def test_prev_is_updated_inside_a_state_only_after_it_ran() -> None:
    states = {
        "one": {"action": "echo first", "on_success": "two"},
        "two": {"action": "echo before:${prev.output}", "capture": "two", "on_success": "done"},
        "done": DONE,
    }
    result, _, executor = run_loop(states)
    assert result.captured["two"]["output"] == "before:first\n"
    assert executor.prev_result == {"output": "before:first\n", "exit_code": 0, "state": "two"}


def test_decision_state_without_evaluate_succeeds_silently() -> None:
    result, recorder, executor = run_loop({"decide": {"on_success": "done"}, "done": DONE})
    assert result.final_state == "done"
    assert "evaluate" not in recorder.names()
    assert executor.prev_result == {"output": "", "exit_code": 0, "state": "decide"}
    assert recorder.of("route") == [
        {"event": "route", "from": "decide", "to": "done", "verdict": "success"}
    ]


def test_decision_state_evaluates_its_source() -> None:
    states = {
        "count": {"action": "echo 7", "capture": "count", "next": "decide"},
        "decide": {
            "evaluate": {
                "type": "output_numeric",
                "source": "${captured.count.output}",
                "operator": "gt",
                "target": 5,
            },
            "on_success": "many",
            "on_failure": "few",
        },
        "many": DONE,
        "few": DONE,
    }
    result, recorder, _ = run_loop(states)
    assert result.final_state == "many"
    assert recorder.of("evaluate") == [
        {
            "event": "evaluate",
            "type": "output_numeric",
            "verdict": "success",
            "value": 7.0,
            "target": 5,
            "operator": "gt",
        }
    ]


def test_source_replaces_stdout_for_a_state_with_an_action() -> None:
    states = {
        "a": {
            "action": "echo ignored",
            "evaluate": {
                "type": "output_contains",
                "source": "${context.word}",
                "pattern": "^magic$",
            },
            "on_success": "yes",
            "on_failure": "no",
        },
        "yes": DONE,
        "no": DONE,
    }
    assert run_loop(states, context={"word": "magic"})[0].final_state == "yes"


def test_decision_state_with_evaluate_but_no_source_judges_empty_output() -> None:
    states = {"d": {"evaluate": {"type": "exit_code"}, "on_success": "done"}, "done": DONE}
    assert run_loop(states)[0].final_state == "done"


def test_interpolation_context_has_state_and_loop_values() -> None:
    states = {
        "a": {
            "action": "echo ${state.name} ${state.iteration} ${loop.name}",
            "capture": "a",
            "next": "done",
        },
        "done": DONE,
    }
    result, _, _ = run_loop(states)
    assert result.captured["a"]["output"] == "a 1 demo\n"


# -- maintain ---------------------------------------------------------------------------


def test_maintain_restarts_from_terminal_states() -> None:
    states = {
        "check": {"action": "true", "on_success": "ok"},
        "ok": {"terminal": True, "on_maintain": "check"},
    }
    result, recorder, _ = run_loop(states, maintain=True, max_iterations=3)
    assert (result.terminated_by, result.iterations) == ("max_iterations", 3)
    assert recorder.of("route") == [
        {"event": "route", "from": "check", "to": "ok", "verdict": "success"},
        {"event": "route", "from": "ok", "to": "check", "reason": "maintain"},
        {"event": "route", "from": "check", "to": "ok", "verdict": "success"},
    ]


def test_maintain_restarts_at_initial_without_on_maintain() -> None:
    result, recorder, _ = run_loop({"a": {"next": "z"}, "z": DONE}, maintain=True, max_iterations=2)
    assert recorder.of("route")[1] == {
        "event": "route",
        "from": "z",
        "to": "a",
        "reason": "maintain",
    }
    assert result.iterations == 2


def test_maintain_does_not_hide_a_missing_route() -> None:
    result, _, _ = run_loop({"a": {"action": "false", "on_success": "z"}, "z": DONE}, maintain=True)
    assert (result.terminated_by, result.error, result.error_detail) == (
        "error",
        "No valid transition",  # issue 27: the reference's text; the detail beside it
        "No valid transition for verdict 'failure' in state 'a'",
    )


def test_maintain_with_a_bad_restart_target_ends_the_run() -> None:
    states = {"a": {"next": "z"}, "z": {"terminal": True, "on_maintain": "${context.nope}"}}
    result, _, _ = run_loop(states, maintain=True)
    assert result.error == (
        "Route target '${context.nope}' could not be resolved: Path 'nope' not found in context"
    )


# -- slash commands and the LLM ------------------------------------------------------


@pytest.mark.usefixtures("fake_claude")
def test_slash_default_evaluation_asks_the_llm_which_needs_a_key() -> None:
    states = {
        "ask": {"action": "/ll:check_code", "capture": "ask", "on_success": "done"},
        "done": DONE,
    }
    result, recorder, _ = run_loop(states)
    assert result.captured["ask"]["output"] == "claude did: /ll:check_code\n"
    assert recorder.of("evaluate") == [
        {
            "event": "evaluate",
            "type": "default",
            "verdict": "error",
            "error": MISSING_KEY_MESSAGE,
            "auth_error": True,
        }
    ]
    assert (result.terminated_by, result.error) == ("error", MISSING_KEY_MESSAGE)


@pytest.mark.usefixtures("fake_claude")
def test_slash_default_evaluation_uses_exit_code_when_llm_disabled() -> None:
    states = {"ask": {"action": "/ll:check_code", "on_success": "done"}, "done": DONE}
    result, recorder, _ = run_loop(states, llm={"enabled": False})
    assert result.terminated_by == "terminal"
    assert recorder.of("evaluate")[0] == {
        "event": "evaluate",
        "type": "default",
        "verdict": "success",
        "exit_code": 0,
    }


@pytest.mark.usefixtures("fake_claude")
def test_explicit_llm_evaluation_when_disabled_is_an_error() -> None:
    states = {
        "ask": {"action": "/ll:x", "evaluate": {"type": "llm_structured"}, "on_success": "done"},
        "done": DONE,
    }
    result, _, _ = run_loop(states, llm={"enabled": False})
    assert (result.terminated_by, result.error) == ("error", LLM_DISABLED_MESSAGE)


@pytest.mark.usefixtures("fake_claude")
def test_action_type_overrides_the_guess() -> None:
    states = {
        "a": {
            "action": "/usr/bin/env echo hi",
            "action_type": "slash_command",
            "capture": "a",
            "next": "b",
        },
        "b": {"action": "/ll:x", "action_type": "shell", "capture": "b", "next": "done"},
        "done": DONE,
    }
    result, _, _ = run_loop(states)
    assert result.captured["a"]["output"] == "claude did: /usr/bin/env echo hi\n"
    assert result.captured["b"]["exit_code"] == 127  # bash could not find /ll:x


@pytest.mark.usefixtures("fake_claude")
def test_absolute_path_shell_command_is_not_sent_to_claude() -> None:
    result, _, _ = run_loop(
        {"a": {"action": "/bin/echo direct", "capture": "a", "on_success": "done"}, "done": DONE}
    )
    assert result.captured["a"]["output"] == "direct\n"


# -- signals and handoff --------------------------------------------------------------


def run_with_signals(
    states: dict[str, Any], **kwargs: Any
) -> tuple[ExecutionResult, Recorder, FSMExecutor]:
    recorder = Recorder()
    executor = FSMExecutor(
        make_loop(states), event_callback=recorder, signal_detector=SignalDetector(), **kwargs
    )
    return executor.run(), recorder, executor


def test_fatal_error_ends_the_run_at_once() -> None:
    states = {
        "a": {"action": "echo 'FATAL_ERROR: database gone'", "on_success": "done"},
        "done": DONE,
    }
    result, recorder, _ = run_with_signals(states)
    assert (result.terminated_by, result.error, result.final_state) == (
        "error",
        "database gone",
        "a",
    )
    assert recorder.names() == [
        "loop_start",
        "state_enter",
        "action_start",
        "action_complete",
        "loop_complete",
    ]


def test_fatal_error_beats_a_handoff() -> None:
    states = {"a": {"action": "echo 'CONTEXT_HANDOFF: later'; echo 'FATAL_ERROR: no'", "next": "a"}}
    result, _, _ = run_with_signals(states)
    assert (result.terminated_by, result.error, result.handoff) == ("error", "no", False)


def test_loop_stop_ends_cleanly_after_routing() -> None:
    states = {
        "a": {"action": "echo 'LOOP_STOP: target met'", "on_success": "b"},
        "b": {"action": "true", "next": "a"},
    }
    result, recorder, _ = run_with_signals(states)
    assert (result.terminated_by, result.final_state, result.stop_reason) == (
        "signal_stop",
        "b",
        "target met",
    )
    assert recorder.without_ts()[-2:] == [
        {"event": "route", "from": "a", "to": "b", "verdict": "success"},
        {
            "event": "loop_complete",
            "final_state": "b",
            "iterations": 1,
            "terminated_by": "signal_stop",
            "stop_reason": "target met",
        },
    ]


def test_loop_stop_without_a_route_still_stops_cleanly() -> None:
    result, _, _ = run_with_signals({"a": {"action": "echo LOOP_STOP:; exit 1", "on_success": "a"}})
    assert (result.terminated_by, result.final_state, result.stop_reason, result.error) == (
        "signal_stop",
        "a",
        "",
        None,
    )


def test_handoff_stops_in_the_state_that_printed_it() -> None:
    states = {
        "work": {"action": "echo 'CONTEXT_HANDOFF: continue with B'", "on_success": "done"},
        "done": DONE,
    }
    result, recorder, executor = run_with_signals(states, handoff_handler=HandoffHandler())
    assert (result.terminated_by, result.final_state, result.handoff) == ("handoff", "work", True)
    assert (result.continuation_prompt, result.error) == ("continue with B", None)
    assert recorder.without_ts()[-3:] == [
        {"event": "evaluate", "type": "default", "verdict": "success", "exit_code": 0},
        {
            "event": "handoff_detected",
            "state": "work",
            "iteration": 1,
            "continuation": "continue with B",
        },
        {
            "event": "loop_complete",
            "final_state": "work",
            "iterations": 1,
            "terminated_by": "handoff",
        },
    ]
    assert executor.handoff_result is not None
    assert executor.handoff_result.behavior is HandoffBehavior.PAUSE
    assert executor._pending_handoff is not None


def test_handoff_beats_a_missing_route_and_works_without_a_handler() -> None:
    result, _, executor = run_with_signals(
        {"a": {"action": "echo CONTEXT_HANDOFF: more; exit 1", "on_success": "a"}}
    )
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "more")
    assert executor.handoff_result is None


def test_handoff_in_a_next_state() -> None:
    result, _, _ = run_with_signals(
        {"a": {"action": "echo CONTEXT_HANDOFF: next one", "next": "a"}}
    )
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "next one")


def test_spawn_failure_is_reported_on_the_handoff_result(tmp_path: Path) -> None:
    handler = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(tmp_path / "missing"))
    result, recorder, _ = run_with_signals(
        {"a": {"action": "echo CONTEXT_HANDOFF: x", "next": "a"}}, handoff_handler=handler
    )
    assert (result.terminated_by, result.error) == ("handoff", CLAUDE_NOT_FOUND)
    assert recorder.of("loop_complete")[0]["error"] == CLAUDE_NOT_FOUND


def test_without_a_detector_markers_are_plain_output() -> None:
    result, _, _ = run_loop(
        {
            "a": {
                "action": "echo 'FATAL_ERROR: x'; echo 'CONTEXT_HANDOFF: y'",
                "on_success": "done",
            },
            "done": DONE,
        }
    )
    assert result.terminated_by == "terminal"


# -- signals as the output streams ------------------------------------------------------

FILLER = "yes 'filler line of output' | head -n {n}"


def test_a_marker_deep_inside_a_huge_output_is_found() -> None:
    # ~2.6 MB after the marker: the runner keeps only the last 1 MiB in memory.
    action = f"{FILLER.format(n=1000)}; echo 'CONTEXT_HANDOFF: deep'; {FILLER.format(n=100000)}"
    result, _, _ = run_with_signals({"a": {"action": action, "capture": "a", "next": "a"}})
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "deep")
    kept = result.captured["a"]["output"]
    assert "CONTEXT_HANDOFF" not in kept
    assert kept.startswith("[output truncated: ")


def test_a_fatal_error_deep_inside_a_huge_output_beats_a_later_handoff() -> None:
    action = f"echo 'FATAL_ERROR: early'; {FILLER.format(n=100000)}; echo 'CONTEXT_HANDOFF: late'"
    result, _, _ = run_with_signals({"a": {"action": action, "next": "a"}})
    assert (result.terminated_by, result.error, result.handoff) == ("error", "early", False)


def test_a_marker_split_across_pipe_reads_is_found() -> None:
    action = "printf 'CONTEXT_HAN'; sleep 0.2; printf 'DOFF: split'; sleep 0.1; echo ' in three'"
    result, _, _ = run_with_signals({"a": {"action": action, "next": "a"}})
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "split in three")


def test_an_empty_payload_is_a_handoff_without_prompt_and_keeps_the_next_line() -> None:
    action = "printf 'CONTEXT_HANDOFF:\\nnot the prompt\\n'"
    result, recorder, _ = run_with_signals(
        {"a": {"action": action, "next": "a"}}, handoff_handler=HandoffHandler()
    )
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "")
    assert recorder.of("handoff_detected")[0]["continuation"] == ""


def test_the_first_of_two_handoffs_wins() -> None:
    action = "echo 'CONTEXT_HANDOFF: first'; echo 'CONTEXT_HANDOFF: second'"
    result, _, _ = run_with_signals({"a": {"action": action, "next": "a"}})
    assert result.continuation_prompt == "first"


def test_signals_and_live_output_both_get_every_line() -> None:
    lines: list[str] = []
    action = "echo one; echo 'CONTEXT_HANDOFF: two'; echo three"
    result, _, _ = run_with_signals(
        {"a": {"action": action, "next": "a"}}, output_callback=lines.append
    )
    assert lines == ["one", "CONTEXT_HANDOFF: two", "three"]
    assert result.continuation_prompt == "two"


def test_stderr_is_not_scanned() -> None:
    result, _, _ = run_with_signals(
        {"a": {"action": "echo 'FATAL_ERROR: x' >&2", "on_success": "done"}, "done": DONE}
    )
    assert result.terminated_by == "terminal"


def test_each_action_is_scanned_on_its_own() -> None:
    states = {
        "a": {"action": "printf 'CONTEXT_'", "next": "b"},
        "b": {"action": "echo 'HANDOFF: not joined'", "next": "done"},
        "done": DONE,
    }
    assert run_with_signals(states)[0].terminated_by == "terminal"


def test_a_runner_that_does_not_stream_is_scanned_after_it_returns() -> None:
    runner = ScriptedRunner(ActionResult("x\nCONTEXT_HANDOFF: from a plain runner\n", "", 0, 1))
    result, _, _ = run_with_signals({"a": {"action": "x", "next": "a"}}, action_runner=runner)
    assert result.continuation_prompt == "from a plain runner"


def test_a_streaming_runner_that_sent_no_lines_is_scanned_after_it_returns() -> None:
    class SilentStreamingRunner(ScriptedRunner):
        supports_streaming = True
        on_line: Any = "not called"

        def run(  # type: ignore[override]
            self, action: str, timeout: float, is_slash_command: bool, *, on_line: Any = None
        ) -> ActionResult:
            self.on_line = on_line
            return super().run(action, timeout, is_slash_command)

    runner = SilentStreamingRunner(ActionResult("LOOP_STOP: quiet\n", "", 0, 1))
    result, _, _ = run_with_signals(
        {"a": {"action": "x", "on_success": "done"}, "done": DONE}, action_runner=runner
    )
    assert (result.terminated_by, result.stop_reason) == ("signal_stop", "quiet")
    assert callable(runner.on_line)  # the executor always offers a line feed for signals


def test_without_detector_or_display_no_line_feed_is_given() -> None:
    class RecordingRunner(ScriptedRunner):
        supports_streaming = True
        on_line: Any = "not called"

        def run(  # type: ignore[override]
            self, action: str, timeout: float, is_slash_command: bool, *, on_line: Any = None
        ) -> ActionResult:
            self.on_line = on_line
            return super().run(action, timeout, is_slash_command)

    runner = RecordingRunner(ActionResult("", "", 0, 1))
    FSMExecutor(
        make_loop({"a": {"action": "x", "next": "done"}, "done": DONE}), action_runner=runner
    ).run()
    assert runner.on_line is None


# -- max_continuations ------------------------------------------------------------------


def test_a_handoff_past_max_continuations_is_not_handed_to_the_handler(tmp_path: Path) -> None:
    handler = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(tmp_path / "missing"))
    executor = FSMExecutor(
        make_loop(
            {"a": {"action": "echo CONTEXT_HANDOFF: more", "next": "a"}}, max_continuations=2
        ),
        signal_detector=SignalDetector(),
        handoff_handler=handler,
    )
    executor.handoff_count = 2
    result = executor.run()
    assert (result.terminated_by, result.continuations_exhausted, executor.handoff_count) == (
        "handoff",
        True,
        3,
    )
    assert result.error == "max_continuations (2) reached: this handoff is not continued"
    assert executor.handoff_result is None  # the spawn was not even tried
    assert result.to_dict()["continuations_exhausted"] is True


def test_the_last_allowed_handoff_is_carried_out(tmp_path: Path) -> None:
    handler = HandoffHandler(HandoffBehavior.SPAWN, claude_bin=str(tmp_path / "missing"))
    executor = FSMExecutor(
        make_loop(
            {"a": {"action": "echo CONTEXT_HANDOFF: more", "next": "a"}}, max_continuations=2
        ),
        signal_detector=SignalDetector(),
        handoff_handler=handler,
    )
    executor.handoff_count = 1
    result = executor.run()
    assert (result.continuations_exhausted, result.error) == (False, CLAUDE_NOT_FOUND)
    assert "continuations_exhausted" not in result.to_dict()


def test_terminate_is_never_refused_by_max_continuations() -> None:
    executor = FSMExecutor(
        make_loop({"a": {"action": "echo CONTEXT_HANDOFF: x", "next": "a"}}, max_continuations=1),
        signal_detector=SignalDetector(),
        handoff_handler=HandoffHandler(HandoffBehavior.TERMINATE),
    )
    executor.handoff_count = 7
    result = executor.run()
    assert (result.continuations_exhausted, result.error) == (False, None)


@pytest.mark.usefixtures("fake_claude")
def test_resumed_handoff_prompt_reaches_the_slash_command_once(tmp_path: Path) -> None:
    states = {
        "work": {"action": "/ll:go", "capture": "work", "next": "shell"},
        "shell": {
            "action": "echo got: ${handoff.prompt} ${handoff.count}",
            "capture": "shell",
            "next": "again",
        },
        "again": {"action": "/ll:go", "capture": "again", "next": "done"},
        "done": DONE,
    }
    executor = FSMExecutor(make_loop(states))
    executor.handoff_context = {"prompt": "fix module B", "count": 1, "state": "work"}
    result = executor.run()
    assert result.captured["work"]["output"] == "claude did: /ll:go\n\nfix module B\n"
    assert result.captured["shell"]["output"] == "got: fix module B 1\n"
    executor.current_state = "work"
    executor.run()
    assert executor.captured["work"]["output"] == "claude did: /ll:go\n"


@pytest.mark.usefixtures("fake_claude")
def test_resumed_handoff_prompt_is_not_appended_when_the_action_uses_it() -> None:
    states = {
        "work": {"action": "/ll:go ${handoff.prompt}", "capture": "work", "next": "done"},
        "done": DONE,
    }
    executor = FSMExecutor(make_loop(states))
    executor.handoff_context = {"prompt": "B", "count": 1, "state": "work"}
    assert executor.run().captured["work"]["output"] == "claude did: /ll:go B\n"


# -- streaming and callbacks ----------------------------------------------------------


def test_output_lines_stream_to_the_output_callback() -> None:
    lines: list[str] = []
    executor = FSMExecutor(
        make_loop({"a": {"action": "echo one; echo two", "next": "done"}, "done": DONE}),
        output_callback=lines.append,
    )
    executor.run()
    assert lines == ["one", "two"]


def test_streaming_runner_receives_the_output_callback() -> None:
    class StreamingRunner(ScriptedRunner):
        supports_streaming = True

        def run(  # type: ignore[override]
            self, action: str, timeout: float, is_slash_command: bool, *, on_line: Any = None
        ) -> ActionResult:
            on_line("streamed")
            return super().run(action, timeout, is_slash_command)

    lines: list[str] = []
    runner = StreamingRunner(ActionResult("streamed\n", "", 0, 1))
    FSMExecutor(
        make_loop({"a": {"action": "x", "next": "done"}, "done": DONE}),
        action_runner=runner,
        output_callback=lines.append,
    ).run()
    assert lines == ["streamed"]


@pytest.mark.parametrize("failing_event", ["loop_start", "state_enter", "route", "loop_complete"])
def test_a_raising_event_callback_ends_the_run_with_error(failing_event: str) -> None:
    seen: list[str] = []

    def callback(event: dict[str, Any]) -> None:
        seen.append(event["event"])
        if event["event"] == failing_event:
            raise RuntimeError("display broke")

    executor = FSMExecutor(
        make_loop({"a": {"action": "true", "next": "done"}, "done": DONE}), event_callback=callback
    )
    result = executor.run()
    assert result.terminated_by == "error"
    assert (
        result.error == f"Event callback failed on '{failing_event}': RuntimeError: display broke"
    )
    assert seen[-1] == "loop_complete"


def test_a_callback_that_always_raises_still_returns_a_result() -> None:
    def callback(event: dict[str, Any]) -> None:
        raise ValueError("nope")

    result = FSMExecutor(make_loop({"a": DONE}), event_callback=callback).run()
    assert (result.terminated_by, result.error) == (
        "error",
        "Event callback failed on 'loop_start': ValueError: nope",
    )


def test_a_line_only_streaming_runner_feeds_both_the_signal_scan_and_the_display() -> None:
    class LineOnlyRunner(ScriptedRunner):
        supports_streaming = True  # but not supports_text_blocks: lines only

        def run(  # type: ignore[override]
            self, action: str, timeout: float, is_slash_command: bool, *, on_line: Any = None
        ) -> ActionResult:
            on_line("working")
            on_line("CONTEXT_HANDOFF: pick up at step 3")
            return super().run(action, timeout, is_slash_command)

    lines: list[str] = []
    runner = LineOnlyRunner(ActionResult("", "", 0, 1))  # the returned output is not scanned
    result = FSMExecutor(
        make_loop({"a": {"action": "x", "on_success": "done"}, "done": DONE}),
        action_runner=runner,
        signal_detector=SignalDetector(),
        output_callback=lines.append,
    ).run()
    assert lines == ["working", "CONTEXT_HANDOFF: pick up at step 3"]
    assert (result.terminated_by, result.continuation_prompt) == ("handoff", "pick up at step 3")
