"""Issue 24 items 3 and 4: failover between agent hosts, and pacing by quota use.

`codex` and `gemini` are the scripted `fake-agent` (fixtures/fake_host.py), a real
process behind a real adapter; the run core is driven with a clock that jumps instead of
sleeping (fixtures/host_driver.py). Every call the fake CLI gets is in calls.log.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_driver import NOW, JumpingClock, run_core, use_fake_hosts

from little_loops.fsm.engine.context import RunCursor
from little_loops.fsm.engine.core import RunCore
from little_loops.fsm.engine.head_memory import HeadMemory
from little_loops.fsm.engine.host_failover import NOTE_CHARS, handoff_note
from little_loops.fsm.engine.limit_step import CONTINUE_PROMPT
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop

NOTE = (
    "\n\n---\nNote: this task was started by another agent (codex), which was stopped by "
    "a usage limit before it finished. It had said nothing yet."
)


def two_states(**top: Any) -> FSMLoop:
    """Two prompt states `a` -> `b` -> done on `host: [codex, gemini]` (legacy dialect)."""
    data = {
        "name": "pair",
        "initial": "a",
        "host": ["codex", "gemini"],
        "states": {
            "a": {"action": "/work a", "next": "b"},
            "b": {"action": "/work b", "next": "done"},
            "done": {"terminal": True},
        },
        **top,
    }
    return FSMLoop.from_dict(data)


def calls(tmp_path: Path) -> list[tuple[str, list[str]]]:
    lines = (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()
    return [(call["host"], call["argv"]) for call in map(json.loads, lines)]


def of(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "ts"} for e in events if e["event"] == name]


def test_usage_limit_moves_the_state_to_the_next_host_and_back_after_the_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 3: the same state runs on the next host with the same prompt and a
    note; after the first host's reset the next state on the list returns to it."""
    use_fake_hosts(
        monkeypatch,
        tmp_path,
        [{"limit": NOW + 600}, {"text": "a done"}, {"text": "b done"}],
    )
    fsm = two_states(backoff=700)  # 700 s pass between the states: codex's reset
    result, events, _ = run_core(fsm, tmp_path, JumpingClock())

    assert result.final_state == "done"
    assert calls(tmp_path) == [
        ("codex", ["--json", "/work a"]),
        ("gemini", ["--json", "/work a" + NOTE]),
        ("codex", ["--json", "/work b"]),
    ]
    assert of(events, "host_switch") == [
        {
            "event": "host_switch",
            "state": "a",
            "from": "codex",
            "to": "gemini",
            "reason": "usage_limit",
            "message": "codex: usage limit",
            "until": "2027-01-15T08:10:02+00:00",
        }
    ]
    assert of(events, "host_return") == [
        {"event": "host_return", "state": "b", "host": "codex", "from": "gemini"}
    ]
    starts = [(e["action"][:7], e.get("host")) for e in of(events, "action_start")]
    assert starts == [("/work a", "codex"), ("/work a", "gemini"), ("/work b", "codex")]


def test_every_host_limited_waits_for_the_earliest_and_continues_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 3: all limited -> wait for the earliest reset, then the same
    session continues on that host."""
    script = [{"limit": NOW + 900}, {"limit": NOW + 100}, {"text": "a done"}, {"text": "b"}]
    use_fake_hosts(monkeypatch, tmp_path, script)
    clock = JumpingClock()
    result, events, _ = run_core(two_states(), tmp_path, clock)

    assert result.final_state == "done"
    assert calls(tmp_path) == [
        ("codex", ["--json", "/work a"]),
        ("gemini", ["--json", "/work a" + NOTE]),
        ("gemini", ["--json", "--resume", "s-2", CONTINUE_PROMPT]),
        ("gemini", ["--json", "/work b"]),  # codex is still limited
    ]
    wait = of(events, "limit_wait")
    assert [(w["state"], w["host"], w["wait_seconds"]) for w in wait] == [("a", "gemini", 102)]
    assert [e["to"] for e in of(events, "host_switch")] == ["gemini"]


def test_a_transient_error_is_retried_on_the_same_host_never_failed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 3: a 5xx is retried on the same host (the existing backoff)."""
    use_fake_hosts(monkeypatch, tmp_path, [{"transient": True}, {"text": "ok"}])
    fsm = two_states()
    fsm.states["a"].next = "done"
    result, events, _ = run_core(fsm, tmp_path, JumpingClock())

    assert result.final_state == "done"
    assert [host for host, _ in calls(tmp_path)] == ["codex", "codex"]
    assert of(events, "host_switch") == []
    backoff = of(events, "rate_limit_backoff")
    assert [(b["kind"], b["message"]) for b in backoff] == [("rate_limit", "codex: 503 overloaded")]


def test_all_limited_beyond_max_wait_ends_usage_limited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 3: every host limited past `rate_limit.max_wait` ends the run as
    `usage_limited` (exit 7, resumable), the wait kept with its host for resume."""
    use_fake_hosts(monkeypatch, tmp_path, [{"limit": NOW + 7200}, {"limit": NOW + 5000}])
    events: list[dict[str, Any]] = []
    clock = JumpingClock()
    core = RunCore(two_states(rate_limit={"max_wait": 600}), clock=clock, emit=events.append)
    result, _, _ = run_core(core.fsm, tmp_path, clock, core)

    assert result.terminated_by == "usage_limited"
    assert core.cursor.limit_wait is not None
    assert (core.cursor.limit_wait["host"], core.cursor.limit_wait["session_id"]) == (
        "gemini",
        "s-2",
    )


def test_the_host_memory_is_kept_for_a_resumed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 3: which host is limited until when, and the sessions per host, are
    in the run's cursor (`HeadMemory.hosts`, saved with the run): a run resumed from it
    does not try the limited host again before its reset."""
    use_fake_hosts(monkeypatch, tmp_path, [{"limit": NOW + 600}, {"text": "a"}, {"text": "b"}])
    clock = JumpingClock()
    first = RunCore(two_states(), clock=clock, emit=lambda event: None)
    fsm = first.fsm
    fsm.states["a"].next = "done"
    run_core(fsm, tmp_path, clock, first)
    saved = first.cursor.head.to_dict()["hosts"]
    assert saved["limited"]["codex"]["until"] == NOW + 602
    assert saved["sessions"] == {"codex": {"a": "s-1"}}
    assert saved["last"] == "gemini"

    cursor = RunCursor(current_state="b", head=HeadMemory.from_dict({"hosts": saved}))
    resumed = RunCore(two_states(), clock=clock, emit=lambda event: None, cursor=cursor)
    run_core(resumed.fsm, tmp_path, clock, resumed)
    assert calls(tmp_path)[-1] == ("gemini", ["--json", "/work b"])


def test_pacing_moves_a_new_action_off_a_host_past_max_utilization(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 4: a host that reported quota use past `max_utilization` starts no
    new action: with a list, the next host takes it."""
    script = [{"text": "a", "used": 0.85, "resets_at": NOW + 3000}, {"text": "b"}]
    use_fake_hosts(monkeypatch, tmp_path, script)
    fsm = two_states(rate_limit={"max_utilization": 0.8})
    result, events, _ = run_core(fsm, tmp_path, JumpingClock())

    assert result.final_state == "done"
    assert [host for host, _ in calls(tmp_path)] == ["codex", "gemini"]
    switch = of(events, "host_switch")
    assert [(s["from"], s["to"], s["reason"], s["message"]) for s in switch] == [
        (
            "codex",
            "gemini",
            "max_utilization",
            "codex: quota use 85% is past rate_limit.max_utilization 80%",
        )
    ]


def test_pacing_on_one_host_waits_for_the_window_reset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 4: without a list, the paced host waits for its window's reset."""
    script = [{"text": "a", "used": 0.95, "resets_at": NOW + 300}, {"text": "b"}]
    use_fake_hosts(monkeypatch, tmp_path, script)
    fsm = two_states(rate_limit={"max_utilization": 0.8}, host="codex")
    clock = JumpingClock()
    result, events, _ = run_core(fsm, tmp_path, clock)

    assert result.final_state == "done"
    assert [host for host, _ in calls(tmp_path)] == ["codex", "codex"]
    wait = of(events, "limit_wait")
    assert [(w["state"], w["wait_seconds"]) for w in wait] == [("b", 302)]
    assert clock.now >= NOW + 302


def test_a_head_state_host_wins_over_the_loops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 2: a HEAD state's `host:` list wins; its `model:` reaches the host."""
    use_fake_hosts(monkeypatch, tmp_path, [{"limit": None}, {"text": "done"}])
    fsm = HeadLoop.from_dict(
        {
            "name": "h",
            "initial": "a",
            "host": "claude",
            "states": {
                "a": {
                    "action": "write",
                    "action_type": "prompt",
                    "host": ["codex", "gemini"],
                    "model": "m-1",
                    "next": "done",
                },
                "done": {"terminal": True},
            },
        }
    )
    result, events, _ = run_core(fsm, tmp_path, JumpingClock())
    assert result.final_state == "done"
    assert [(host, argv[:3]) for host, argv in calls(tmp_path)] == [
        ("codex", ["--json", "-m", "m-1"]),
        ("gemini", ["--json", "-m", "m-1"]),
    ]
    switch = of(events, "host_switch")[0]
    assert switch["until"] == "2027-01-15T09:00:00+00:00"  # unknown reset: an hour


def test_the_note_is_bounded() -> None:
    note = handoff_note("claude", "x" * 5000 + "END")
    assert note.endswith("x" * (NOTE_CHARS - 3) + "END")
    assert len(note) < NOTE_CHARS + 200
