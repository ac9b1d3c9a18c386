"""Finding signals (`CONTEXT_HANDOFF:`, `FATAL_ERROR:`, `LOOP_STOP:`) in action output.

This module only finds markers; the executor decides what each one does. The built-in
patterns are spelled exactly as in the reference (unanchored, so a marker anywhere in a
line counts). Unlike the reference, `SignalDetector([])` really means "no patterns";
`None` means the built-in ones.
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
    """A named regular expression; capture group 1 (if any) is the payload."""

    def __init__(self, name: str, pattern: str) -> None:
        self.name = name
        self.regex = re.compile(pattern, re.MULTILINE)

    def search(self, output: str) -> DetectedSignal | None:
        """The first match in `output`, or None."""
        match = self.regex.search(output)
        if match is None:
            return None
        payload = match.group(1).strip() if self.regex.groups else None
        return DetectedSignal(signal_type=self.name, payload=payload, raw_match=match.group(0))


HANDOFF_SIGNAL = SignalPattern("handoff", r"CONTEXT_HANDOFF:\s*(.+)")
ERROR_SIGNAL = SignalPattern("error", r"FATAL_ERROR:\s*(.+)")
STOP_SIGNAL = SignalPattern("stop", r"LOOP_STOP:\s*(.*)")

# What the executor acts on when one output holds several signals: a fatal error ends the
# run whatever else was said, a handoff beats a clean stop. Other types are not acted on.
SIGNAL_PRECEDENCE = ("error", "handoff", "stop")


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

    def detect_actionable(self, output: str) -> DetectedSignal | None:
        """The one signal the executor must act on, following `SIGNAL_PRECEDENCE`.

        Within one output the first marker of a type wins (the first handoff, not the last),
        and `FATAL_ERROR` beats `CONTEXT_HANDOFF`, which beats `LOOP_STOP`.
        """
        by_type: dict[str, DetectedSignal] = {}
        for signal in self.detect(output):
            by_type.setdefault(signal.signal_type, signal)
        for signal_type in SIGNAL_PRECEDENCE:
            if signal_type in by_type:
                return by_type[signal_type]
        return None
