"""Finding signals (`CONTEXT_HANDOFF:`, `FATAL_ERROR:`, `LOOP_STOP:`) in action output.

This module only finds markers; the executor decides what each one does. The built-in
patterns are spelled exactly as in the reference (unanchored, so a marker anywhere in a
line counts). Unlike the reference, `SignalDetector([])` really means "no patterns";
`None` means the built-in ones.

Two ways to look:

- `SignalPattern.search`, `SignalDetector.detect` and `detect_first` apply the regular
  expressions to a whole text, as the reference did. There `\\s*` may cross a line break,
  so a marker at the end of a line takes the next line as its payload.
- `SignalScan` (what the executor uses, through `SignalDetector.scan` and
  `detect_actionable`) looks at one line at a time, as the output streams. A marker's
  payload is the rest of its own line, never the next one, and a built-in marker with
  nothing after it is a signal with an empty payload. Each line is first checked for the
  marker's literal text, so a line without one costs a few substring searches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass
class DetectedSignal:
    """One marker found in output: its type, its payload and the text that matched."""

    signal_type: str
    payload: str | None
    raw_match: str


class SignalPattern:
    """A named regular expression; capture group 1 (if any) is the payload.

    `marker` (addition) is literal text that every match contains. Line scanning skips
    the regular expression on lines without it, and a line that holds the marker but
    does not match (nothing follows the marker) counts as the signal with payload `""`.
    """

    def __init__(self, name: str, pattern: str, *, marker: str | None = None) -> None:
        self.name = name
        self.regex = re.compile(pattern, re.MULTILINE)
        self.marker = marker

    def search(self, output: str) -> DetectedSignal | None:
        """The first match in `output`, or None."""
        match = self.regex.search(output)
        if match is None:
            return None
        payload = match.group(1).strip() if self.regex.groups else None
        return DetectedSignal(signal_type=self.name, payload=payload, raw_match=match.group(0))

    def search_line(self, line: str) -> DetectedSignal | None:
        """The signal in one line (without its line break), or None."""
        if self.marker is not None and self.marker not in line:
            return None  # the cheap test that almost every line fails
        found = self.search(line)
        if found is None and self.marker is not None:
            return DetectedSignal(signal_type=self.name, payload="", raw_match=self.marker)
        return found


HANDOFF_SIGNAL = SignalPattern("handoff", r"CONTEXT_HANDOFF:\s*(.+)", marker="CONTEXT_HANDOFF:")
ERROR_SIGNAL = SignalPattern("error", r"FATAL_ERROR:\s*(.+)", marker="FATAL_ERROR:")
STOP_SIGNAL = SignalPattern("stop", r"LOOP_STOP:\s*(.*)", marker="LOOP_STOP:")

# What the executor acts on when one output holds several signals: a fatal error ends the
# run whatever else was said, a handoff beats a clean stop. Other types are not acted on.
SIGNAL_PRECEDENCE = ("error", "handoff", "stop")


class SignalScan:
    """The signals in one action's output, fed one line at a time as it streams.

    Each pattern keeps its first match; later lines are not searched for a pattern that
    has already matched.
    """

    def __init__(self, patterns: list[SignalPattern]) -> None:
        # (position, pattern) of the patterns with no match yet, in list order.
        self._waiting = list(enumerate(patterns))
        self._found: dict[int, DetectedSignal] = {}
        self.lines = 0

    def feed(self, line: str) -> None:
        """Scan one line (its line break already removed)."""
        self.lines += 1
        matched = False
        for position, pattern in self._waiting:
            signal = pattern.search_line(line)
            if signal is not None:
                self._found[position] = signal
                matched = True
        if matched:
            self._waiting = [item for item in self._waiting if item[0] not in self._found]

    def feed_text(self, text: str) -> None:
        """Scan a whole output, line by line."""
        for line in text.split("\n"):
            self.feed(line)

    def feed_block(self, text: str) -> None:
        """Scan a block of whole lines as it streams (the runner's `on_text`).

        A block that holds none of the waiting markers is passed over with one substring
        search per marker, instead of one call per line: a chatty action prints millions
        of lines, and almost none of them carries a marker.
        """
        if self._could_match(text):
            self.feed_text(text.removesuffix("\n"))
        else:
            self.lines += text.count("\n") or 1

    def _could_match(self, text: str) -> bool:
        return any(pattern.marker is None or pattern.marker in text for _, pattern in self._waiting)

    def found(self) -> list[DetectedSignal]:
        """One signal per pattern that matched, in pattern order."""
        return [self._found[index] for index in sorted(self._found)]

    def actionable(self) -> DetectedSignal | None:
        """The one signal the executor must act on, following `SIGNAL_PRECEDENCE`.

        Within a type the first pattern in list order wins (for the built-ins: the first
        marker in the output); `FATAL_ERROR` beats `CONTEXT_HANDOFF`, which beats
        `LOOP_STOP`.
        """
        by_type: dict[str, DetectedSignal] = {}
        for signal in self.found():
            by_type.setdefault(signal.signal_type, signal)
        for signal_type in SIGNAL_PRECEDENCE:
            if signal_type in by_type:
                return by_type[signal_type]
        return None


class SignalDetector:
    """Looks for a list of patterns in output."""

    def __init__(self, patterns: list[SignalPattern] | None = None) -> None:
        if patterns is None:
            patterns = [HANDOFF_SIGNAL, ERROR_SIGNAL, STOP_SIGNAL]
        self.patterns = patterns

    def detect(self, output: str) -> list[DetectedSignal]:
        """At most one signal per pattern (its first match), in pattern order."""
        found = (pattern.search(output) for pattern in self.patterns)
        return [signal for signal in found if signal is not None]

    def detect_first(self, output: str) -> DetectedSignal | None:
        """The signal of the first pattern, in list order, that matches."""
        for pattern in self.patterns:
            signal = pattern.search(output)
            if signal is not None:
                return signal
        return None

    def scan(self) -> SignalScan:
        """A fresh line-by-line scan with this detector's patterns (one per action)."""
        return SignalScan(self.patterns)

    def detect_actionable(self, output: str) -> DetectedSignal | None:
        """The signal the executor acts on in a whole output, scanned line by line."""
        scan = self.scan()
        scan.feed_text(output)
        return scan.actionable()
