"""The opencode host adapter (issue 24; spec agent-hosts.md §3), on lines recorded from the
real `opencode run --format json` 1.18.33 (scripts/tests/fixtures/opencode_stream/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from little_loops.fsm.model.claude_run import ClaudeRun, RateLimitInfo
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named, program_of
from little_loops.fsm.process.hosts.opencode_errors import error_reset_at
from little_loops.fsm.process.hosts.opencode_stream import OpenCodeStream

FIXTURES = Path(__file__).parent / "fixtures" / "opencode_stream"
CAP = 4096


class Lines:
    """A TextSink keeping what it was handed."""

    def __init__(self) -> None:
        self.text = ""

    def lines(self, text: str) -> None:
        self.text += text

    def piece(self, text: str) -> None:
        self.text += text


def read(name: str, *, chunk: int | None = None) -> tuple[OpenCodeStream, Lines]:
    stdout = (FIXTURES / name).read_text(encoding="utf-8")
    sink = Lines()
    stream = OpenCodeStream(sink, cap=CAP)
    step = chunk or len(stdout) or 1
    for start in range(0, len(stdout), step):
        stream.feed(stdout[start : start + step])
    stream.close()
    return stream, sink


def ending_of(name: str, exit_code: int = 1, stderr: str = "") -> HostEnding:
    stream, _ = read(name)
    output, _ = stream.output_with_marker(None)
    return host_named("opencode").ending(
        stream.run, exit_code=exit_code, output=output, stderr=stderr, now=0.0
    )


def test_command_for_a_new_session_spec_3() -> None:
    """§3 headless invocation: JSON events, approvals off, errors on stderr, a title (no
    extra title request), the prompt one argument after `--`."""
    command = host_named("opencode").command("opencode", "-x first line\nsecond")
    assert command.argv == [
        "opencode",
        "run",
        "--format",
        "json",
        "--auto",
        "--print-logs",
        "--log-level",
        "ERROR",
        "--title=-x first line",
        "--",
        "-x first line\nsecond",
    ]
    assert command.env is None


def test_command_resumes_the_session_with_the_model_spec_3() -> None:
    """§3 sessions: `run --session <id>`; `-m provider/model` when the state names one."""
    command = host_named("opencode").command(
        "/opt/opencode", "go on", resume_session="ses_1", model="fake/gpt-fake"
    )
    assert command.argv == [
        "/opt/opencode",
        "run",
        "--format",
        "json",
        "--auto",
        "--print-logs",
        "--log-level",
        "ERROR",
        "--session=ses_1",
        "--model=fake/gpt-fake",
        "--",
        "go on",
    ]


def test_program_and_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    host = host_named("opencode")
    monkeypatch.delenv("LL_OPENCODE_BIN", raising=False)
    assert program_of(host) == "opencode"
    monkeypatch.setenv("LL_OPENCODE_BIN", "/x/opencode")
    assert program_of(host) == "/x/opencode"
    assert host.install_hint == "npm install -g opencode-ai (or set LL_OPENCODE_BIN)"
    assert (host.name, host.takes_model, host.can_resume) == ("opencode", True, True)


@pytest.mark.parametrize("chunk", [None, 1, 7])
def test_plain_run_text_session_tokens_cost_spec_3(chunk: int | None) -> None:
    """§3 usage: tokens summed from `step_finish`, cost as opencode computed it (the
    recording's model has a `cost` block: 23 in x $3 + 7 out x $15 + 100 cached x $0.3)."""
    stream, sink = read("plain.jsonl", chunk=chunk)
    said = "Hello there.\nCONTEXT_HANDOFF: continue with step 2\n"
    assert sink.text == said
    assert stream.output_with_marker(None) == (said, False)
    assert stream.run == ClaudeRun(
        session_id="ses_dea902d99ffeVTMkht5y7mcrr0",
        result_text="Hello there.\nCONTEXT_HANDOFF: continue with step 2",
        cost_usd=0.000204,
        input_tokens=23,
        output_tokens=7,
        cache_read_tokens=100,
        num_turns=1,
    )
    assert ending_of("plain.jsonl", exit_code=0) == HostEnding("success")


def test_tool_output_is_not_what_the_agent_says_spec_3() -> None:
    """A bash result holding `CONTEXT_HANDOFF:` is not handed on; the output is the text
    of the agent's last message; two steps' tokens are summed."""
    stream, sink = read("tool_output.jsonl")
    assert sink.text == "The tool ran; nothing to hand off.\n"
    assert stream.output_with_marker(None) == ("The tool ran; nothing to hand off.\n", False)
    assert (stream.run.input_tokens, stream.run.output_tokens, stream.run.num_turns) == (46, 14, 2)
    assert stream.run.cost_usd == 0.0


def test_output_keeps_the_last_message_only_and_is_capped() -> None:
    stream = OpenCodeStream(None, cap=10)
    for message_id, text in (("m1", "first message"), ("m2", "0123456789abcdef")):
        part = f'{{"type":"text","messageID":"{message_id}","text":"{text}"}}'
        stream.feed(f'{{"type":"text","sessionID":"s","part":{part}}}\n')
    stream.feed("plain words\n")
    stream.close()
    assert stream.run.result_text == "0123456789abcdef"
    output, cut = stream.output_with_marker(None)
    assert cut is True
    assert output.endswith("789abcdef\n")


def test_usage_limit_with_its_reset_from_the_body_spec_3() -> None:
    """§3 errors: the final `error` event has status, headers and body; a 429 whose body
    names a usage limit is one, reset from `error.resets_at`."""
    stream, sink = read("usage_limit.jsonl")
    assert sink.text == ""
    assert stream.run.rate_limit == RateLimitInfo(
        "rejected", 1795660000.0, "usage_limit_reached", None
    )
    assert ending_of("usage_limit.jsonl") == HostEnding(
        "usage_limit",
        "You've hit your usage limit. Try again later.",
        1795660000.0,
        "usage_limit_reached",
        True,
    )


def test_server_error_is_transient_spec_3() -> None:
    assert ending_of("server_error.jsonl") == HostEnding("transient", "fake server error 500")


def test_auth_failure_spec_3() -> None:
    assert ending_of("auth.jsonl") == HostEnding("auth", "Incorrect API key provided")


def test_usage_limit_seen_only_in_the_log_of_a_stopped_run_spec_3() -> None:
    """§3: on a long `retry-after` opencode sleeps silently; stopped by the wall clock,
    its ERROR log line is what tells the usage limit (reset unknown)."""
    stderr = (FIXTURES / "sleeping_usage_limit.stderr").read_text(encoding="utf-8")
    ending = host_named("opencode").ending(
        ClaudeRun(), exit_code=124, output="", stderr=stderr, now=0.0
    )
    assert ending == HostEnding("usage_limit", "You've hit your usage limit. Try again later.")


def test_other_failure_names_what_opencode_said() -> None:
    ending = host_named("opencode").ending(
        ClaudeRun(), exit_code=1, output="", stderr="Error: Session not found\n", now=0.0
    )
    assert ending == HostEnding("other", "Error: Session not found")


@pytest.mark.parametrize(
    ("headers", "body", "resets_at"),
    [
        ({"x-ratelimit-reset-requests": "6m0s", "x-ratelimit-reset-tokens": "20ms"}, "", 1360.0),
        ({"retry-after": "30"}, "", 1030.0),
        ({"retry-after-ms": "1500"}, "", 1001.5),
        ({}, '{"error": {"resets_in_seconds": 90}}', 1090.0),
        ({}, '{"error": {"resets_at": 1795660000000}}', 1795660000.0),
        ({}, "not json", None),
    ],
)
def test_reset_times_from_headers_and_body(
    headers: dict[str, str], body: str, resets_at: float | None
) -> None:
    data = {"responseHeaders": headers, "responseBody": body}
    assert error_reset_at(data, 1000.0) == resets_at
