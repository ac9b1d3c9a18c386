"""The gemini host adapter (issue 24 §1 Hosts): command, stream reading, endings, prices.

The stream tests read what the real Gemini CLI 0.61.0 printed against the fake API
(`fixtures/gemini_stream/`, recorded by `e2e/gemini_cases.py`; `e2e/test_e2e_gemini_host.py`
checks that the CLI still prints the same shapes).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.process.hosts import host_named
from little_loops.fsm.process.hosts.gemini import GeminiHost
from little_loops.fsm.process.hosts.gemini_endings import (
    http_status_of_exit,
    next_pacific_midnight,
)
from little_loops.fsm.process.hosts.gemini_prices import cost_of_stats, cost_of_tokens
from little_loops.fsm.process.hosts.gemini_stream import GeminiStream
from little_loops.fsm.process.output_files import truncation_marker

FIXTURES = Path(__file__).parent / "fixtures" / "gemini_stream"
EXIT_CODES: dict[str, int] = json.loads((FIXTURES / "exit_codes.json").read_text())
NOW = datetime(2026, 11, 26, 1, 0, tzinfo=UTC).timestamp()
QUOTA_TAIL = (
    "Please wait and try again later. To increase your limits, request a quota increase "
    "through AI Studio, or switch to another /auth method"
)
# gemini-2.5-flash: $0.30 input, $2.50 output, $0.075 cached input per million tokens.
FLASH_COST_130 = (23 * 0.30 + 7 * 2.50 + 100 * 0.075) / 1_000_000


class Sink:
    """Records what a stream hands on."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def lines(self, text: str) -> None:
        self.said.append(text)

    def piece(self, text: str) -> None:
        self.said.append(text)


def read_fixture(
    case: str, *, chunk: int | None = None, cap: int = 10_000, resuming: bool = False
) -> GeminiStream:
    text = (FIXTURES / f"{case}.jsonl").read_text(encoding="utf-8")
    stream = GeminiStream(Sink(), cap=cap, resuming=resuming)
    pieces = [text] if chunk is None else [text[i : i + chunk] for i in range(0, len(text), chunk)]
    for piece in pieces:
        stream.feed(piece)
    stream.close()
    return stream


def said(stream: GeminiStream) -> str:
    sink = stream._sink
    assert isinstance(sink, Sink)
    return "".join(sink.said)


def ending_of(case: str) -> HostEnding:
    stream = read_fixture(case)
    output, _ = stream.output_with_marker(None)
    return GeminiHost().ending(
        stream.run, exit_code=EXIT_CODES[case], output=output, stderr="", now=NOW
    )


# command()


def test_command_is_headless_stream_json_with_approvals_off() -> None:
    """agent-hosts.md §2 Headless invocation: stream-json, yolo, folder trust skipped."""
    command = host_named("gemini-cli").command("gemini", "-starts with a dash")
    assert command.argv == [
        "gemini",
        "--prompt=-starts with a dash",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "yolo",
        "--skip-trust",
    ]
    assert command.env is None


def test_command_passes_the_model_and_resumes_the_session() -> None:
    """agent-hosts.md §2 Sessions: `--resume <id>` continues the same session."""
    command = GeminiHost().command("/opt/gemini", "go on", resume_session="abc", model="m1")
    assert command.argv[-4:] == ["--model", "m1", "--resume", "abc"]
    assert GeminiHost().takes_model and GeminiHost().can_resume


# stream()


@pytest.mark.parametrize("chunk", [None, 1, 7, 64])
def test_agent_text_is_joined_from_deltas_into_whole_lines(chunk: int | None) -> None:
    """The deltas `CONTEXT_HANDOFF:` + ` continue with s` + `tep 2` reach the reader as
    one line, so the signal is read whole."""
    stream = read_fixture("handoff_text", chunk=chunk)
    assert said(stream) == "Half way there.\nCONTEXT_HANDOFF: continue with step 2\n"
    run = stream.run
    assert run.result_text == "Half way there.\nCONTEXT_HANDOFF: continue with step 2"
    assert run.session_id is not None and len(run.session_id) == 36
    assert (run.input_tokens, run.cache_read_tokens, run.output_tokens) == (23, 100, 7)
    assert run.cost_usd == pytest.approx(FLASH_COST_130)
    assert not run.is_error
    assert stream.output_with_marker(None) == (
        "Half way there.\nCONTEXT_HANDOFF: continue with step 2\n",
        False,
    )


def test_tool_output_is_not_handed_on() -> None:
    """A tool result holding `CONTEXT_HANDOFF:` is not the agent handing off."""
    stream = read_fixture("tool_output_handoff", chunk=5)
    assert said(stream) == "The tool ran; all is fine.\n"
    assert stream.run.result_text == "The tool ran; all is fine."
    assert (stream.run.input_tokens, stream.run.output_tokens) == (46, 14)
    assert stream.run.cache_read_tokens == 200


def test_only_the_last_turn_is_the_result_text() -> None:
    """What the agent said before its last tool call is handed on, but is not the result."""
    lines = [
        {"type": "init", "session_id": "s1", "model": "gemini-2.5-pro"},
        {"type": "message", "role": "assistant", "content": "Let me look.", "delta": True},
        {"type": "tool_use", "tool_name": "ls", "tool_id": "t1", "parameters": {}},
        {"type": "tool_result", "tool_id": "t1", "status": "success", "output": "a.txt"},
        {"type": "message", "role": "assistant", "content": "Found a.txt", "delta": True},
        {"type": "result", "status": "success", "stats": {"input_tokens": 10}},
    ]
    stream = GeminiStream(Sink(), cap=1000)
    stream.feed("".join(json.dumps(line) + "\n" for line in lines))
    stream.close()
    assert said(stream) == "Let me look.\nFound a.txt\n"
    assert stream.run.result_text == "Found a.txt"
    assert stream.run.input_tokens == 10 and stream.run.cost_usd == pytest.approx(1.25e-5)


def test_plain_text_passes_through_and_a_run_cut_short_keeps_what_was_said() -> None:
    """No `result` (the CLI was killed): the output is all the agent said, last line too."""
    stream = GeminiStream(Sink(), cap=1000)
    stream.feed("not json\n")
    stream.feed(json.dumps({"type": "message", "role": "assistant", "content": "partial"}))
    stream.feed("\n")
    stream.close()
    assert said(stream) == "not json\npartial\n"
    assert stream.run.result_text is None
    assert stream.output_with_marker(None) == ("not json\npartial\n", False)


def test_output_over_the_cap_is_cut_behind_the_marker() -> None:
    stream = read_fixture("handoff_text", cap=20)
    text = "Half way there.\nCONTEXT_HANDOFF: continue with step 2\n"
    tail = text.encode()[-20:].decode()
    dropped = len(text.encode()) - 20
    marker = truncation_marker("output", dropped, "/logs/out.log")
    assert stream.output_with_marker("/logs/out.log") == (marker + tail, True)


def test_a_new_session_that_failed_before_any_answer_has_no_session_to_resume() -> None:
    """gemini rolls a failed first prompt back and then refuses `--resume` ("No previous
    sessions found for this project."): such a run reports no session, so it is run again
    afresh. A session that got an answer (a tool call) before the limit, or one that was
    itself resumed, is kept."""
    assert read_fixture("daily_quota").run.session_id is None
    assert read_fixture("daily_quota", resuming=True).run.session_id is not None
    after_tool = read_fixture("quota_after_tool").run
    assert after_tool.session_id is not None and after_tool.is_error
    assert (after_tool.input_tokens, after_tool.output_tokens) == (23, 7)


def test_the_adapter_tells_its_stream_when_it_resumes() -> None:
    host = GeminiHost()
    host.command("gemini", "go on", resume_session="abc")
    failed = '{"type":"init","session_id":"abc"}\n{"type":"result","status":"error"}\n'
    stream = host.stream(None, cap=100)
    stream.feed(failed)
    assert stream.run.session_id == "abc"
    fresh = GeminiHost()
    fresh.command("gemini", "go")
    stream = fresh.stream(None, cap=100)
    stream.feed(failed)
    assert stream.run.session_id is None
    assert stream.run.result_text == "gemini failed"


# ending()


def test_success() -> None:
    assert ending_of("handoff_text") == HostEnding("success")


def test_daily_quota_is_a_usage_limit_until_pacific_midnight() -> None:
    """The CLI drops the reset time of a daily quota; Google resets them at midnight PT."""
    ending = ending_of("daily_quota")
    message = "[API Error: You have exhausted your daily quota on this model.]\n" + QUOTA_TAIL
    reset = datetime(2026, 11, 26, 8, 0, tzinfo=UTC).timestamp()  # midnight PST
    assert ending == HostEnding("usage_limit", message, reset, "daily")
    assert ending.as_limit() == LimitHit("usage_limit", message, reset, "daily", False)


def test_quota_with_a_retry_delay_resets_after_it() -> None:
    ending = ending_of("quota_retry_after")
    message = (
        "[API Error: You exceeded your current quota, please check your plan and billing "
        "details.\nSuggested retry after 3600s.]\n" + QUOTA_TAIL
    )
    assert ending == HostEnding("usage_limit", message, NOW + 3600, "quota", exact_reset=True)


def test_server_error_and_overload_are_transient() -> None:
    body = (
        '{"error":{"code":500,"message":"An internal error has occurred.",'
        '"status":"INTERNAL","details":[]}}'
    )
    assert ending_of("server_error") == HostEnding("transient", f"[API Error: {body}]")
    assert ending_of("overloaded") == HostEnding(
        "transient", "[API Error: The model is overloaded. Please try again later.]"
    )
    assert ending_of("overloaded").as_limit() == LimitHit(
        "rate_limit", "[API Error: The model is overloaded. Please try again later.]"
    )


def test_rejected_key_is_auth() -> None:
    body = (
        '{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",'
        '"status":"INVALID_ARGUMENT","details":[]}}'
    )
    assert ending_of("bad_key") == HostEnding("auth", f"[API Error: {body}]")


YOLO = "YOLO mode is enabled. All tool calls will be automatically approved.\n"


def test_failures_before_any_stream_are_read_from_stderr() -> None:
    """Exit 41 (no key, or no auth method) prints nothing on stdout: the words come from
    stderr (as gemini 0.61.0 printed them), without the lines it prints on every run."""
    host = GeminiHost()
    no_key = (
        "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n"
        "Update your environment and try again (no reload needed if using .env)!\n"
    )
    ending = host.ending(ClaudeRun(), exit_code=41, output="", stderr=YOLO + no_key, now=NOW)
    assert ending == HostEnding("auth", no_key.strip())
    no_method = YOLO + "Invalid auth method selected.\n"
    ending = host.ending(ClaudeRun(), exit_code=41, output="", stderr=no_method, now=NOW)
    assert ending == HostEnding("auth", "Invalid auth method selected.")
    other = host.ending(ClaudeRun(), exit_code=1, output="", stderr=YOLO + "boom\n", now=NOW)
    assert other == HostEnding("other", "boom")


def test_a_429_naming_no_quota_is_transient() -> None:
    run = ClaudeRun(is_error=True, result_text="[API Error: Too many requests]")
    ending = GeminiHost().ending(run, exit_code=173, output="", stderr="", now=NOW)
    assert ending == HostEnding("transient", "[API Error: Too many requests]")


def test_exit_codes_are_http_statuses_mod_256() -> None:
    assert [http_status_of_exit(code) for code in (173, 244, 247, 144, 1, 41, 0)] == [
        429,
        500,
        503,
        400,
        None,
        None,
        None,
    ]


def test_next_pacific_midnight_in_summer_time() -> None:
    july = datetime(2026, 7, 1, 12, 0, tzinfo=UTC).timestamp()  # 05:00 PDT
    assert next_pacific_midnight(july) == datetime(2026, 7, 2, 7, 0, tzinfo=UTC).timestamp()


# prices


def test_prices_per_model_and_unpriced_models() -> None:
    assert cost_of_tokens(
        "models/gemini-2.5-flash-lite", uncached=1_000_000, cached=0, output=0
    ) == (pytest.approx(0.10))
    assert cost_of_tokens("gemma-3", uncached=1, cached=0, output=0) is None
    stats = {
        "models": {
            "gemini-2.5-pro": {"input": 1_000_000, "cached": 0, "output_tokens": 0},
            "gemini-2.5-flash-lite": {"input_tokens": 1_000_000, "cached": 0},
        }
    }
    assert cost_of_stats(stats, None) == pytest.approx(1.35)
    unpriced = {"models": {"some-new-model": {"input": 5}}}
    assert cost_of_stats(unpriced, None) is None
