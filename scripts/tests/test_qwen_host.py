"""The qwen host adapter (issue 24; spec agent-hosts.md §4), on lines recorded from the real
Qwen Code 0.24.4 (`--output-format stream-json`, scripts/tests/fixtures/qwen_stream/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named
from little_loops.fsm.process.hosts.qwen import QwenStream

FIXTURES = Path(__file__).parent / "fixtures" / "qwen_stream"
AUTH_MESSAGE = (
    '[API Error: 401 {"type":"error","error":{"type":"authentication_error",'
    '"message":"invalid x-api-key"}}]'
)


class Said:
    def __init__(self) -> None:
        self.text = ""

    def lines(self, text: str) -> None:
        self.text += text

    def piece(self, text: str) -> None:
        self.text += text


def read(name: str) -> tuple[QwenStream, Said]:
    said = Said()
    stream = QwenStream(said, cap=4096)
    stream.feed((FIXTURES / name).read_text(encoding="utf-8"))
    stream.close()
    return stream, said


def test_command_spec_4() -> None:
    """§4: stream-json, tools approved (`--yolo`), `--resume`, `--model`; the prompt as
    `--prompt=` so a leading `-` is not an option."""
    qwen = host_named("qwen-code")
    assert qwen.command("qwen", "-x do it").argv == [
        "qwen",
        "--prompt=-x do it",
        "--output-format",
        "stream-json",
        "--yolo",
    ]
    assert qwen.command("/q", "go", resume_session="s1", model="qwen3-coder").argv == [
        "/q",
        "--prompt=go",
        "--output-format",
        "stream-json",
        "--yolo",
        "--resume=s1",
        "--model=qwen3-coder",
    ]
    assert qwen.install_hint == "npm install -g @qwen-code/qwen-code (or set LL_QWEN_BIN)"


def test_tool_output_is_not_said_spec_4() -> None:
    """A tool result holding `CONTEXT_HANDOFF:` is not handed on; result, session, tokens."""
    stream, said = read("tool_output.jsonl")
    assert said.text == "Ran it.\n"
    assert stream.output_with_marker(None) == ("Ran it.\n", False)
    run = stream.run
    assert (run.result_text, run.is_error, run.num_turns) == ("Ran it.", False, 2)
    assert run.session_id is not None and run.input_tokens > 0
    ending = host_named("qwen").ending(run, exit_code=0, output="", stderr="", now=0.0)
    assert ending == HostEnding("success")


def test_a_refused_key_spec_4() -> None:
    """The failed result gives `error.message` (no `result` text): it is the output and
    the ending's message."""
    stream, _ = read("auth.jsonl")
    assert (stream.run.is_error, stream.run.result_text) == (True, AUTH_MESSAGE)
    ending = host_named("qwen").ending(stream.run, exit_code=1, output="", stderr="", now=0.0)
    assert ending == HostEnding("auth", AUTH_MESSAGE)


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("[API Error: 500 fake internal error]", "transient"),
        ("[API Error: 429 Too Many Requests]", "transient"),
        ("[API Error: 529 Overloaded]", "transient"),
        ("[API Error: 429 You exceeded your current quota]", "usage_limit"),
        ("[API Error: 403 forbidden]", "auth"),
        ("[API Error: 400 bad request]", "other"),
    ],
)
def test_endings_from_the_error_message(message: str, kind: str) -> None:
    run = ClaudeRun(is_error=True, result_text=message)
    assert host_named("qwen").ending(run, exit_code=1, output="", stderr="", now=0.0) == (
        HostEnding(kind, message)  # type: ignore[arg-type]
    )
