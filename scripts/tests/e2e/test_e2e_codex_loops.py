"""Loops with `host: codex` run by a real `ll-loop` on the real Codex CLI (pinned in
.ci/codex-version) against the fake Responses API on 127.0.0.1 (issue 24 items 1 and 7):
a plain run, a handoff, a usage limit with a near reset (waited out, then the same codex
session continues), a 5xx retried, and a missing CLI named in one line with its install.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from codex_home import codex_env, write_config
from e2e_project import VENV_BIN, E2EProject
from fake_openai import (
    FakeResponsesServer,
    RecordedRequest,
    Reply,
    server_error_reply,
    text_reply,
    usage_limit_reply,
    user_text,
)
from fixtures.cli_support import normalize

from little_loops.fsm.process.hosts.openai_prices import openai_cost

PROMPT = "Please work on the parser"
FINISHED = "Work finished."
LOOP = """\
name: work
host: codex
initial: work
max_steps: 5
rate_limit:
  first_backoff: 1s
states:
  work:
    action: "Please work on the parser"
    action_type: prompt
    evaluate:
      type: output_contains
      pattern: Work finished
    on_yes: done
    on_no: work
  done:
    terminal: true
"""
COMPLETED = (
    "       ✓ yes\n       -> done (Ns)\n\nLoop completed: done (1 iteration, Ns, $C, N tokens)\n"
)


class Answers:
    """The fake API's responder: the first replies in order, then `Work finished.`."""

    def __init__(self, *first: Reply) -> None:
        self.first = list(first)

    def __call__(self, request: RecordedRequest) -> Reply:
        return self.first.pop(0) if self.first else text_reply(FINISHED)


@dataclass
class CodexProject:
    project: E2EProject
    server: FakeResponsesServer
    env: dict[str, str]

    def run(self, *replies: Reply, loop: str = LOOP) -> tuple[int, str, str]:
        self.server.responder = Answers(*replies)
        self.project.write_loop("work", loop)
        done = self.project.ll_loop("run", "work", env=self.env)
        return done.returncode, normalize(done.stdout), normalize(done.stderr)


@pytest.fixture
def codex(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codex_bin: Path
) -> Iterator[CodexProject]:
    root, home = tmp_path / "project", tmp_path / "codexhome"
    root.mkdir()
    monkeypatch.chdir(root)
    with FakeResponsesServer(log=tmp_path / "requests.jsonl") as server:
        write_config(home, server.base_url)
        env = codex_env(codex_home=home, codex_bin=codex_bin, extra_path=[VENV_BIN])
        # No claude anywhere: the loop must not need it.
        project = E2EProject(root, tmp_path, server.base_url, tmp_path / "no-claude")
        yield CodexProject(project, server, env)


def test_plain_run_on_codex_with_the_states_model(codex: CodexProject) -> None:
    """The state's `model:` reaches the API; the action's record names the host, the codex
    session and the turn's tokens; its cost is the model's list price."""
    with_model = LOOP.replace(
        "action_type: prompt\n", "action_type: prompt\n    model: gpt-5-codex\n"
    )
    assert codex.run(loop=with_model) == (
        0,
        f"Running loop: work\nMax steps: 5\n\n[1/5] work -> {PROMPT} (on codex)\n"
        + COMPLETED.replace("(Ns)", "(Ns, $C)"),
        "",
    )
    (request,) = codex.server.requests
    assert (user_text(request), request.body["model"]) == (PROMPT, "gpt-5-codex")
    [complete] = [e for e in codex.project.events("work") if e["event"] == "action_complete"]
    tokens = {"input": 23, "output": 7, "cache_read": 100, "cache_creation": 0}
    assert (complete["host"], complete["session_id"], complete["tokens"]) == (
        "codex",
        request.headers["session-id"],
        tokens,
    )
    cost = openai_cost("gpt-5-codex", uncached_input=23, cached_input=100, output=7)
    assert cost is not None
    state = codex.project.state("work")
    assert (state["status"], state["spending"]) == (
        "completed",
        {"cost_usd": round(cost, 6), "tokens": tokens},
    )


def test_handoff_is_read_from_what_codex_says(codex: CodexProject) -> None:
    """The agent's message carries CONTEXT_HANDOFF: the loop pauses for it (exit 3)."""
    said = text_reply("Module A done.\nCONTEXT_HANDOFF: Continue with module B")
    assert codex.run(said) == (
        3,
        "Running loop: work\nMax steps: 5\n\n"
        f"[1/5] work -> {PROMPT} (on codex)\n"
        "       ✗ no\n"
        "       handoff: Continue with module B\n"
        "\n"
        "Loop paused for handoff: work (1 iteration, Ns, $C, N tokens)\n"
        "Continuation: Continue with module B\n"
        "Resume with: ll-loop resume work\n",
        "",
    )
    assert codex.project.state("work")["status"] == "awaiting_continuation"


@pytest.mark.slow
def test_usage_limit_is_waited_out_and_the_same_session_continues(codex: CodexProject) -> None:
    """Codex's usage limit with a reset 4 s away: ll-loop waits for the exact reset (read
    from the session file), then resumes the same codex session (`exec resume`)."""
    started = time.time()
    exit_code, stdout, stderr = codex.run(usage_limit_reply(started + 4))
    assert (exit_code, stderr) == (0, "")
    waited = re.sub(r"\d{1,2}:\d{2}( AM|am)", "HH:MM", re.sub(r"\d+s\b", "Ns", stdout))
    assert waited == (
        "Running loop: work\nMax steps: 5\n\n"
        f"[1/5] work -> {PROMPT} (on codex)\n"
        "       You\u2019ve hit your usage limit. Try again at HH:MM.\n"
        "       waiting for the usage limit to reset at HH:MM (UTC), Ns\n"
        "       usage limit reset after Ns: work again\n"
        "[1/5] work -> Continue where you left off. You were stopped by a usage lim... (on codex)\n"
        f"{COMPLETED}"
    )
    limited, again = codex.server.requests
    assert again.headers["session-id"] == limited.headers["session-id"]
    assert PROMPT in str(again.body["input"])
    assert user_text(again).startswith("Continue where you left off.")
    assert time.time() - started >= 4


@pytest.mark.slow
def test_server_error_is_backed_off_and_retried_on_codex(codex: CodexProject) -> None:
    """A 5xx codex gave up on is transient: backed off and run again on the same host."""
    assert codex.run(server_error_reply(500)) == (
        0,
        "Running loop: work\nMax steps: 5\n\n"
        f"[1/5] work -> {PROMPT} (on codex)\n"
        "       We\u2019re currently experiencing high demand, which may cause temporary errors.\n"
        "       backing off 1s (retry 1 of 8)\n"
        f"[1/5] work -> {PROMPT} (on codex)\n"
        f"{COMPLETED}",
        "",
    )
    assert len(codex.server.requests) == 2


def test_missing_codex_is_named_in_one_line_with_its_install(
    codex: CodexProject, tmp_path: Path
) -> None:
    """Said before the first state runs (cli/host_preflight.py), not when it is reached."""
    codex.env["LL_CODEX_BIN"] = str(tmp_path / "nowhere" / "codex")
    missing = (
        f"codex CLI not found at {tmp_path}/nowhere/codex: "
        "npm install -g @openai/codex (or set LL_CODEX_BIN)"
    )
    assert codex.run() == (1, "", f"Cannot run work: state 'work' runs on codex, but {missing}\n")
    assert codex.server.requests == []
