"""`ll-loop run` with `host: opencode`: the real OpenCode CLI (pinned in .ci/opencode-version)
against the fake Chat Completions API on 127.0.0.1 (issue 24; spec agent-hosts.md §3).

A HEAD loop whose prompt state runs on opencode: a plain run, a handoff, a usage limit with
a near reset (the run waits, then the same opencode session continues), a 5xx that outlasts
opencode's own retries (backed off and run again by ll-loop), and a missing CLI.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_project import LL_LOOP, VENV_BIN
from fake_openai_chat import ChatRule, ChatScript, FakeChatServer, server_error, usage_limit
from fixtures.cli_support import normalize
from opencode_home import opencode_env

from little_loops.fsm.engine.limit_step import CONTINUE_PROMPT

RUN_SECONDS = 120
RESET_SECONDS = 25  # longer than opencode's start and its six tries, so the run waits
WORK = "Please work on the parser"
FINISHED = "Work finished."
LOOP = """\
name: oc
initial: work
max_steps: 5
host: opencode
states:
  work:
    action: {action}
    action_type: prompt
    rate_limit_backoff_base_seconds: 1
    evaluate:
      type: output_contains
      pattern: Work finished
    on_yes: done
    on_no: done
  done:
    terminal: true
"""
LEGACY_LOOP = """\
name: oc
initial: work
max_iterations: 5
host: opencode
rate_limit:
  first_backoff: 1s
states:
  work:
    action: {action}
    action_type: slash_command
    evaluate:
      type: output_contains
      pattern: Work finished
    on_success: done
    on_failure: done
  done:
    terminal: true
"""
"""The usage-limit wait until an API's reset and ll-loop's short backoffs are the legacy
dialect's (`rate_limit:`); a HEAD file waits on its own ladder. A legacy prompt state is
`action_type: slash_command`."""


class Project:
    """A project whose `ll-loop` runs prompt states on the real opencode, offline."""

    def __init__(self, tmp_path: Path, server: FakeChatServer, opencode_bin: Path) -> None:
        self.root = tmp_path / "project"
        self.root.mkdir()
        self.env = opencode_env(
            base_url=server.base_url,
            root=tmp_path,
            opencode_bin=opencode_bin,
            work=self.root,
            extra_path=[VENV_BIN],
        )

    def run(self, loop: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        path = self.root / ".loops" / "oc.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(loop, encoding="utf-8")
        return subprocess.run(
            [str(LL_LOOP), "run", "oc"],
            cwd=self.root,
            env=env or self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
        )

    def events(self) -> list[dict[str, Any]]:
        lines = (self.root / ".loops" / ".running" / "oc.events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "api.jsonl"


def sessions(server: FakeChatServer) -> list[str | None]:
    """The opencode session of each chat request (its `x-session-id` header)."""
    return [request.headers.get("x-session-id") for request in server.chat_requests()]


def test_a_prompt_state_runs_on_opencode(tmp_path: Path, opencode_bin: Path, log: Path) -> None:
    """Issue 24 item 1: `host: opencode` runs the prompt through opencode; its text is
    the action's output; `action_complete` names the host, its session and tokens."""
    script = ChatScript([ChatRule(WORK, text=FINISHED)])
    with FakeChatServer(script, log) as server:
        project = Project(tmp_path, server, opencode_bin)
        done = project.run(LOOP.format(action=WORK))
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "Running loop: oc\n"
        "Max steps: 5\n"
        "\n"
        f"[1/5] work -> {WORK} (on opencode)\n"
        "       ✓ yes\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns, $C, N tokens)\n",
        "",
    )
    [complete] = [e for e in project.events() if e["event"] == "action_complete"]
    assert complete["host"] == "opencode" and complete["session_id"].startswith("ses_")
    assert complete["tokens"] == {"input": 23, "output": 7, "cache_read": 100, "cache_creation": 0}
    assert log.read_text() == (
        '{"path": "/v1/chat/completions", "model": "gpt-fake", '
        '"said": "\\"Please work on the parser\\"", "status": 200}\n'
    )


def test_a_handoff_continues_in_a_fresh_opencode_session(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    """A `CONTEXT_HANDOFF:` the agent says is a handoff: the state goes on in a fresh
    process (a new opencode session) with the continuation."""
    script = ChatScript(
        [
            ChatRule("Continue with module B", text=FINISHED),
            ChatRule(WORK, text="Module A done.\nCONTEXT_HANDOFF: Continue with module B"),
        ]
    )
    loop = LOOP.format(action=WORK).replace(
        "host: opencode", "host: opencode\non_handoff: continue"
    )
    with FakeChatServer(script, log) as server:
        project = Project(tmp_path, server, opencode_bin)
        done = project.run(loop)
        seen = sessions(server)
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "Running loop: oc\n"
        "Max steps: 5\n"
        "\n"
        f"[1/5] work -> {WORK} (on opencode)\n"
        "       ✗ no\n"
        "       handoff: Continue with module B\n"
        "       continuing in a fresh process (continuation 1)\n"
        f"[2/5] work -> {WORK} Continue with module B (on opencode)\n"
        "       ✓ yes\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (2 iterations, Ns, $C, N tokens)\n",
        "",
    )
    assert len(seen) == 2 and seen[0] != seen[1]


class LimitedForAWhile(ChatScript):
    """Answers the work with a usage limit (to all of opencode's tries) that resets
    `RESET_SECONDS` after the first request, and the continue prompt with the finish."""

    def __init__(self) -> None:
        limited = ChatRule(WORK, error=usage_limit(0), times=6)
        super().__init__([ChatRule("Continue where you left off", text=FINISHED), limited])
        self.resets_at: int | None = None
        self.asked_at: list[float] = []

    def answer(self, body: Any) -> Any:
        self.asked_at.append(time.time())
        if self.resets_at is None:
            self.resets_at = int(time.time()) + RESET_SECONDS
            self.rules[1].error = usage_limit(self.resets_at)
        return super().answer(body)


@pytest.mark.slow
def test_a_usage_limit_waits_for_the_reset_and_the_session_continues(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    """Issue 24 item 1: opencode's usage limit (after its own retries) is waited out until
    the reset the API gave; then the same opencode session continues (`--session`)."""
    script = LimitedForAWhile()
    with FakeChatServer(script, log) as server:
        project = Project(tmp_path, server, opencode_bin)
        done = project.run(LEGACY_LOOP.format(action=WORK))
        seen = sessions(server)
        last = server.chat_requests()[-1].body
    assert done.returncode == 0, done.stdout + done.stderr
    assert "waiting for the usage limit to reset at " in done.stdout
    assert "usage limit reset after" in done.stdout
    assert len(seen) == 7 and len(set(seen)) == 1  # one session, continued
    said = [m["content"] for m in last["messages"] if m["role"] == "user"]
    assert said == ['"Please work on the parser"', f'"{CONTINUE_PROMPT}"']
    [wait] = [e for e in project.events() if e["event"] == "limit_wait"]
    assert wait["limit_type"] == "usage_limit_reached"
    assert wait["wait_seconds"] > 0
    assert script.resets_at is not None and script.asked_at[-1] >= script.resets_at


def test_a_5xx_past_opencodes_retries_is_backed_off_and_run_again(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    """Issue 24 item 1: a transient ending (5xx after opencode's five retries) is backed
    off and run again on the same host."""
    script = ChatScript(
        [ChatRule(WORK, error=server_error(502), times=6), ChatRule(WORK, text=FINISHED)]
    )
    with FakeChatServer(script, log) as server:
        project = Project(tmp_path, server, opencode_bin)
        done = project.run(LEGACY_LOOP.format(action=WORK))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "backing off 1s (retry 1 of " in done.stdout
    assert [line.split('"status": ')[1] for line in log.read_text().splitlines()] == [
        "502}"
    ] * 6 + ["200}"]
    assert [e["event"] for e in project.events()].count("rate_limit_backoff") == 1


def test_a_missing_opencode_says_how_to_install_it(tmp_path: Path, log: Path) -> None:
    """Issue 24 item 2: `run` says in one line which CLI is missing and how to install it."""
    with FakeChatServer(ChatScript([]), log) as server:
        missing = tmp_path / "no" / "opencode"
        project = Project(tmp_path, server, missing)
        done = project.run(LOOP.format(action=WORK))
    said = (
        f"opencode CLI not found at {missing}: npm install -g opencode-ai (or set LL_OPENCODE_BIN)"
    )
    # Said before the first state runs (cli/host_preflight.py), not when it is reached.
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        f"Cannot run oc: state 'work' runs on opencode, but {said}\n",
    )
    assert not log.exists()
