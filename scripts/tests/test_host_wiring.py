"""Issue 24 step 1: prompt actions run through the agent host adapters (`process.hosts`).

The host is chosen per state (state `host:` > loop `host:` > `LL_HOST_CLI` > claude), the
runner builds the command with the adapter, lays its environment over ours, reads its
stdout with the adapter's stream and keeps its classified ending; a usage limit of
another host is read from that ending. `fake-agent` (fixtures/fake_host.py) is a real
executable driven through a real adapter.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.host_driver import JumpingClock, run_core, use_fake_hosts

from little_loops.fsm.errors import LoopValidationError
from little_loops.fsm.loading.pipeline import load_loop
from little_loops.fsm.loading.yaml_text import dump_yaml
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.model.host_choice import chosen_hosts
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.runner import DefaultActionRunner
from little_loops.fsm.schema import FSMLoop


def test_choice_state_over_loop_over_ll_host_cli_over_claude() -> None:
    """Issue 24 item 2: a state's `host:` wins, else the loop's, else LL_HOST_CLI."""
    env = {"LL_HOST_CLI": "gemini-cli"}
    assert chosen_hosts(["codex", "claude"], "gemini", env) == ("codex", "claude")
    assert chosen_hosts(None, "opencode", env) == ("opencode",)
    assert chosen_hosts(None, None, env) == ("gemini",)
    assert chosen_hosts(None, None, {"LL_HOST_CLI": "claude-code"}) == ("claude",)
    assert chosen_hosts(None, None, {}) == ("claude",)


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "loop.yaml"
    path.write_text(dump_yaml(data), encoding="utf-8")
    return path


def _errors(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    with pytest.raises(LoopValidationError) as caught:
        load_loop(_write(tmp_path, data))
    return [f"{error.path}: {error.message}" for error in caught.value.errors]


HEAD_LOOP: dict[str, Any] = {
    "name": "h",
    "initial": "a",
    "max_steps": 5,
    "states": {
        "a": {"action": "do it", "action_type": "prompt", "next": "done"},
        "done": {"terminal": True},
    },
}
LEGACY_LOOP: dict[str, Any] = {
    "name": "l",
    "initial": "a",
    "states": {"a": {"action": "/ll:go", "next": "done"}, "done": {"terminal": True}},
}
ALLOWED = "allowed: claude, codex, gemini, opencode, qwen"


def test_validate_refuses_an_unknown_host_with_its_key_path(tmp_path: Path) -> None:
    """Issue 24 item 2: `validate` refuses an unknown host, one line with the key path."""
    head = {**HEAD_LOOP, "host": "claude"}
    head["states"] = {
        **HEAD_LOOP["states"],
        "a": {**HEAD_LOOP["states"]["a"], "host": ["codex", "cursor"]},
    }
    assert _errors(tmp_path, head) == [f"states.a.host: unknown host 'cursor' ({ALLOWED})"]
    assert _errors(tmp_path, {**LEGACY_LOOP, "host": 3}) == [
        f"host: must be a host name or a list of host names ({ALLOWED})"
    ]


def test_both_dialects_read_host_as_a_name_or_a_list(tmp_path: Path) -> None:
    """Issue 24 item 2: `host:` in both dialects; it never makes a file HEAD."""
    legacy = load_loop(_write(tmp_path, {**LEGACY_LOOP, "host": ["codex", "claude-code"]}))
    assert type(legacy) is FSMLoop and legacy.host == ["codex", "claude-code"]
    assert FSMLoop.from_dict(legacy.to_dict()).host == ["codex", "claude-code"]
    head_data = dict(HEAD_LOOP)
    head_data["states"] = {
        **HEAD_LOOP["states"],
        "a": {**HEAD_LOOP["states"]["a"], "host": "gemini"},
    }
    head = load_loop(_write(tmp_path, head_data))
    assert isinstance(head, HeadLoop)
    assert head.states["a"].to_dict()["host"] == "gemini"


def test_runner_runs_another_host_through_its_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 1: argv from `host.command`, its env laid over ours, its stream, its
    ending kept on the result; the run record names the host."""
    use_fake_hosts(monkeypatch, tmp_path, [{"text": "CONTEXT_HANDOFF: step 2"}])
    texts: list[str] = []
    result = DefaultActionRunner(cwd=tmp_path).run(
        "do it", 30, True, on_text=texts.append, host="codex", model="gpt-x", resume_session="t1"
    )
    assert result.exit_code == 0 and result.output == "CONTEXT_HANDOFF: step 2"
    assert texts == ["CONTEXT_HANDOFF: step 2\n"]
    assert result.host_ending == HostEnding("success")
    assert result.claude is not None
    assert (result.claude.host, result.claude.session_id, result.claude.cost_usd) == (
        "codex",
        "t1",
        0.01,
    )
    logged = [json.loads(line) for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert logged == [
        {"argv": ["--json", "--resume", "t1", "-m", "gpt-x", "do it"], "host": "codex"}
    ]


def test_run_says_which_cli_is_missing_and_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 2: a missing CLI is one line naming it and its install hint."""
    use_fake_hosts(monkeypatch, tmp_path, [{"text": "x"}])
    monkeypatch.delenv("LL_TEST_AGENT_BIN")
    result = DefaultActionRunner(cwd=tmp_path).run("do it", 30, True, host="codex")
    message = "codex CLI not found: npm install -g fake-agent (or set LL_TEST_AGENT_BIN)"
    assert (result.exit_code, result.error) == (127, message)


def test_a_host_that_refuses_gives_the_error_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An authentication failure is the CLI's refusal, never a judged answer."""
    use_fake_hosts(monkeypatch, tmp_path, [{"auth": True}])
    result = DefaultActionRunner(cwd=tmp_path).run("do it", 30, True, host="codex")
    assert result.host_ending == HostEnding("auth", "no API key")
    assert result.error == "codex exited with code 5: no API key"


def test_a_state_runs_on_the_host_it_names_and_claude_stays_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 2: the chosen host runs the state; `action_complete` names it, and
    a claude action's request carries no host (unchanged requests and events)."""
    use_fake_hosts(monkeypatch, tmp_path, [{"text": "all done"}])
    fsm = FSMLoop.from_dict({**LEGACY_LOOP, "host": "codex"})
    result, events, requests = run_core(fsm, tmp_path, JumpingClock())
    assert result.final_state == "done"
    assert [(r.host, r.model) for r in requests] == [("codex", None)]
    complete = next(e for e in events if e["event"] == "action_complete")
    assert complete["host"] == "codex" and complete["session_id"] == "s-1"
    assert complete["cost_usd"] == 0.01


def test_another_hosts_usage_limit_waits_and_continues_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24 item 1: the engine's limit check reads the host's ending: a usage limit
    waits for the reset, then the same session continues (`--resume` via the adapter)."""
    clock = JumpingClock()
    use_fake_hosts(monkeypatch, tmp_path, [{"limit": clock.now + 120}, {"text": "finished"}])
    fsm = FSMLoop.from_dict({**LEGACY_LOOP, "host": "codex"})
    result, events, requests = run_core(fsm, tmp_path, clock)
    assert result.final_state == "done"
    wait = next(e for e in events if e["event"] == "limit_wait")
    assert (wait["message"], wait["wait_seconds"]) == ("codex: usage limit", 122)
    assert [(r.host, r.resume_session) for r in requests] == [("codex", None), ("codex", "s-1")]
