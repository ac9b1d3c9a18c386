"""The codex host adapter against the real Codex CLI (pinned in .ci/codex-version) and the
fake Responses API on 127.0.0.1 (issue 24 item 7; spec agent-hosts.md §1).

Each test starts `codex` with the adapter's own command line (stdin closed, as the runner
does), reads its stdout with the adapter's stream and classifies the ending with the
adapter's `ending`, which reads the session rollout file in the test's Codex home.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from codex_home import codex_env, write_config
from fake_openai import (
    FakeResponsesServer,
    ResponsesScript,
    Step,
    auth_error_reply,
    quota_headers,
    server_error_reply,
    text_reply,
    usage_limit_reply,
    user_text,
)

from little_loops.fsm.model.claude_run import ClaudeRun, RateLimitInfo
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named
from little_loops.fsm.process.hosts.openai_prices import openai_cost
from little_loops.fsm.process.output_streams import OutputReaders

CAP = 1024 * 1024
RUN_TIMEOUT = 60


@dataclass
class CodexRun:
    run: ClaudeRun
    ending: HostEnding
    said: list[str]
    output: str


@dataclass
class Codex:
    """The real codex, its home in tmp_path, the fake API and a work folder."""

    binary: Path
    home: Path
    work: Path
    server: FakeResponsesServer
    script: ResponsesScript = field(default_factory=lambda: ResponsesScript([]))

    def configure(self, *, stream_max_retries: int = 0) -> None:
        write_config(self.home, self.server.base_url, stream_max_retries=stream_max_retries)

    def run(self, prompt: str, *, resume: str | None = None, model: str | None = None) -> CodexRun:
        host = host_named("codex")
        command = host.command(str(self.binary), prompt, resume_session=resume, model=model)
        env = {**codex_env(codex_home=self.home, codex_bin=self.binary), **(command.env or {})}
        finished = subprocess.run(
            command.argv,
            cwd=self.work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        said: list[str] = []
        stream = host.stream(OutputReaders(on_line=said.append, on_text=None), cap=CAP)
        stream.feed(finished.stdout)
        stream.close()
        output, _ = stream.output_with_marker(None)
        ending = host.ending(
            stream.run,
            exit_code=finished.returncode,
            output=output,
            stderr=finished.stderr,
            now=time.time(),
        )
        return CodexRun(stream.run, ending, said, output)


@pytest.fixture
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codex_bin: Path) -> Iterator[Codex]:
    home, work = tmp_path / "codexhome", tmp_path / "work"
    work.mkdir()
    # The adapter reads the rollout files from the user's CODEX_HOME: the test's here.
    monkeypatch.setenv("CODEX_HOME", str(home))
    with FakeResponsesServer(log=tmp_path / "requests.jsonl") as server:
        codex = Codex(codex_bin, home, work, server)
        server.responder = codex.script
        codex.configure()
        yield codex


def test_plain_run_text_session_tokens_cost_and_quota(codex: Codex) -> None:
    """A plain run: the agent's text, the session id, the turn's tokens, the list-price cost
    of the model the state named, and the quota use the API reported (for pacing)."""
    resets = time.time() + 3600
    reply = text_reply("Hello.\nCONTEXT_HANDOFF: go on", headers=quota_headers(42.5, resets))
    codex.script.steps = [Step("- greet", reply=reply)]
    done = codex.run("- greet me", model="gpt-5-codex")
    assert done.ending == HostEnding("success")
    assert done.said == ["Hello.", "CONTEXT_HANDOFF: go on"]
    assert done.output == "Hello.\nCONTEXT_HANDOFF: go on\n"
    run = done.run
    assert run.session_id and len(run.session_id) == 36
    assert (run.input_tokens, run.cache_read_tokens, run.output_tokens) == (23, 100, 7)
    assert run.cost_usd == openai_cost("gpt-5-codex", uncached_input=23, cached_input=100, output=7)
    assert run.rate_limit == RateLimitInfo("allowed", float(int(resets)), "five_hour", 0.425)
    (request,) = codex.server.requests
    assert request.body["model"] == "gpt-5-codex"
    assert user_text(request) == "- greet me"


def test_tool_output_saying_handoff_is_not_the_agent(codex: Codex) -> None:
    """A shell command runs for real; its output says CONTEXT_HANDOFF, the agent does not."""
    command = "echo CONTEXT_HANDOFF: from a file > out.txt; cat out.txt"
    codex.script.steps = [Step("work", shell=command, closing="Ok.")]
    done = codex.run("work please")
    assert done.ending == HostEnding("success")
    assert done.said == ["Ok."]
    assert (codex.work / "out.txt").read_text() == "CONTEXT_HANDOFF: from a file\n"
    call_output = codex.server.requests[1].body["input"][-1]
    assert call_output["type"] == "function_call_output"
    assert "CONTEXT_HANDOFF: from a file" in str(call_output["output"])


def test_resume_continues_the_session_in_a_new_process(codex: Codex) -> None:
    """`exec resume <id>`: the same session, the earlier turn in the request, and the
    resumed turn's own tokens (codex prints the thread's total)."""
    codex.script.steps = [Step("first", text="First done."), Step("second", text="Second done.")]
    first = codex.run("first part")
    second = codex.run("second part", resume=first.run.session_id)
    assert second.ending == HostEnding("success")
    assert second.run.session_id == first.run.session_id
    assert second.said == ["Second done."]
    assert user_text(codex.server.requests[1]) == "second part"
    history = str(codex.server.requests[1].body["input"])
    assert "first part" in history and "First done." in history
    tokens = (second.run.input_tokens, second.run.cache_read_tokens, second.run.output_tokens)
    assert tokens == (23, 100, 7)


def test_usage_limit_ends_with_the_exact_reset(codex: Codex) -> None:
    """A spent plan: codex stops at once; the ending is a usage limit with the reset."""
    resets = int(time.time()) + 120
    codex.script.steps = [Step("work", reply=usage_limit_reply(resets))]
    done = codex.run("work please")
    assert done.ending.kind == "usage_limit"
    assert done.ending.message.startswith("You\u2019ve hit your usage limit. Try again at ")
    assert (done.ending.resets_at, done.ending.exact_reset) == (float(resets), True)
    assert done.ending.limit_type == "five_hour"
    assert done.run.rate_limit == RateLimitInfo("rejected", float(resets), "five_hour", 1.0)
    assert len(codex.server.requests) == 1


def test_server_error_is_transient_after_codex_retries(codex: Codex) -> None:
    """A 5xx: codex retries it (once here), then gives up; the ending is transient."""
    codex.configure(stream_max_retries=1)
    codex.script.steps = [Step("work", reply=server_error_reply(500))]
    done = codex.run("work please")
    assert done.ending == HostEnding(
        "transient",
        "We\u2019re currently experiencing high demand, which may cause temporary errors.",
    )
    assert len(codex.server.requests) == 2


def test_rejected_key_is_an_auth_failure(codex: Codex) -> None:
    codex.script.steps = [Step("work", reply=auth_error_reply())]
    done = codex.run("work please")
    assert done.ending == HostEnding(
        "auth",
        f"unexpected status 401 Unauthorized: bad key, url: {codex.server.base_url}/responses",
    )
