"""Reading what `claude -p --output-format stream-json --verbose` prints, as it prints it.

Claude Code (2.1.x, recorded in `scripts/tests/fixtures/claude_stream/`) prints one JSON
object per line, each with a `type` and a `session_id`: `system` (`init`, `api_retry`
while it retries an API error), `assistant` (the model's text and tool calls), `user` (tool
results), `rate_limit_event` and, last, `result` (the final text, `is_error`,
`api_error_status`, `total_cost_usd`, `usage`, `num_turns`). `ClaudeStream` takes that
output in chunks of any size, hands on only what the agent *says* (the text of its own
assistant messages, line by line) and builds a `ClaudeRun` from the rest. Tool results are
never handed on: a file the agent reads that contains `CONTEXT_HANDOFF:` is not the agent
handing off.

Anything that is not one of claude's objects (a fake `claude` in tests printing plain
text, or claude's own plain-text messages) passes through unchanged, so the readers see
exactly what they saw before the runner asked for stream-json.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from little_loops.fsm.model.claude_run import ClaudeRun as ClaudeRun
from little_loops.fsm.model.claude_run import RateLimitInfo as RateLimitInfo
from little_loops.fsm.process.output_files import skip_partial_character, truncation_marker

STREAM_JSON_FLAGS = ("--output-format", "stream-json", "--verbose")
"""What makes `claude -p` print stream-json (`--verbose` is required with `-p`)."""

MAX_JSON_LINE_CHARS = 64 * 1024 * 1024
"""Longest line kept whole to be parsed: a longer one (a huge tool result) is skipped
rather than held in memory; it is never handed on either way."""


class TextSink(Protocol):
    """Who gets the text (`output_streams.OutputReaders` is one)."""

    def lines(self, text: str) -> None:
        """Whole lines, each ending with a line break."""

    def piece(self, text: str) -> None:
        """A piece of a line (a long line arriving in parts, or a last line without a break)."""


@dataclass
class _TextTail:
    """The last `cap` bytes (UTF-8) of the text handed on, and how many came before."""

    cap: int
    dropped: int = 0
    _chunks: deque[bytes] = field(default_factory=deque)
    _size: int = 0

    def add(self, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        self._chunks.append(data)
        self._size += len(data)
        while len(self._chunks) > 1 and self._size - len(self._chunks[0]) >= self.cap:
            self._size -= len(self._chunks[0])
            self.dropped += len(self._chunks.popleft())

    def text(self) -> tuple[str, int]:
        return _tail(b"".join(self._chunks), self.cap, self.dropped)


def _tail(data: bytes, cap: int, dropped: int = 0) -> tuple[str, int]:
    """The text of the last `cap` bytes of `data` (never half a character), and how many
    bytes came before them (`dropped` earlier ones included)."""
    if len(data) <= cap:
        return data.decode("utf-8", "surrogatepass"), dropped
    cut = len(data) - cap
    cut += skip_partial_character(data[cut:])
    return data[cut:].decode("utf-8", "surrogatepass"), dropped + cut


class ClaudeStream:
    """Reads claude's stdout as it comes; hands on what the agent says; builds `run`.

    `feed` takes text in chunks of any size (whole lines, or pieces of one); `close`
    ends it (a last line without its line break is taken then). `output` is what the
    action's output is: the final result text when claude sent one (as the plain-text
    `claude -p` prints it), otherwise all the text handed on.
    """

    def __init__(self, sink: TextSink | None = None, *, cap: int) -> None:
        self.run = ClaudeRun()
        self._sink = sink
        self._cap = cap
        self._said = _TextTail(cap)
        self._pending: list[str] = []  # the start of a `{` line still being written
        self._pending_chars = 0
        self._in_plain_line = False  # pieces of a plain line were handed on already
        self._skipping = False  # inside an overlong `{` line

    def feed(self, text: str) -> None:
        """Take a chunk of stdout (decoded, line breaks as `\\n`)."""
        *whole, rest = text.split("\n")
        plain: list[str] = []  # consecutive plain lines, handed on as one block
        for line in whole:
            plain_text = self._plain_text_of(line)
            if plain_text is None:
                self._hand_on_lines(plain)
                plain = []
            else:
                plain.append(plain_text)
        self._hand_on_lines(plain)
        if rest:
            self._take_piece(rest)

    def close(self) -> None:
        """The output has ended: parse a last `{` line that had no line break."""
        if self._pending:
            line = "".join(self._pending)
            self._pending, self._pending_chars = [], 0
            if not self._read_object(line):
                self._hand_on(line, whole=False)

    def output(self) -> tuple[str, int]:
        """The action's output (its last `cap` bytes) and how many bytes were cut before.

        The result text is given as `claude -p` without stream-json prints it (ending
        with a line break), so evaluators see the same output as before.
        """
        if self.run.result_text is not None:
            text = _as_lines(self.run.result_text)
            return _tail(text.encode("utf-8", "surrogatepass"), self._cap)
        return self._said.text()

    def output_with_marker(self, log_path: str | None) -> tuple[str, bool]:
        """`output()` behind the runner's truncation marker when cut; and whether cut."""
        text, dropped = self.output()
        if dropped:
            return truncation_marker("output", dropped, log_path) + text, True
        return text, False

    # Lines and pieces

    def _plain_text_of(self, line: str) -> str | None:
        """The text to hand on for a whole line; None when it was one of claude's objects
        (or the end of a skipped one)."""
        if self._skipping:
            self._skipping = False
            return None
        if self._pending:
            line = "".join(self._pending) + line
            self._pending, self._pending_chars = [], 0
        elif self._in_plain_line:
            self._in_plain_line = False
            return line  # the end of a plain line whose start was handed on
        if line.startswith("{") and self._read_object(line):
            return None
        return line

    def _take_piece(self, piece: str) -> None:
        """A line's start with no line break yet: keep it if it may be JSON."""
        if self._skipping:
            return
        if self._in_plain_line or (not self._pending and not piece.startswith("{")):
            self._in_plain_line = True
            self._hand_on(piece, whole=False)
            return
        self._pending.append(piece)
        self._pending_chars += len(piece)
        if self._pending_chars > MAX_JSON_LINE_CHARS:
            self._pending, self._pending_chars = [], 0
            self._skipping = True

    def _hand_on_lines(self, lines: list[str]) -> None:
        if lines:
            self._hand_on("\n".join(lines) + "\n", whole=True)

    def _hand_on(self, text: str, *, whole: bool) -> None:
        self._said.add(text)
        if self._sink is None:
            return
        if whole:
            self._sink.lines(text)
        else:
            self._sink.piece(text)

    # claude's objects

    def _read_object(self, line: str) -> bool:
        """Take `line` when it is one of claude's objects; False for anything else."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not _is_claude_message(message):
            return False
        kind = message["type"]
        if isinstance(message.get("session_id"), str):
            self.run.session_id = message["session_id"]
        if kind == "assistant":
            self._said_by_agent(message)
        elif kind == "system" and message.get("subtype") == "api_retry":
            self.run.retries += 1
            self.run.last_retry_error = _str_or_none(message.get("error"))
        elif kind == "rate_limit_event":
            self._note_rate_limit(message.get("rate_limit_info"))
        elif kind == "result":
            _read_result(self.run, message)
        return True

    def _said_by_agent(self, message: dict[str, Any]) -> None:
        # A sub-agent's messages (`parent_tool_use_id` set) reach the agent as a tool
        # result: they are not what the agent says.
        if message.get("parent_tool_use_id") is not None:
            return
        content = message.get("message", {})
        blocks = content.get("content") if isinstance(content, dict) else None
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and text:
                    self._hand_on(_as_lines(text), whole=True)

    def _note_rate_limit(self, info: Any) -> None:
        if not isinstance(info, dict) or not isinstance(info.get("status"), str):
            return
        seen = RateLimitInfo(
            status=info["status"],
            resets_at=_number_or_none(info.get("resetsAt")),
            limit_type=_str_or_none(info.get("rateLimitType")),
            utilization=_number_or_none(info.get("utilization")),
        )
        kept = self.run.rate_limit
        if kept is None or kept.status != "rejected" or seen.status == "rejected":
            self.run.rate_limit = seen


def _is_claude_message(message: Any) -> bool:
    """Every object claude prints has a string `type` and a `session_id`."""
    return (
        isinstance(message, dict)
        and isinstance(message.get("type"), str)
        and "session_id" in message
    )


def _read_result(run: ClaudeRun, message: dict[str, Any]) -> None:
    result = message.get("result")
    if isinstance(result, str):
        run.result_text = result.replace("\r\n", "\n").replace("\r", "\n")
    run.is_error = message.get("is_error") is True
    status = message.get("api_error_status")
    run.api_error_status = status if isinstance(status, int) else None
    run.cost_usd = _number_or_none(message.get("total_cost_usd"))
    turns = message.get("num_turns")
    run.num_turns = turns if isinstance(turns, int) else None
    usage = message.get("usage")
    if isinstance(usage, dict):
        run.input_tokens = _count(usage.get("input_tokens"))
        run.output_tokens = _count(usage.get("output_tokens"))
        run.cache_read_tokens = _count(usage.get("cache_read_input_tokens"))
        run.cache_creation_tokens = _count(usage.get("cache_creation_input_tokens"))


def _as_lines(text: str) -> str:
    """`text` as whole lines: line breaks as `\\n`, and one at the end."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") else text + "\n"


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
