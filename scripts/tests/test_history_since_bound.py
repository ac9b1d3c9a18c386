"""`ll-loop history --since T` keeps an event stamped exactly T (issue 29 item 6): the
bound is included, as "since" reads. The events file is a real one in `tmp_path`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fixtures.cli_support import cli_in_process

from little_loops.fsm.persistence import StatePersistence

EVENTS: list[dict[str, object]] = [
    {"event": "loop_start", "ts": "2020-05-01T02:14:00+00:00", "loop": "fixer"},
    {"event": "state_enter", "ts": "2020-05-01T02:14:07+00:00", "state": "fix", "iteration": 1},
    {"event": "action_complete", "ts": "2020-05-01T02:14:40+00:00", "exit_code": 0},
    {"event": "route", "ts": "2020-05-01T02:14:48+00:00", "from": "fix", "to": "done"},
    {
        "event": "loop_complete",
        "ts": "2020-05-01T02:14:49+00:00",
        "final_state": "done",
        "terminated_by": "terminal",
    },
]


@pytest.fixture(autouse=True)
def _events_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TZ", "UTC")  # lines show local time: make it known
    monkeypatch.setenv("NO_COLOR", "1")
    time.tzset()
    persistence = StatePersistence("fixer", Path(".loops"))
    persistence.initialize()
    for event in EVENTS:
        persistence.append_event(event)


def test_an_event_at_the_since_bound_is_kept(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_in_process(
        capsys, "history", "fixer", "--json", "--since", "2020-05-01T02:14:48+00:00"
    )
    assert (code, json.loads(out)) == (0, EVENTS[3:])


def test_the_since_bound_keeps_what_is_at_it_and_after_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = cli_in_process(
        capsys,
        "history",
        "fixer",
        "--event",
        "loop_complete",
        "--event",
        "route",
        "--since",
        "2020-05-01T02:14:49",
    )
    assert (code, out) == (
        0,
        "2020-05-01 02:14:49 loop_complete final_state=done terminated_by=terminal\n",
    )
