"""ClaudeStream on transcripts recorded from the real Claude Code CLI (2.1.330, against the
fake Messages API: `fixtures/claude_stream/`), and on plain text that must pass through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from little_loops.fsm.process.claude_stream import ClaudeRun, ClaudeStream, RateLimitInfo
from little_loops.fsm.process.output_streams import OutputReaders
from little_loops.fsm.signal_detector import SignalDetector

TRANSCRIPTS = Path(__file__).parent / "fixtures" / "claude_stream"
CAP = 1024 * 1024


def transcript(name: str) -> str:
    return (TRANSCRIPTS / f"{name}.jsonl").read_text(encoding="utf-8")


class Sink:
    """Records what the stream hands on, the way the runner's readers get it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.blocks: list[str] = []
        self.readers = OutputReaders(on_line=self.lines.append, on_text=self.blocks.append)


def read(text: str, *, chunk: int | None = None, cap: int = CAP) -> tuple[ClaudeStream, Sink]:
    sink = Sink()
    stream = ClaudeStream(sink.readers, cap=cap)
    pieces = [text] if chunk is None else [text[i : i + chunk] for i in range(0, len(text), chunk)]
    for piece in pieces:
        stream.feed(piece)
    stream.close()
    return stream, sink


def session_of(name: str) -> str:
    first = json.loads(transcript(name).splitlines()[0])
    session: str = first["session_id"]
    return session


# -- recorded transcripts ---------------------------------------------------------------


def test_a_plain_answer() -> None:
    stream, sink = read(transcript("plain"))
    assert sink.lines == ["All done.", "The parser works."]
    assert stream.output() == ("All done.\nThe parser works.\n", 0)
    assert stream.run == ClaudeRun(
        session_id=session_of("plain"),
        result_text="All done.\nThe parser works.",
        cost_usd=0.00014000000000000001,
        input_tokens=10,
        output_tokens=5,
        num_turns=1,
    )


def test_a_tool_result_is_not_what_the_agent_says() -> None:
    stream, sink = read(transcript("tool_result_handoff"))
    # The file the agent read held `CONTEXT_HANDOFF: x`; only its own words are handed on.
    assert "CONTEXT_HANDOFF: x" in transcript("tool_result_handoff")
    assert sink.lines == ["I read the notes."]
    assert (stream.run.num_turns, stream.run.input_tokens, stream.run.output_tokens) == (2, 20, 10)
    detector = SignalDetector()
    scan = detector.scan()
    for block in sink.blocks:
        scan.feed_block(block)
    assert scan.actionable() is None


def test_a_spoken_handoff_is_handed_on() -> None:
    stream, sink = read(transcript("spoken_handoff"))
    assert sink.lines == ["Module A done.", "CONTEXT_HANDOFF: y"]
    scan = SignalDetector().scan()
    for block in sink.blocks:
        scan.feed_block(block)
    signal = scan.actionable()
    assert signal is not None
    assert (signal.signal_type, signal.payload) == ("handoff", "y")
    assert stream.output()[0] == "Module A done.\nCONTEXT_HANDOFF: y\n"


def test_an_api_error_after_claude_gave_up() -> None:
    stream, sink = read(transcript("api_error_429"))
    message = "API Error: Request rejected (429) · slow down"
    assert sink.lines == [message]
    assert stream.output() == (message + "\n", 0)
    assert (stream.run.is_error, stream.run.api_error_status, stream.run.cost_usd) == (
        True,
        429,
        0.0,
    )


def test_retries_are_counted() -> None:
    stream, _ = read(transcript("overloaded_retry"))
    assert (stream.run.retries, stream.run.last_retry_error) == (1, "overloaded")
    assert (stream.run.is_error, stream.run.api_error_status) == (True, 529)
    assert stream.output()[0].startswith("API Error: 529 Overloaded.")


def test_a_usage_limit_rejection() -> None:
    stream, _ = read(transcript("session_limit"))
    assert stream.run.rate_limit == RateLimitInfo(
        status="rejected", resets_at=1795481584.0, limit_type="five_hour", utilization=None
    )
    assert stream.output()[0] == "You've hit your 5-hour limit · resets 12:53am (UTC)\n"
    assert stream.run.to_dict() == {
        "session_id": session_of("session_limit"),
        "is_error": True,
        "api_error_status": 429,
        "num_turns": 1,
        "rate_limit": {"status": "rejected", "resets_at": 1795481584.0, "limit_type": "five_hour"},
    }


def test_not_logged_in() -> None:
    stream, _ = read(transcript("not_logged_in"))
    assert stream.output() == ("Not logged in · Please run /login\n", 0)
    assert (stream.run.is_error, stream.run.api_error_status) == (True, None)


@pytest.mark.parametrize("name", sorted(p.stem for p in TRANSCRIPTS.glob("*.jsonl")))
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_any_cut_of_the_stream_reads_the_same(name: str, chunk: int) -> None:
    whole, whole_sink = read(transcript(name))
    cut, cut_sink = read(transcript(name), chunk=chunk)
    assert (cut.run, cut.output(), cut_sink.lines) == (whole.run, whole.output(), whole_sink.lines)


def test_the_report_as_a_dict_holds_only_what_is_set() -> None:
    stream, _ = read(transcript("plain"))
    assert stream.run.to_dict() == {
        "session_id": session_of("plain"),
        "cost_usd": 0.00014000000000000001,
        "input_tokens": 10,
        "output_tokens": 5,
        "num_turns": 1,
    }
    assert ClaudeRun().to_dict() == {}


# -- what is not claude's passes through ---------------------------------------------------


def test_plain_text_passes_through_unchanged() -> None:
    text = 'fake claude: /ll:x\n{not json\n{"verdict": "success"}\n\nlast line'
    stream, sink = read(text)
    assert sink.lines == [
        "fake claude: /ll:x",
        "{not json",
        '{"verdict": "success"}',
        "",
        "last line",
    ]
    assert "".join(sink.blocks) == text
    assert stream.output() == (text, 0)
    assert stream.run == ClaudeRun()


def test_a_long_plain_line_in_pieces_passes_through_as_pieces() -> None:
    sink = Sink()
    stream = ClaudeStream(sink.readers, cap=CAP)
    for piece in ("abc", "def", "ghi\nnext\n"):
        stream.feed(piece)
    stream.close()
    assert sink.lines == ["abc", "def", "ghi", "next"]
    assert stream.output() == ("abcdefghi\nnext\n", 0)


def test_plain_lines_and_claude_lines_mixed() -> None:
    lines = transcript("plain").splitlines(keepends=True)
    text = "before\n" + "".join(lines[:2]) + "between\n" + "".join(lines[2:])
    stream, sink = read(text)
    assert sink.lines == ["before", "All done.", "The parser works.", "between"]
    # The result event decides the output; the plain lines were only handed on.
    assert stream.output() == ("All done.\nThe parser works.\n", 0)


def test_a_last_claude_line_without_its_line_break_is_read() -> None:
    stream, _ = read(transcript("plain").rstrip("\n"))
    assert stream.run.result_text == "All done.\nThe parser works."


def test_without_a_result_the_output_is_what_was_handed_on() -> None:
    # claude stopped (timeout, kill) before its result: what the agent said so far.
    lines = transcript("spoken_handoff").splitlines(keepends=True)[:2]
    stream, _ = read("".join(lines))
    assert stream.run.result_text is None
    assert stream.output() == ("Module A done.\nCONTEXT_HANDOFF: y\n", 0)


def test_a_sub_agents_text_is_not_handed_on() -> None:
    message = {
        "type": "assistant",
        "session_id": "s",
        "parent_tool_use_id": "toolu_1",
        "message": {"content": [{"type": "text", "text": "CONTEXT_HANDOFF: sub"}]},
    }
    _, sink = read(json.dumps(message) + "\n")
    assert sink.lines == []


def test_a_rejection_is_kept_over_later_allowed_events() -> None:
    def event(status: str, resets: int) -> str:
        info = {"status": status, "resetsAt": resets, "rateLimitType": "seven_day"}
        return json.dumps({"type": "rate_limit_event", "rate_limit_info": info, "session_id": "s"})

    stream, _ = read(event("allowed", 1) + "\n" + event("rejected", 2) + "\n")
    assert stream.run.rate_limit is not None and stream.run.rate_limit.resets_at == 2.0
    stream, _ = read(event("rejected", 2) + "\n" + event("allowed_warning", 3) + "\n")
    assert stream.run.rate_limit is not None and stream.run.rate_limit.status == "rejected"
    stream, _ = read(event("allowed", 1) + "\n" + event("allowed_warning", 3) + "\n")
    assert stream.run.rate_limit is not None and stream.run.rate_limit.status == "allowed_warning"


# -- the output cap -------------------------------------------------------------------------


def test_a_result_beyond_the_cap_keeps_its_tail() -> None:
    result = {"type": "result", "session_id": "s", "result": "é" * 10 + "tail"}
    stream, _ = read(json.dumps(result) + "\n", cap=8)
    # 25 bytes with the line break; the last 8 would start inside an `é`: dropped too.
    assert stream.output() == ("étail\n", 18)
    text, truncated = stream.output_with_marker("/logs/1-work.log")
    assert truncated
    assert text == (
        "[output truncated: 18 earlier bytes dropped; full output in /logs/1-work.log]\nétail\n"
    )


def test_plain_text_beyond_the_cap_keeps_its_tail() -> None:
    text = "".join(f"line {n}\n" for n in range(1000))
    stream, sink = read(text, cap=64)
    kept, dropped = stream.output()
    assert len(kept.encode()) == 64 and text.endswith(kept)
    assert dropped == len(text) - 64
    assert len(sink.lines) == 1000  # the readers still got every line
