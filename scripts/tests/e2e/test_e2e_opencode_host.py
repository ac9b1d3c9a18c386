"""The opencode host adapter against the real OpenCode CLI (pinned in .ci/opencode-version)
and a fake Chat Completions API on 127.0.0.1 (spec agent-hosts.md §3).

Each test starts the adapter's command as the runner does (stdin closed, in the work
directory), feeds its stdout to the adapter's stream and asks for the ending. The fake
answers errors with `retry-after-ms: 10`, so opencode's own five retries take no time.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_openai_chat import (
    ChatRule,
    ChatScript,
    FakeChatServer,
    auth_error,
    server_error,
    usage_limit,
    user_text,
)
from opencode_home import opencode_env

from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named
from little_loops.fsm.process.hosts.opencode_stream import OpenCodeStream
from little_loops.fsm.process.runner import DefaultActionRunner

CAP = 64 * 1024
RUN_SECONDS = 90
LOG_SECONDS = 3  # for opencode to log the failed request before it is stopped
Stop = Callable[[], bool]


@dataclass
class Ran:
    stream: OpenCodeStream
    said: str
    ending: HostEnding


class OpenCode:
    """The real opencode, set up offline in `root`, against `server`."""

    def __init__(
        self,
        root: Path,
        server: FakeChatServer,
        binary: Path,
        cost: dict[str, float] | None = None,
    ) -> None:
        self.work = root / "work"
        self.work.mkdir()
        self.binary = binary
        self.env = opencode_env(
            base_url=server.base_url, root=root, opencode_bin=binary, work=self.work, cost=cost
        )

    def run(self, prompt: str, *, session: str | None = None, stop: Stop | None = None) -> Ran:
        """Run opencode to its end (or, with `stop`, until `stop()` says so: then kill it
        as the runner's wall clock would, exit 124) and read it through the adapter."""
        host = host_named("opencode")
        command = host.command(str(self.binary), prompt, resume_session=session)
        process = subprocess.Popen(
            command.argv,
            cwd=self.work,
            env={**self.env, **(command.env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stopped = stop is not None and _wait_for(stop, process)
        if stopped:
            process.kill()
        stdout, stderr = process.communicate(timeout=RUN_SECONDS)
        code = 124 if stopped else process.returncode
        said: list[str] = []
        stream = host.stream(_Said(said), cap=CAP)
        stream.feed(stdout)
        stream.close()
        output, _ = stream.output_with_marker(None)
        ending = host.ending(stream.run, exit_code=code, output=output, stderr=stderr, now=0.0)
        assert isinstance(stream, OpenCodeStream)
        return Ran(stream, "".join(said), ending)


def _wait_for(stop: Stop, process: subprocess.Popen[str]) -> bool:
    """Whether `stop()` came true (within RUN_SECONDS) while the process ran."""
    deadline = time.monotonic() + RUN_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        if stop():
            return True
        time.sleep(0.1)
    return False


class _Said:
    def __init__(self, into: list[str]) -> None:
        self.into = into

    def lines(self, text: str) -> None:
        self.into.append(text)

    def piece(self, text: str) -> None:
        self.into.append(text)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "api.jsonl"


def logged(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_plain_run_text_session_tokens_cost(tmp_path: Path, opencode_bin: Path, log: Path) -> None:
    """§3: the agent's text, the session id, tokens and cost from `step_finish` (cost as
    opencode prices the model's `cost` block), one request, nothing but 127.0.0.1."""
    script = ChatScript([ChatRule("Say hello", text="Hello.\nCONTEXT_HANDOFF: go on")])
    with FakeChatServer(script, log) as server:
        opencode = OpenCode(tmp_path, server, opencode_bin, cost={"input": 3, "output": 15})
        ran = opencode.run("Say hello")
    assert ran.ending == HostEnding("success")
    assert ran.said == "Hello.\nCONTEXT_HANDOFF: go on\n"
    run = ran.stream.run
    assert run.result_text == "Hello.\nCONTEXT_HANDOFF: go on"
    assert run.session_id is not None and run.session_id.startswith("ses_")
    assert (run.input_tokens, run.output_tokens, run.cache_read_tokens) == (23, 7, 100)
    assert run.cost_usd == pytest.approx((23 * 3 + 7 * 15) / 1e6)
    assert logged(log) == [
        {"path": "/v1/chat/completions", "model": "gpt-fake", "said": '"Say hello"', "status": 200}
    ]


def test_tool_output_is_not_said_and_the_session_resumes(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    """§3: a bash result holding `CONTEXT_HANDOFF:` is not the agent's text; `--session`
    continues the same session in a new process (the history goes to the API again)."""
    script = ChatScript(
        [
            ChatRule("Run it", bash="echo 'CONTEXT_HANDOFF: from the tool'", closing="Ran it."),
            ChatRule("Go on", text="Went on."),
        ]
    )
    with FakeChatServer(script, log) as server:
        opencode = OpenCode(tmp_path, server, opencode_bin)
        first = opencode.run("Run it")
        second = opencode.run("Go on", session=first.stream.run.session_id)
        resumed = server.chat_requests()[-1].body
    assert (first.ending, first.said) == (HostEnding("success"), "Ran it.\n")
    assert (second.ending, second.said) == (HostEnding("success"), "Went on.\n")
    assert second.stream.run.session_id == first.stream.run.session_id
    roles = [message["role"] for message in resumed["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert resumed["messages"][3]["content"].startswith("CONTEXT_HANDOFF: from the tool")
    assert user_text(resumed) == '"Go on"'


def test_usage_limit_with_its_reset(tmp_path: Path, opencode_bin: Path, log: Path) -> None:
    """§3 errors: after its own retries opencode prints the last answer whole; a 429 whose
    body says usage limit ends `usage_limit` with the body's reset."""
    resets_at = int(time.time()) + 3600
    script = ChatScript([ChatRule("Say", error=usage_limit(resets_at))])
    with FakeChatServer(script, log) as server:
        ran = OpenCode(tmp_path, server, opencode_bin).run("Say hello")
    assert ran.ending == HostEnding(
        "usage_limit",
        "You've hit your usage limit. Try again later.",
        float(resets_at),
        "usage_limit_reached",
        True,
    )
    assert ran.said == ""
    assert [entry["status"] for entry in logged(log)] == [429] * 6


def test_server_errors_retried_by_opencode_then_success(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    """§3: a 500 is retried by opencode itself; the run then succeeds."""
    script = ChatScript(
        [ChatRule("Say", error=server_error(500), times=2), ChatRule("Say", text="Fine now.")]
    )
    with FakeChatServer(script, log) as server:
        ran = OpenCode(tmp_path, server, opencode_bin).run("Say hello")
    assert (ran.ending, ran.said) == (HostEnding("success"), "Fine now.\n")
    assert [entry["status"] for entry in logged(log)] == [500, 500, 200]


def test_server_errors_past_its_retries_are_transient(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    script = ChatScript([ChatRule("Say", error=server_error(503))])
    with FakeChatServer(script, log) as server:
        ran = OpenCode(tmp_path, server, opencode_bin).run("Say hello")
    assert ran.ending == HostEnding("transient", "fake server error 503")
    assert [entry["status"] for entry in logged(log)] == [503] * 6


def test_auth_failure(tmp_path: Path, opencode_bin: Path, log: Path) -> None:
    with FakeChatServer(ChatScript([ChatRule("Say", error=auth_error())]), log) as server:
        ran = OpenCode(tmp_path, server, opencode_bin).run("Say hello")
    assert ran.ending == HostEnding("auth", "Incorrect API key provided")
    assert [entry["status"] for entry in logged(log)] == [401]


@pytest.mark.slow
def test_usage_limit_while_sleeping_on_retry_after(
    tmp_path: Path, opencode_bin: Path, log: Path
) -> None:
    """§3 caveat: with a long `retry-after` opencode sleeps silently; stopped by the wall
    clock, its error log (stderr) still tells the usage limit."""
    limit = usage_limit(int(time.time()) + 3600)
    limit.headers.pop("retry-after-ms")
    limit.headers["retry-after"] = "3600"
    with FakeChatServer(ChatScript([ChatRule("Say", error=limit)]), log) as server:
        asked: list[float] = []

        def a_while_after_the_request() -> bool:
            if not asked and server.chat_requests():
                asked.append(time.monotonic())
            return bool(asked) and time.monotonic() > asked[0] + LOG_SECONDS

        opencode = OpenCode(tmp_path, server, opencode_bin)
        ran = opencode.run("Say hello", stop=a_while_after_the_request)
    assert ran.ending == HostEnding("usage_limit", "You've hit your usage limit. Try again later.")
    assert [entry["status"] for entry in logged(log)] == [429]


def test_the_runner_runs_opencode_in_its_working_directory(
    tmp_path: Path, opencode_bin: Path, log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenCode takes its project from `$PWD`: a runner whose actions run in another
    directory than its own (a Temporal worker in a checkout, a worktree sub-loop) must
    tell it, or its tools work in the runner's directory."""
    script = ChatScript([ChatRule("Write it", bash="echo made > made.txt", closing="Made.")])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with FakeChatServer(script, log) as server:
        opencode = OpenCode(tmp_path, server, opencode_bin)
        for name, value in {**opencode.env, "PWD": str(elsewhere)}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(elsewhere)
        result = DefaultActionRunner(cwd=opencode.work).run(
            "Write it", RUN_SECONDS, True, host="opencode"
        )
    assert (result.exit_code, result.output) == (0, "Made.\n")
    assert (opencode.work / "made.txt").read_text() == "made\n"
    assert list(elsewhere.iterdir()) == []
