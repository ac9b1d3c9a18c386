"""HEAD-dialect routing (spec/ll-head-dialect.md §3.1, §3.3, §9g, §9h) and failure
terminals (§2.2 `failure`), with the real executor and real shell actions; a legacy loop
keeps its routing and its `failed` terminal is an ordinary one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropicServer, Reply, tool_use_message
from head_engine_helpers import DONE, head_loop, run_head

from little_loops.cli.exit_codes import exit_code_for
from little_loops.cli.summary import summarize
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.persistence import RUNNING_DIR, PersistentExecutor
from little_loops.fsm.schema import FSMLoop

# --- §3.1: yes/success and no/failure are one verdict --------------------------------------


def test_s3_1_route_table_key_yes_matches_the_success_verdict() -> None:
    result, events = run_head({"check": {"action": "true", "route": {"yes": "done"}}, "done": DONE})
    assert (result.terminated_by, result.final_state) == ("terminal", "done")
    assert events.of("route") == [
        {"event": "route", "from": "check", "to": "done", "verdict": "yes"}
    ]


def test_s3_3_3_no_goes_to_on_no_else_on_error() -> None:
    result, events = run_head(
        {
            "first": {"action": "exit 1", "on_yes": "done", "on_error": "second"},
            "second": {"action": "exit 1", "on_no": "third", "on_error": "wrong"},
            "third": {
                "action": "exit 1",
                "on_error": "$current",
                "max_retries": 1,
                "on_retry_exhausted": "done",
            },
            "wrong": DONE,
            "done": DONE,
        }
    )
    assert (result.terminated_by, result.final_state) == ("terminal", "done")
    assert events.routes() == [
        ("first", "second"),
        ("second", "third"),
        ("third", "third"),
        ("third", "third"),
    ]
    assert events.of("retry_exhausted") == [
        {"event": "retry_exhausted", "state": "third", "retries": 2, "next": "done"}
    ]


def test_s3_3_2_route_table_order_for_no_and_error() -> None:
    """`no`: exact key, `_`, then `_error`; `error`: `_error` before `_` (§9h)."""
    result, events = run_head(
        {
            "a": {"action": "exit 1", "route": {"yes": "wrong", "_error": "b"}},
            "b": {"action": "exit 1", "route": {"_": "c", "_error": "wrong"}},
            "c": {"action": "exit 3", "route": {"_": "wrong", "_error": "d"}},
            "d": {"action": "exit 1", "route": {"failure": "e", "_": "wrong"}},
            "e": {"action": "true", "route": {"success": "done"}},
            "wrong": DONE,
            "done": DONE,
        }
    )
    assert result.final_state == "done"
    assert [(e["from"], e["to"], e["verdict"]) for e in events.of("route")] == [
        ("a", "b", "no"),
        ("b", "c", "no"),
        ("c", "d", "error"),
        ("d", "e", "no"),
        ("e", "done", "yes"),
    ]


def test_s3_3_3_partial_and_blocked_take_their_on_verdict_routes() -> None:
    meta = {"type": "return_metadata"}
    result, events = run_head(
        {
            "implement": {
                "action": """echo '{"status": "partial"}'""",
                "evaluate": meta,
                "on_partial": "again",
                "on_error": "wrong",
            },
            "again": {
                "action": """echo '{"status": "blocked"}'""",
                "evaluate": meta,
                "on_blocked": "ask",
                "on_no": "wrong",
            },
            "ask": {"terminal": True},
            "wrong": DONE,
        }
    )
    assert result.final_state == "ask"
    assert [(e["to"], e["verdict"]) for e in events.of("route")] == [
        ("again", "partial"),
        ("ask", "blocked"),
    ]


# --- §3.3.4: an undeclared cannot_judge holds the state ------------------------------------


@pytest.fixture
def judge_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server


def answers(server: FakeAnthropicServer, *verdicts: str) -> None:
    for verdict in verdicts:
        confidence = 0.1 if verdict == "unsure" else 0.9  # with uncertain_suffix: "_uncertain"
        answer = {
            "verdict": "cannot_judge" if verdict == "unsure" else verdict,
            "confidence": confidence,
            "reason": f"said {verdict}",
            "evidence": "the work",
        }
        server.replies.append(Reply(tool_use_message(answer)))


JUDGED = {"action": "echo the work", "evaluate": {"type": "llm_structured"}}


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_s3_3_4_cannot_judge_holds_twice_then_goes_to_error_never_to_default(
    judge_api: FakeAnthropicServer,
) -> None:
    answers(judge_api, "cannot_judge", "cannot_judge", "cannot_judge")
    route = {"yes": "done", "_": "wrong", "_error": "ask"}
    result, events = run_head(
        {"judge": {**JUDGED, "route": route}, "ask": DONE, "done": DONE, "wrong": DONE}
    )
    assert result.final_state == "ask"
    assert [(e["to"], e.get("reason")) for e in events.of("route")] == [
        ("judge", "cannot_judge_hold"),
        ("judge", "cannot_judge_hold"),
        ("ask", None),
    ]
    assert len(judge_api.requests) == 3


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_s3_3_4_a_hold_ends_when_the_judge_answers_and_a_declared_route_never_holds(
    judge_api: FakeAnthropicServer,
) -> None:
    answers(judge_api, "cannot_judge", "yes", "unsure")
    result, events = run_head(
        {
            "judge": {**JUDGED, "on_yes": "second", "on_error": "wrong"},
            "second": {
                "action": "echo more work",
                "evaluate": {"type": "llm_structured", "uncertain_suffix": True},
                "on_cannot_judge_uncertain": "ask",
                "on_error": "wrong",
            },
            "ask": DONE,
            "wrong": DONE,
        }
    )
    assert result.final_state == "ask"
    assert events.routes() == [("judge", "judge"), ("judge", "second"), ("second", "ask")]


@pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")
def test_s3_3_4_and_5_cannot_judge_without_an_error_route_ends_after_two_holds(
    judge_api: FakeAnthropicServer,
) -> None:
    answers(judge_api, "cannot_judge", "cannot_judge", "cannot_judge")
    result, events = run_head({"judge": {**JUDGED, "on_no": "wrong"}, "wrong": DONE})
    assert (result.terminated_by, result.error, result.error_detail) == (
        "error",
        "No valid transition",  # the reference's words (issue 27), the detail beside them
        "No valid transition for verdict 'cannot_judge' in state 'judge'",
    )
    assert events.routes() == [("judge", "judge"), ("judge", "judge")]


# --- §3.3.1: next: states ------------------------------------------------------------------


def test_s3_3_1_a_failing_next_action_takes_on_error_else_next() -> None:
    result, events = run_head(
        {
            "fetch": {"action": "exit 3", "next": "wrong", "on_error": "cleanup"},
            "cleanup": {"action": "exit 4", "next": "done"},
            "done": DONE,
            "wrong": DONE,
        }
    )
    assert result.final_state == "done"
    assert [(e["to"], e.get("reason")) for e in events.of("route")] == [
        ("cleanup", "action_failed"),
        ("done", None),
    ]
    assert events.of("evaluate") == []


def test_s3_3_1_retryable_exit_codes_on_a_next_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    script = (
        "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; "
        "[ $n -eq 0 ] && exit 75; exit 9"
    )
    result, events = run_head(
        {
            "fetch": {
                "action": script,
                "next": "wrong",
                "on_error": "$current",
                "retryable_exit_codes": [75],
                "on_retry_exhausted": "feed_down",
            },
            "feed_down": {"terminal": True},
            "wrong": DONE,
        }
    )
    assert result.final_state == "feed_down"
    assert [(e["to"], e.get("reason")) for e in events.of("route")] == [
        ("fetch", "action_failed"),
        ("feed_down", "not_retryable"),
    ]


def test_s3_3_1_a_next_action_killed_by_a_signal_interrupts_the_run_without_on_error() -> None:
    result, events = run_head({"work": {"action": "kill -9 $$", "next": "done"}, "done": DONE})
    assert (result.terminated_by, result.final_state, result.error) == (
        "signal",
        "work",
        "action killed by signal 9",
    )
    assert events.of("route") == []


def test_s3_3_1_a_next_action_killed_by_a_signal_takes_on_error() -> None:
    result, events = run_head(
        {
            "work": {"action": "kill -9 $$", "next": "wrong", "on_error": "ask"},
            "ask": DONE,
            "wrong": DONE,
        }
    )
    assert result.final_state == "ask"
    assert events.routes() == [("work", "ask")]


def test_s3_3_1_an_action_that_cannot_start_emits_action_error_and_takes_on_error() -> None:
    result, events = run_head(
        {
            "work": {"action": "echo ${context.nope}", "next": "wrong", "on_error": "ask"},
            "ask": DONE,
            "wrong": DONE,
        }
    )
    assert result.final_state == "ask"
    [error] = events.of("action_error")
    assert error == {
        "event": "action_error",
        "state": "work",
        "error": "Cannot interpolate action: Path 'nope' not found in context",
        "route": "ask",
    }
    assert events.routes() == [("work", "ask")]


# --- §2.2 failure terminals, §9h --------------------------------------------------------------


FAILING = {
    "check": {"action": "exit 1", "on_yes": "done", "on_no": "failed"},
    "done": DONE,
    "failed": DONE,
}


def test_s2_2_a_head_run_ending_at_a_failure_terminal_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    loop = head_loop(FAILING)
    result = PersistentExecutor(loop).run()
    assert (result.terminated_by, result.final_state, result.error) == (
        "failure_terminal",
        "failed",
        "the run ended at the failure terminal 'failed'",
    )
    saved = json.loads((tmp_path / ".loops" / RUNNING_DIR / "demo.state.json").read_text())
    assert (saved["status"], saved["terminated_by"]) == ("failed", "failure_terminal")
    assert exit_code_for(result.terminated_by) == 1
    summary = summarize(result, loop, "demo")
    assert summary.is_problem
    assert summary.lines[0].startswith("Loop failed: failed (1 iteration, ")
    assert summary.lines[0].endswith(") - ended at failure terminal 'failed'")


def test_s2_2_failure_false_and_explicit_failure_terminals() -> None:
    result, _ = run_head({**FAILING, "failed": {"terminal": True, "failure": False}})
    assert result.terminated_by == "terminal"
    states: dict[str, Any] = {
        "check": {"action": "true", "on_yes": "give_up"},
        "give_up": {"terminal": True, "failure": True},
    }
    result, _ = run_head(states)
    assert (result.terminated_by, result.final_state) == ("failure_terminal", "give_up")


def test_s1_legacy_run_ending_at_a_terminal_named_failed_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Legacy behaviour kept (§1 rule 1): `failed` is an ordinary terminal name there."""
    monkeypatch.chdir(tmp_path)
    states = {**FAILING, "check": {"action": "exit 1", "on_failure": "failed"}}
    loop = FSMLoop.from_dict({"name": "demo", "initial": "check", "states": states})
    result = PersistentExecutor(loop).run()
    assert (result.terminated_by, result.final_state, result.error) == ("terminal", "failed", None)
    saved = json.loads((tmp_path / ".loops" / RUNNING_DIR / "demo.state.json").read_text())
    assert saved["status"] == "completed"
    assert exit_code_for(result.terminated_by) == 0
    assert summarize(result, loop, "demo").lines[0].startswith("Loop completed: failed (")


def test_s1_legacy_routing_has_no_no_to_on_error_fall_through() -> None:
    """Legacy (§1 rule 1): `failure` without `on_failure` has no route, `yes` is a key."""
    data = {
        "name": "demo",
        "initial": "check",
        "states": {"check": {"action": "exit 1", "on_error": "fix"}, "fix": DONE},
    }
    result = FSMExecutor(FSMLoop.from_dict(data)).run()
    assert (result.terminated_by, result.error, result.error_detail) == (
        "error",
        "No valid transition",
        "No valid transition for verdict 'failure' in state 'check'",
    )


def test_s3_3_5_in_maintain_mode_a_verdict_without_route_starts_over() -> None:
    states = {
        "start": {"action": "true", "on_yes": "check"},
        "check": {"action": "exit 1", "on_yes": "start"},
        "again": {"action": "exit 1", "on_yes": "start", "on_maintain": "check"},
    }
    result, events = run_head(states, maintain=True, max_steps=3)
    assert result.terminated_by == "max_steps"
    assert events.of("route")[1] == {
        "event": "route",
        "from": "check",
        "to": "start",
        "verdict": "no",
        "reason": "maintain",
    }
    result, events = run_head(
        {**states, "start": {"action": "true", "on_yes": "again"}}, maintain=True, max_steps=2
    )
    assert events.routes() == [("start", "again"), ("again", "check")]
