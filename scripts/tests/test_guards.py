"""guards: output fingerprints, stall streaks, visit counts and the error log."""

from __future__ import annotations

import json

import pytest

from little_loops.fsm.engine.guards import (
    ERROR_LOG_LIMIT,
    FINGERPRINT_EDGE_CHARS,
    ErrorEntry,
    ErrorLog,
    StallGuard,
    StallStreak,
    VisitCounter,
    fingerprint,
    first_lines,
    normalize_output,
    stall_message,
    stderr_tail,
)

# --- normalising and fingerprints ------------------------------------------------------


def test_whitespace_is_collapsed_and_trimmed() -> None:
    assert normalize_output("  FAILED  test_a\n\n\tFAILED test_b \n") == (
        "FAILED test_a FAILED test_b"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("at 2026-02-17T10:11:12.345Z failed", "at # failed"),
        ("at 2026-02-17 10:11:12+01:00 failed", "at # failed"),
        ("at 2026-02-17T10:11 failed", "at # failed"),
        ("on 2026-02-17 failed", "on # failed"),
        ("[10:11:12] failed", "[#] failed"),
        ("[9:01:02,5] failed", "[#] failed"),
        ("ts=1771322472 failed", "ts=# failed"),
        ("ts=1771322472123 failed", "ts=# failed"),
        ("took 1.25s", "took #"),
        ("took 250 ms", "took #"),
        ("in 3 seconds, 1 sec", "in #, #"),
        ("3 failed, 12 passed", "3 failed, 12 passed"),  # counts are the signal of progress
        ("exit code 17 in 42s", "exit code 17 in #"),
        ("version 1.2.3", "version 1.2.3"),
    ],
)
def test_volatile_parts_are_masked_and_counts_kept(text: str, expected: str) -> None:
    assert normalize_output(text) == expected


def test_a_huge_output_is_judged_by_its_head_and_tail() -> None:
    edge = FINGERPRINT_EDGE_CHARS
    head, tail = "h" * edge, "t" * edge
    middle_a, middle_b = "a" * 50_000, "b" * 50_000
    assert normalize_output(head + middle_a + tail) == f"{head} [...] {tail}"
    assert fingerprint(head + middle_a + tail) == fingerprint(head + middle_b + tail)
    assert fingerprint(head + middle_a + tail) != fingerprint(head + middle_a + tail + "!")


def test_fingerprints_ignore_timestamps_but_not_verdicts_or_counts() -> None:
    base = fingerprint("2026-02-17T10:00:00Z 3 tests failed", "failure")
    assert len(base) == 16
    assert base == fingerprint("2026-02-18T11:30:00Z   3 tests failed\n", "failure")
    assert base != fingerprint("2026-02-17T10:00:00Z 3 tests failed", "error")
    assert base != fingerprint("2026-02-17T10:00:00Z 2 tests failed", "failure")


def test_a_payload_decides_instead_of_the_output() -> None:
    timed_out = fingerprint("partial output 1", "error", "Action timed out after 5s")
    assert timed_out == fingerprint("other output", "error", "Action timed out after 9s")
    assert timed_out != fingerprint("partial output 1", "error", "Cannot start: x")
    # The same text as payload or as output is not the same ending.
    assert fingerprint("", "error", "boom") != fingerprint("boom", "error")
    # An empty payload means "no payload".
    assert fingerprint("out", "error", "") == fingerprint("out", "error")


def test_fingerprint_of_undecodable_text_does_not_raise() -> None:
    assert len(fingerprint("bad \udcff byte")) == 16


def test_first_lines() -> None:
    text = "\n\none\n   \ntwo  \n" + "x" * 250 + "\nfour\nfive\nsix\n"
    assert first_lines(text) == "one\ntwo\n" + "x" * 197 + "...\nfour\nfive"
    assert first_lines(text, count=2) == "one\ntwo"
    assert first_lines("") == ""


# --- the stall guard ---------------------------------------------------------------------


def test_the_third_identical_ending_in_a_row_is_a_stall() -> None:
    guard = StallGuard()
    assert guard.observe("check", "failure", "f1", "FAILED a") is None
    assert guard.observe("check", "failure", "f1", "FAILED a (again)") is None
    # The latest words the streak had (issue 23 item 25); a step without any keeps them.
    assert guard.observe("check", "failure", "f1") == StallStreak(
        "failure", "f1", 3, "FAILED a (again)", cycle=""
    )


def test_a_different_ending_starts_a_new_streak() -> None:
    guard = StallGuard(threshold=2)
    guard.observe("check", "failure", "f1")
    assert guard.observe("check", "failure", "f2", "new") is None
    assert guard.observe("check", "error", "f2") is None
    assert guard.streaks["check"] == StallStreak("error", "f2", 1, "")


def test_streaks_are_per_state_so_a_cycle_through_other_states_is_caught() -> None:
    guard = StallGuard()
    endings = []
    for _ in range(3):
        endings.append(guard.observe("check", "failure", "same"))
        endings.append(guard.observe("fix", "error", "fix says the same"))
    assert endings[:4] == [None, None, None, None]
    stalled = endings[4]
    assert stalled is not None
    assert (stalled.verdict, stalled.fingerprint, stalled.count) == ("failure", "same", 3)
    assert endings[5] is not None  # fix too ended the same way with nothing changed


def test_a_state_in_between_that_ends_differently_is_progress() -> None:
    """Issue 10: the other states' outputs count, not only the state's own."""
    guard = StallGuard()
    endings = []
    for attempt in range(6):
        endings.append(guard.observe("check", "failure", "same"))
        endings.append(guard.observe("fix", "success", f"fixed {attempt} more"))
    assert endings == [None] * 12
    assert guard.streaks["check"].count == 1


def test_a_changed_workspace_is_progress() -> None:
    guard = StallGuard()
    results = [guard.observe("check", "failure", "same", workspace=f"w{n}") for n in range(6)]
    assert results == [None] * 6
    assert guard.streaks["check"].count == 1
    assert guard.observe("check", "failure", "same", workspace="w5") is None
    assert guard.observe("check", "failure", "same", workspace="w5") is not None


def test_an_unwatched_workspace_does_not_hide_a_stall() -> None:
    guard = StallGuard()
    assert guard.observe("check", "failure", "same", workspace=None) is None
    assert guard.observe("check", "failure", "same", workspace="w1") is None
    assert guard.observe("check", "failure", "same", workspace=None) is not None


@pytest.mark.parametrize("verdict", ["success", "target", "progress"])
def test_healthy_verdicts_never_stall_and_clear_the_streak(verdict: str) -> None:
    guard = StallGuard(threshold=2)
    guard.observe("check", "failure", "f1")
    assert guard.observe("check", verdict, "f1") is None
    assert "check" not in guard.streaks
    assert [guard.observe("check", verdict, "ok") for _ in range(5)] == [None] * 5
    assert guard.observe("check", "failure", "f1") is None  # counting starts again


def test_threshold_zero_turns_the_guard_off() -> None:
    guard = StallGuard(threshold=0)
    assert [guard.observe("s", "failure", "f") for _ in range(10)] == [None] * 10
    assert guard.streaks == {}


def test_threshold_one_stalls_on_the_first_counted_ending() -> None:
    assert StallGuard(threshold=1).observe("s", "blocked", "f") == StallStreak(
        "blocked", "f", 1, ""
    )


def test_streaks_survive_a_round_trip_through_json() -> None:
    guard = StallGuard()
    guard.observe("fix", "error", "f9")
    guard.observe("check", "failure", "f1", "FAILED a")
    guard.observe("check", "failure", "f1")
    saved = json.loads(json.dumps(guard.to_dict()))
    since = saved["fix"].pop("since")  # how `check` ended, for fix's next round
    assert saved == {
        "check": {
            "verdict": "failure",
            "fingerprint": "f1",
            "count": 2,
            "preview": "FAILED a",
            "cycle": "",
        },
        "fix": {"verdict": "error", "fingerprint": "f9", "count": 1, "preview": ""},
    }
    saved["fix"]["since"] = since
    resumed = StallGuard()
    resumed.restore(saved)
    stalled = resumed.observe("check", "failure", "f1")
    assert stalled is not None
    assert (stalled.count, stalled.preview) == (3, "FAILED a")


def test_streaks_keep_what_the_next_round_is_compared_with() -> None:
    guard = StallGuard()
    guard.observe("check", "failure", "f1", workspace="w")
    guard.observe("fix", "success", "f2")
    guard.observe("check", "failure", "f1", workspace="w")
    guard.observe("fix", "success", "f2")
    resumed = StallGuard()
    resumed.restore(json.loads(json.dumps(guard.to_dict())))
    assert resumed.streaks == guard.streaks
    assert resumed.streaks["check"].cycle == resumed.streaks["check"].since != ""
    assert resumed.observe("check", "failure", "f1", workspace="w") is not None


def test_restore_tolerates_a_streak_without_preview() -> None:
    guard = StallGuard()
    guard.restore({"s": {"verdict": "failure", "fingerprint": "f", "count": 1}})
    assert guard.streaks == {"s": StallStreak("failure", "f", 1, "")}


def test_stall_message_names_the_state_and_shows_the_output() -> None:
    streak = StallStreak("failure", "f", 3, "FAILED test_a\nAssertionError: 1 != 2")
    assert stall_message("check", streak) == (
        "state 'check' ended with verdict 'failure' and the same output 3 times in a row; "
        "it said:\n  | FAILED test_a\n  | AssertionError: 1 != 2"
    )
    assert stall_message("wait", StallStreak("failure", "f", 4, "")) == (
        "state 'wait' ended with verdict 'failure' and the same output 4 times in a row (no output)"
    )


# --- visits ------------------------------------------------------------------------------


def test_visit_counter_counts_forgets_and_round_trips() -> None:
    visits = VisitCounter()
    assert (visits.enter("a"), visits.enter("a"), visits.enter("b")) == (1, 2, 1)
    assert (visits.count("a"), visits.count("missing")) == (2, 0)
    visits.forget_one("a")
    visits.forget_one("b")
    visits.forget_one("never")
    assert visits.to_dict() == {"a": 1}
    resumed = VisitCounter()
    resumed.restore(json.loads(json.dumps(visits.to_dict())))
    assert resumed.enter("a") == 2


# --- the error log -----------------------------------------------------------------------


def test_error_log_keeps_the_last_fifty_oldest_first() -> None:
    log = ErrorLog()
    for number in range(ERROR_LOG_LIMIT + 5):
        log.record("check", number, "verdict", f"error {number}")
    entries = log.entries
    assert len(entries) == ERROR_LOG_LIMIT
    assert (entries[0].message, entries[-1].message) == ("error 5", "error 54")


def test_error_entries_carry_a_stderr_tail_and_a_capped_message() -> None:
    log = ErrorLog(limit=3)
    entry = log.record("build", 2, "action", "m" * 2500, stderr="line\n" * 30)
    assert entry == ErrorEntry("build", 2, "action", "m" * 1997 + "...", "\n".join(["line"] * 20))
    assert log.record("build", 3, "fatal_error", "disk full").stderr_tail is None


def test_stderr_tail() -> None:
    assert stderr_tail("") is None
    assert stderr_tail("  \n\n") is None
    assert stderr_tail("warning\nerror: boom\n") == "warning\nerror: boom"
    long_line = "e" * 3000
    assert stderr_tail(long_line) == "..." + "e" * 2000


def test_error_log_round_trips_through_json() -> None:
    log = ErrorLog()
    log.record("check", 1, "verdict", "Action timed out after 5s", stderr="slow\n")
    log.record("check", 2, "fatal_error", "disk full")
    saved = json.loads(json.dumps(log.to_list()))
    assert saved == [
        {
            "state": "check",
            "iteration": 1,
            "source": "verdict",
            "message": "Action timed out after 5s",
            "stderr_tail": "slow",
        },
        {"state": "check", "iteration": 2, "source": "fatal_error", "message": "disk full"},
    ]
    resumed = ErrorLog(limit=2)
    resumed.restore(saved)
    resumed.record("fix", 3, "action", "exit code 2")
    assert [entry.iteration for entry in resumed.entries] == [2, 3]


def test_observe_ending_hashes_only_endings_that_count() -> None:
    guard = StallGuard()
    guard.observe_ending("s", "failure", "FAILED at 10:00:01")
    assert guard.observe_ending("s", "failure", "FAILED at 10:00:02") is None
    assert guard.streaks["s"].count == 2
    assert guard.observe_ending("s", "success", "ok") is None
    assert guard.streaks == {}
    assert guard.counts("blocked") and not guard.counts("progress")
    assert not StallGuard(threshold=0).counts("failure")
