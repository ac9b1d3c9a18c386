"""The agent host interface (issue 24): host names, the Claude Code adapter, endings."""

from __future__ import annotations

import pytest

from little_loops.fsm.model.agent_hosts import canonical_host
from little_loops.fsm.model.claude_run import ClaudeRun, RateLimitInfo
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.process.hosts import UnknownHost, host_named, program_of


@pytest.mark.parametrize(
    ("spelled", "host"),
    [("claude", "claude"), ("claude-code", "claude"), ("Codex", "codex"), ("gemini-cli", "gemini")],
)
def test_host_names_accept_little_loops_spellings(spelled: str, host: str) -> None:
    """LL_HOST_CLI's names (`claude-code`, ...) are accepted beside ours."""
    assert canonical_host(spelled) == host


def test_unknown_host_is_refused() -> None:
    assert canonical_host("cursor") is None
    with pytest.raises(UnknownHost, match="unknown host 'cursor'"):
        host_named("cursor")


def test_claude_command_is_the_runners_command() -> None:
    claude = host_named("claude-code")
    command = claude.command("claude", "/ll:go", resume_session="s1", model="opus")
    assert command.argv == [
        "claude",
        "--dangerously-skip-permissions",
        "--output-format",
        "stream-json",
        "--verbose",
        "--resume",
        "s1",
        "--model",
        "opus",
        "-p",
        "/ll:go",
    ]
    assert command.env is None


def test_program_of_prefers_configured_then_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    claude = host_named("claude")
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    assert program_of(claude) == "claude"
    monkeypatch.setenv("LL_CLAUDE_BIN", "/opt/claude")
    assert program_of(claude) == "/opt/claude"
    assert program_of(claude, "/x/claude") == "/x/claude"


def test_claude_endings() -> None:
    claude = host_named("claude")
    ok = claude.ending(
        ClaudeRun(result_text="done"), exit_code=0, output="done", stderr="", now=0.0
    )
    assert ok == HostEnding("success")
    limited = ClaudeRun(
        is_error=True,
        result_text="You've hit your limit",
        rate_limit=RateLimitInfo("rejected", 5000.0, "five_hour", 1.0),
    )
    ending = claude.ending(limited, exit_code=1, output="", stderr="", now=0.0)
    assert ending == HostEnding("usage_limit", "You've hit your limit", 5000.0, "five_hour", True)
    assert ending.as_limit() == LimitHit(
        "usage_limit", "You've hit your limit", 5000.0, "five_hour", True
    )
    busy = ClaudeRun(is_error=True, result_text="API Error: 529", api_error_status=529)
    assert claude.ending(busy, exit_code=1, output="", stderr="", now=0.0).kind == "transient"
    other = claude.ending(
        ClaudeRun(is_error=True, result_text="boom"), exit_code=1, output="", stderr="", now=0.0
    )
    assert other == HostEnding("other", "boom")
    assert other.as_limit() is None
