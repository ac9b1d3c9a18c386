"""What every agent CLI's stream reader shares: JSON lines in, the agent's text out, bounded.

An agent CLI run headless prints one JSON object per line. `JsonLinesStream` takes that
stdout in chunks of any size, gives each whole `{` line to the subclass's `_read_object`
(which hands on what the agent says and fills `run`), passes anything else through as
plain text, skips a line too long to hold, and keeps the last `cap` bytes of what it
handed on (`TextTail`) for the action's output, behind the runner's truncation marker
when cut. `ClaudeStream` and the other hosts' readers are subclasses.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.process.output_files import skip_partial_character, truncation_marker

__all__ = ["MAX_JSON_LINE_CHARS", "JsonLinesStream", "TextSink", "TextTail", "as_lines", "tail"]

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
class TextTail:
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
        return tail(b"".join(self._chunks), self.cap, self.dropped)


def tail(data: bytes, cap: int, dropped: int = 0) -> tuple[str, int]:
    """The text of the last `cap` bytes of `data` (never half a character), and how many
    bytes came before them (`dropped` earlier ones included)."""
    if len(data) <= cap:
        return data.decode("utf-8", "surrogatepass"), dropped
    cut = len(data) - cap
    cut += skip_partial_character(data[cut:])
    return data[cut:].decode("utf-8", "surrogatepass"), dropped + cut


def as_lines(text: str) -> str:
    """`text` as whole lines: line breaks as `\\n`, and one at the end."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") else text + "\n"


class JsonLinesStream:
    """Reads a CLI's stdout as it comes; subclasses read its objects (`_read_object`).

    `feed` takes text in chunks of any size (whole lines, or pieces of one); `close`
    ends it (a last line without its line break is taken then). `output` is the action's
    output: the run's final text when the CLI gave one, otherwise all the text handed on.
    """

    def __init__(self, sink: TextSink | None = None, *, cap: int) -> None:
        self.run = ClaudeRun()
        self._sink = sink
        self._cap = cap
        self._said = TextTail(cap)
        self._pending: list[str] = []  # the start of a `{` line still being written
        self._pending_chars = 0
        self._in_plain_line = False  # pieces of a plain line were handed on already
        self._skipping = False  # inside an overlong `{` line

    def _read_object(self, line: str) -> bool:
        """Take `line` when it is one of the CLI's objects; False for anything else."""
        raise NotImplementedError

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

        The final text is given as whole lines (ending with a line break), as the CLIs
        print it without JSON, so evaluators see the same output as before.
        """
        if self.run.result_text is not None:
            text = as_lines(self.run.result_text)
            return tail(text.encode("utf-8", "surrogatepass"), self._cap)
        return self._said.text()

    def output_with_marker(self, log_path: str | None) -> tuple[str, bool]:
        """`output()` behind the runner's truncation marker when cut; and whether cut."""
        text, dropped = self.output()
        if dropped:
            return truncation_marker("output", dropped, log_path) + text, True
        return text, False

    def _plain_text_of(self, line: str) -> str | None:
        """The text to hand on for a whole line; None when it was one of the CLI's objects
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
