"""Failover between the real Claude Code CLI and the real Codex CLI (issue 24 items 3, 5
and 7), each against its own fake API on 127.0.0.1: `host: [claude, codex]`; claude
meets a subscriber's session limit that resets a few seconds later, the same state runs on
codex with the same prompt and a note, and the next state, after the reset, goes back to
claude. The run's events, progress, state (host memory, spending per host) say so."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from claude_code import claude_env
from codex_home import FAKE_KEY, FAKE_KEY_ENV, write_config
from e2e_project import VENV_BIN, E2EProject
from fake_anthropic import FakeAnthropicServer, RecordedRequest, Reply, text_message
from fake_anthropic import usage_limit_reached as claude_limit
from fake_openai import FakeResponsesServer, text_reply, user_text
from fixtures.cli_support import normalize

WORK = "Please work on: $ARGUMENTS\n"
LOOP = """\
name: pair
initial: a
host: [claude, codex]
backoff: 9
states:
  a:
    action: /work part a
    next: b
  b:
    action: /work part b
    next: done
  done:
    terminal: true
"""
NOTE = (
    "\n\n---\nNote: this task was started by another agent (claude), which was stopped by "
    "a usage limit before it finished."
)


class ClaudeAnswers:
    """The first request meets a session limit resetting in 4 s; then `B done.`."""

    def __init__(self) -> None:
        self.seen: list[RecordedRequest] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        self.seen.append(request)
        if len(self.seen) == 1:
            return claude_limit(time.time() + 4, "five_hour")
        return Reply(text_message("B done."))


@pytest.fixture
def codex_api(tmp_path: Path) -> Iterator[FakeResponsesServer]:
    with FakeResponsesServer(log=tmp_path / "codex-requests.jsonl") as server:
        server.responder = lambda request: text_reply("A done on codex.")
        yield server


def test_claude_limited_fails_over_to_codex_and_returns_after_the_reset(
    project: E2EProject,
    fake_api: FakeAnthropicServer,
    codex_api: FakeResponsesServer,
    codex_bin: Path,
    tmp_path: Path,
) -> None:
    answers = ClaudeAnswers()
    fake_api.responder = answers
    project.write_command("work", WORK)
    project.write_loop("pair", LOOP)
    home = tmp_path / "codexhome"
    write_config(home, codex_api.base_url)
    env = claude_env(
        base_url=project.base_url,
        home=project.home,
        claude_bin=project.claude_bin,
        extra_path=[VENV_BIN],
        subscriber=True,
    )
    env.update({"CODEX_HOME": str(home), FAKE_KEY_ENV: FAKE_KEY, "LL_CODEX_BIN": str(codex_bin)})

    done = project.ll_loop("run", "pair", env=env, timeout=120)
    out = normalize(done.stdout)
    assert done.returncode == 0, out + done.stderr
    assert "[1/50] a -> /work part a\n" in out
    assert "       moving a from claude to codex\n" in out
    assert "(on codex)\n" in out
    assert "       back on claude (its limit has reset; was on codex)\n" in out
    assert "[2/50] b -> /work part b\n" in out

    (codex_request,) = codex_api.requests
    asked = user_text(codex_request)
    assert asked.startswith("/work part a" + NOTE), asked
    assert len(answers.seen) == 2  # the limited request, then part b on claude again
    events = project.events("pair")
    switch = [e for e in events if e["event"] == "host_switch"]
    assert [(e["state"], e["from"], e["to"], e["reason"]) for e in switch] == [
        ("a", "claude", "codex", "usage_limit")
    ]
    back = [e for e in events if e["event"] == "host_return"]
    assert [(e["state"], e["host"], e["from"]) for e in back] == [("b", "claude", "codex")]
    hosts_run = [e.get("host", "claude") for e in events if e["event"] == "action_start"]
    assert hosts_run == ["claude", "codex", "claude"]
    state = project.state("pair")
    assert state["head"]["hosts"]["last"] == "claude"
    assert set(state["spending"]["hosts"]) == {"claude", "codex"}


PACED_LOOP = """\
name: paced
initial: a
host: [claude, codex]
rate_limit:
  max_utilization: 0.8
states:
  a:
    action: /work part a
    next: b
  b:
    action: /work part b
    next: done
  done:
    terminal: true
"""


def near_the_limit(resets_at: int) -> dict[str, str]:
    """The headers of an answer at 90% of a subscriber's five-hour window: claude reports
    them in its `rate_limit_event` (`allowed_warning`, `utilization: 0.9`)."""
    return {
        "anthropic-ratelimit-unified-status": "allowed_warning",
        "anthropic-ratelimit-unified-reset": str(resets_at),
        "anthropic-ratelimit-unified-representative-claim": "five_hour",
        "anthropic-ratelimit-unified-5h-status": "allowed_warning",
        "anthropic-ratelimit-unified-5h-utilization": "0.9",
        "anthropic-ratelimit-unified-5h-reset": str(resets_at),
        "anthropic-ratelimit-unified-5h-surpassed-threshold": "0.75",
    }


def test_claude_past_max_utilization_starts_no_new_action(
    project: E2EProject,
    fake_api: FakeAnthropicServer,
    codex_api: FakeResponsesServer,
    codex_bin: Path,
    tmp_path: Path,
) -> None:
    """Issue 24 item 4: claude's own quota report (90% used) paces it: the next state
    runs on codex (`host_switch`, reason `max_utilization`); `status` shows the quota."""
    resets_at = int(time.time()) + 3000
    seen: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        seen.append(request)
        return Reply(text_message("A done."), headers=near_the_limit(resets_at))

    fake_api.responder = answer
    project.write_command("work", WORK)
    project.write_loop("paced", PACED_LOOP)
    home = tmp_path / "codexhome"
    write_config(home, codex_api.base_url)
    env = claude_env(
        base_url=project.base_url,
        home=project.home,
        claude_bin=project.claude_bin,
        extra_path=[VENV_BIN],
        subscriber=True,
    )
    env.update({"CODEX_HOME": str(home), FAKE_KEY_ENV: FAKE_KEY, "LL_CODEX_BIN": str(codex_bin)})

    done = project.ll_loop("run", "paced", env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(seen) == 1 and len(codex_api.requests) == 1
    assert user_text(codex_api.requests[0]) == "/work part b"
    switch = [e for e in project.events("paced") if e["event"] == "host_switch"]
    assert [(e["state"], e["from"], e["to"], e["reason"], e["message"]) for e in switch] == [
        (
            "b",
            "claude",
            "codex",
            "max_utilization",
            "claude: quota use 90% is past rate_limit.max_utilization 80%",
        )
    ]
    status = project.ll_loop("status", "paced", env=env).stdout
    quota = [line for line in status.splitlines() if line.startswith("Host quota: ")]
    assert len(quota) == 1 and quota[0].startswith("Host quota: claude at 90%, resets at ")
