"""Random bytes where action output goes: the signal detector never raises, whatever an
action prints (decoded as the runner decodes it), and a marker is still found in noise."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from little_loops.fsm.signal_detector import SignalDetector

MARKERS = [b"CONTEXT_HANDOFF:", b"FATAL_ERROR:", b"LOOP_STOP:", b"\n", b"\r", b"\x00", b" "]
NOISY_OUTPUT = st.lists(st.binary(max_size=40) | st.sampled_from(MARKERS), max_size=30).map(
    b"".join
)
TYPES = {"handoff", "error", "stop"}


def _decodings(raw: bytes) -> list[str]:
    # The runner reads with errors="backslashreplace"; surrogateescape adds lone surrogates.
    return [raw.decode("utf-8", "backslashreplace"), raw.decode("utf-8", "surrogateescape")]


@settings(max_examples=400)
@given(raw=st.binary(max_size=2000) | NOISY_OUTPUT)
def test_detect_never_raises_on_random_bytes(raw: bytes) -> None:
    detector = SignalDetector()
    for text in _decodings(raw):
        found = detector.detect(text)
        assert {signal.signal_type for signal in found} <= TYPES
        assert len(found) == len({signal.signal_type for signal in found})
        first = detector.detect_first(text)
        assert first is None or first in found
        actionable = detector.detect_actionable(text)
        assert actionable is None or actionable.signal_type in TYPES
        scan = detector.scan()
        for line in text.split("\n"):
            scan.feed(line)
        assert scan.actionable() == actionable


@settings(max_examples=200)
@given(before=st.binary(max_size=200), after=st.binary(max_size=200))
def test_a_fatal_marker_in_noise_is_always_acted_on(before: bytes, after: bytes) -> None:
    raw = before + b"\nFATAL_ERROR: disk on fire\n" + after
    signal = SignalDetector().detect_actionable(raw.decode("utf-8", "backslashreplace"))
    assert signal is not None
    assert signal.signal_type == "error"
