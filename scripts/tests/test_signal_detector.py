"""Signal patterns and the detector."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from little_loops.fsm.signal_detector import (
    ERROR_SIGNAL,
    HANDOFF_SIGNAL,
    SIGNAL_PRECEDENCE,
    STOP_SIGNAL,
    DetectedSignal,
    SignalDetector,
    SignalPattern,
    SignalScan,
)


def test_built_in_patterns_are_spelled_as_the_reference() -> None:
    assert (HANDOFF_SIGNAL.name, HANDOFF_SIGNAL.regex.pattern) == (
        "handoff",
        r"CONTEXT_HANDOFF:\s*(.+)",
    )
    assert (ERROR_SIGNAL.name, ERROR_SIGNAL.regex.pattern) == ("error", r"FATAL_ERROR:\s*(.+)")
    assert (STOP_SIGNAL.name, STOP_SIGNAL.regex.pattern) == ("stop", r"LOOP_STOP:\s*(.*)")


def test_pattern_search_returns_the_stripped_payload_and_raw_match() -> None:
    found = HANDOFF_SIGNAL.search("work\nCONTEXT_HANDOFF:   continue with B  \nbye")
    assert found == DetectedSignal(
        "handoff", "continue with B", "CONTEXT_HANDOFF:   continue with B  "
    )


def test_markers_match_anywhere_in_a_line() -> None:
    found = ERROR_SIGNAL.search("[12:00] FATAL_ERROR: disk full")
    assert found == DetectedSignal("error", "disk full", "FATAL_ERROR: disk full")


def test_whole_text_search_lets_a_marker_at_end_of_line_take_the_next_line() -> None:
    found = HANDOFF_SIGNAL.search("CONTEXT_HANDOFF:\n\nnext steps here\n")
    assert found is not None
    assert found.payload == "next steps here"


def test_stop_payload_may_be_empty() -> None:
    assert STOP_SIGNAL.search("LOOP_STOP:") == DetectedSignal("stop", "", "LOOP_STOP:")


def test_pattern_without_a_group_has_no_payload() -> None:
    pattern = SignalPattern("done", r"^ALL DONE$")
    assert pattern.search("x\nALL DONE\n") == DetectedSignal("done", None, "ALL DONE")


def test_no_match_is_none() -> None:
    assert HANDOFF_SIGNAL.search("all good") is None


def test_none_means_the_built_in_patterns() -> None:
    assert SignalDetector().patterns == [HANDOFF_SIGNAL, ERROR_SIGNAL, STOP_SIGNAL]
    assert SignalDetector(None).patterns == [HANDOFF_SIGNAL, ERROR_SIGNAL, STOP_SIGNAL]


def test_empty_list_means_no_patterns() -> None:
    detector = SignalDetector([])
    assert detector.patterns == []
    output = "CONTEXT_HANDOFF: a\nFATAL_ERROR: b\nLOOP_STOP: c"
    assert detector.detect(output) == []
    assert detector.detect_first(output) is None
    assert detector.detect_actionable(output) is None


def test_detect_returns_one_signal_per_pattern_in_pattern_order() -> None:
    output = (
        "LOOP_STOP: s\nFATAL_ERROR: e1\nCONTEXT_HANDOFF: h1\nCONTEXT_HANDOFF: h2\nFATAL_ERROR: e2"
    )
    assert SignalDetector().detect(output) == [
        DetectedSignal("handoff", "h1", "CONTEXT_HANDOFF: h1"),
        DetectedSignal("error", "e1", "FATAL_ERROR: e1"),
        DetectedSignal("stop", "s", "LOOP_STOP: s"),
    ]


def test_detect_first_follows_list_order_not_text_order() -> None:
    output = "FATAL_ERROR: first in text\nCONTEXT_HANDOFF: later"
    assert SignalDetector().detect_first(output) == DetectedSignal(
        "handoff", "later", "CONTEXT_HANDOFF: later"
    )


def test_custom_patterns_replace_the_defaults() -> None:
    detector = SignalDetector([SignalPattern("custom", r"CUSTOM:\s*(.+)")])
    assert detector.detect_first("CONTEXT_HANDOFF: test") is None
    assert detector.detect_first("CUSTOM: value") == DetectedSignal(
        "custom", "value", "CUSTOM: value"
    )


def test_actionable_prefers_fatal_error_over_handoff() -> None:
    output = "CONTEXT_HANDOFF: go on\nFATAL_ERROR: broken"
    assert SignalDetector().detect_actionable(output) == DetectedSignal(
        "error", "broken", "FATAL_ERROR: broken"
    )


def test_actionable_prefers_handoff_over_stop_and_keeps_the_first_handoff() -> None:
    output = "LOOP_STOP: enough\nCONTEXT_HANDOFF: one\nCONTEXT_HANDOFF: two"
    assert SignalDetector().detect_actionable(output) == DetectedSignal(
        "handoff", "one", "CONTEXT_HANDOFF: one"
    )


def test_actionable_stop_alone() -> None:
    assert SignalDetector().detect_actionable("LOOP_STOP: target met") == DetectedSignal(
        "stop", "target met", "LOOP_STOP: target met"
    )


@pytest.mark.parametrize("output", ["nothing here", "CUSTOM: ignored by the executor"])
def test_actionable_ignores_unknown_types_and_plain_output(output: str) -> None:
    detector = SignalDetector([SignalPattern("custom", r"CUSTOM:\s*(.+)"), HANDOFF_SIGNAL])
    assert detector.detect_actionable(output) is None


def test_actionable_uses_the_first_pattern_of_a_type() -> None:
    early = SignalPattern("handoff", r"HANDOFF_A:\s*(.+)")
    late = SignalPattern("handoff", r"HANDOFF_B:\s*(.+)")
    detector = SignalDetector([early, late])
    assert detector.detect_actionable("HANDOFF_B: b\nHANDOFF_A: a") == DetectedSignal(
        "handoff", "a", "HANDOFF_A: a"
    )


def test_precedence_order() -> None:
    assert SIGNAL_PRECEDENCE == ("error", "handoff", "stop")


# -- line by line (what the executor uses) ----------------------------------------------


def test_built_in_patterns_carry_their_marker() -> None:
    assert [p.marker for p in (HANDOFF_SIGNAL, ERROR_SIGNAL, STOP_SIGNAL)] == [
        "CONTEXT_HANDOFF:",
        "FATAL_ERROR:",
        "LOOP_STOP:",
    ]
    assert SignalPattern("custom", r"X").marker is None


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("CONTEXT_HANDOFF: go on ", DetectedSignal("handoff", "go on", "CONTEXT_HANDOFF: go on ")),
        ("CONTEXT_HANDOFF:", DetectedSignal("handoff", "", "CONTEXT_HANDOFF:")),
        ("CONTEXT_HANDOFF:   ", DetectedSignal("handoff", "", "CONTEXT_HANDOFF:   ")),
        ("CONTEXT_HANDOFF:\r", DetectedSignal("handoff", "", "CONTEXT_HANDOFF:\r")),
        ("log: CONTEXT_HANDOFF:", DetectedSignal("handoff", "", "CONTEXT_HANDOFF:")),
        ("context_handoff: lower case", None),
        ("CONTEXT_HANDOFF without colon", None),
    ],
)
def test_search_line(line: str, expected: DetectedSignal | None) -> None:
    assert HANDOFF_SIGNAL.search_line(line) == expected


def test_empty_fatal_error_on_its_own_line_is_a_signal() -> None:
    assert ERROR_SIGNAL.search_line("FATAL_ERROR:") == DetectedSignal("error", "", "FATAL_ERROR:")


def test_search_line_without_marker_uses_the_regex() -> None:
    pattern = SignalPattern("done", r"^ALL (\w+)$")
    assert pattern.search_line("ALL DONE") == DetectedSignal("done", "DONE", "ALL DONE")
    assert pattern.search_line("NOT ALL DONE") is None


class CountingPattern(SignalPattern):
    """Counts how often the regular expression runs."""

    def __init__(self, *args: str, marker: str | None = None) -> None:
        super().__init__(*args, marker=marker)
        self.searches = 0

    def search(self, output: str) -> DetectedSignal | None:
        self.searches += 1
        return super().search(output)


def test_lines_without_the_marker_never_reach_the_regex() -> None:
    pattern = CountingPattern("handoff", r"CONTEXT_HANDOFF:\s*(.+)", marker="CONTEXT_HANDOFF:")
    scan = SignalScan([pattern])
    for number in range(1000):
        scan.feed(f"line {number}: nothing to see")
    scan.feed("CONTEXT_HANDOFF: now")
    scan.feed("CONTEXT_HANDOFF: again")  # a pattern that matched is not searched again
    assert (pattern.searches, scan.lines) == (1, 1002)
    assert scan.actionable() == DetectedSignal("handoff", "now", "CONTEXT_HANDOFF: now")


def test_scan_keeps_the_first_match_of_each_pattern() -> None:
    scan = SignalDetector().scan()
    for line in ["LOOP_STOP: s1", "CONTEXT_HANDOFF: h1", "LOOP_STOP: s2", "CONTEXT_HANDOFF: h2"]:
        scan.feed(line)
    assert scan.found() == [
        DetectedSignal("handoff", "h1", "CONTEXT_HANDOFF: h1"),
        DetectedSignal("stop", "s1", "LOOP_STOP: s1"),
    ]
    assert scan.actionable() == DetectedSignal("handoff", "h1", "CONTEXT_HANDOFF: h1")


def test_scan_of_nothing_finds_nothing() -> None:
    scan = SignalDetector().scan()
    assert (scan.found(), scan.actionable(), scan.lines) == ([], None, 0)


def test_fatal_error_after_a_handoff_still_wins() -> None:
    scan = SignalDetector().scan()
    scan.feed_text("CONTEXT_HANDOFF: later\nmore output\nFATAL_ERROR: broken\n")
    assert scan.actionable() == DetectedSignal("error", "broken", "FATAL_ERROR: broken")
    assert scan.lines == 4  # the empty piece after the last line break counts as a line


def test_line_scan_never_takes_the_next_line_as_payload() -> None:
    output = "CONTEXT_HANDOFF:\n\nnext steps here\n"
    assert SignalDetector().detect_actionable(output) == DetectedSignal(
        "handoff", "", "CONTEXT_HANDOFF:"
    )
    # The reference-style whole-text search differs (see the test above).
    assert HANDOFF_SIGNAL.search(output) == DetectedSignal(
        "handoff", "next steps here", "CONTEXT_HANDOFF:\n\nnext steps here"
    )


_TEXT_LINE = st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40).filter(
    lambda line: (
        "CONTEXT_HANDOFF:" not in line and "FATAL_ERROR:" not in line and "LOOP_STOP:" not in line
    )
)


@given(
    before=st.lists(_TEXT_LINE, max_size=20),
    after=st.lists(_TEXT_LINE, max_size=20),
    prefix=_TEXT_LINE,
    payload=_TEXT_LINE,
)
def test_a_handoff_anywhere_is_found_with_the_rest_of_its_line(
    before: list[str], after: list[str], prefix: str, payload: str
) -> None:
    marker_line = f"{prefix}CONTEXT_HANDOFF:{payload}"
    output = "\n".join([*before, marker_line, *after])
    found = SignalDetector().detect_actionable(output)
    assert found is not None
    assert (found.signal_type, found.payload) == ("handoff", payload.strip())


def test_feed_block_finds_a_marker_among_many_lines_and_skips_blocks_without_one() -> None:
    scan = SignalDetector().scan()
    scan.feed_block("x\n" * 1000)
    scan.feed_block("noise\nCONTEXT_HANDOFF: carry on from B\nmore\n")
    scan.feed_block("CONTEXT_HANDOFF: a second one\n")
    assert scan.lines == 1004
    assert scan.found() == [
        DetectedSignal("handoff", "carry on from B", "CONTEXT_HANDOFF: carry on from B")
    ]


def test_feed_block_scans_every_line_for_a_pattern_without_a_marker() -> None:
    scan = SignalDetector([SignalPattern("done", r"^ALL (\w+)$")]).scan()
    scan.feed_block("first\nALL DONE\n")
    assert scan.found() == [DetectedSignal("done", "DONE", "ALL DONE")]
