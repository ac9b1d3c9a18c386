"""`ll-loop history`'s filters at their edges (found by the mutation check of
cli/history_query.py, docs/testing.md "Mutation check"): a time of day that is now, event
times with and without a zone, a filter over a history longer than what `-n` shows, and
what is said when nothing is shown. Real events files in `tmp_path`."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process

from little_loops.cli.history_query import parse_since
from little_loops.fsm.persistence import StatePersistence


@pytest.fixture(autouse=True)
def _in_tmp_utc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TZ", "UTC")  # lines show local time: make it known
    monkeypatch.setenv("NO_COLOR", "1")
    time.tzset()


def _write(events: list[dict[str, object]]) -> None:
    persistence = StatePersistence("fixer", Path(".loops"))
    persistence.initialize()
    for event in events:
        persistence.append_event(event)


def test_a_time_of_day_that_is_now_means_today() -> None:
    now = datetime(2026, 11, 23, 2, 0, tzinfo=UTC)
    assert parse_since("02:00", now) == now
    assert parse_since("02:01", now) == datetime(2026, 11, 22, 2, 1, tzinfo=UTC)


def test_event_times_without_a_zone_are_utc_and_with_one_are_compared_as_instants(
    capsys: pytest.CaptureFixture[str],
) -> None:
    naive = {"event": "state_enter", "ts": "2020-05-01T02:14:00", "state": "a"}
    shifted = {"event": "state_enter", "ts": "2020-05-01T04:14:30+02:00", "state": "b"}
    _write([naive, shifted])
    code, out, _ = cli_in_process(
        capsys, "history", "fixer", "--json", "--since", "2020-05-01T02:14:10+00:00"
    )
    assert (code, json.loads(out)) == (0, [shifted])
    code, out, _ = cli_in_process(
        capsys, "history", "fixer", "--json", "--since", "2020-05-01T02:13:50+00:00"
    )
    assert (code, json.loads(out)) == (0, [naive, shifted])


def test_a_filter_looks_at_the_whole_history_not_only_its_end(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """500 events: more than the end `-n 50` reads without a filter."""
    events: list[dict[str, object]] = [{"event": "loop_start", "ts": "2020-05-01T02:00:00+00:00"}]
    for n in range(100):
        ts = f"2020-05-01T03:{n // 60:02d}:{n % 60:02d}+00:00"
        events += [
            {"event": "state_enter", "ts": ts, "state": "s", "iteration": n + 1},
            {"event": "action_start", "ts": ts, "action": "true"},
            {"event": "action_complete", "ts": ts, "exit_code": 0},
            {"event": "evaluate", "ts": ts, "verdict": "success"},
            {"event": "route", "ts": ts, "from": "s", "to": "s"},
        ]
    _write(events)
    code, out, _ = cli_in_process(capsys, "history", "fixer", "--event", "loop_start")
    assert (code, out) == (0, "2020-05-01 02:00:00 loop_start\n")


def test_nothing_to_show_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    _write(
        [
            {"event": "state_enter", "ts": "2020-05-01T02:14:07+00:00", "state": "fix"},
            {"event": "action_start", "ts": "2020-05-01T02:14:07+00:00", "action": "x"},
        ]
    )
    assert cli_in_process(capsys, "history", "fixer") == (0, "No state visit has ended yet\n", "")
    assert cli_in_process(capsys, "history", "fixer", "--since", "2020-05-01T03:00:00Z") == (
        0,
        "No events match\n",
        "",
    )
