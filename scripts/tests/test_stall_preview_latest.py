"""A stall's message quotes the latest output of the streak (issue 23 item 25, earlier
finding 32): outputs that differ only in what the fingerprint leaves out (times, counts)
count as the same, and a streak restored by a resume quoted the first run's words."""

from __future__ import annotations

from little_loops.fsm.engine.guards import StallGuard, StallStreak, fingerprint, stall_message


def test_the_message_quotes_the_latest_output() -> None:
    guard = StallGuard(threshold=2)
    first = "tests failed at 10:01:02"
    latest = "tests failed at 10:05:09"
    digest = fingerprint(first, "failure")
    assert digest == fingerprint(latest, "failure")  # the time is left out
    assert guard.observe("test", "failure", digest, first) is None
    # As a resume restores it: the streak comes back from the state file.
    restored = StallGuard(threshold=2)
    restored.streaks = {"test": StallStreak.from_dict(guard.streaks["test"].to_dict())}
    streak = restored.observe("test", "failure", digest, latest)
    assert streak is not None
    assert stall_message("test", streak).endswith("it said:\n  | tests failed at 10:05:09")
