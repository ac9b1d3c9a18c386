"""The questions `ll-loop history` answers: which events (`--state`, `--event`, `--since`).

Every event is first given the state it belongs to (`state_enter` and `route` name it; the
action and evaluation events between them belong to the state entered last), so that
`--state fix` finds the action and verdict of `fix` too.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from little_loops.fsm.engine.events import (
    LOOP_COMPLETE,
    LOOP_RESUME,
    LOOP_START,
    ROUTE,
    STATE_ENTER,
)

_AGE = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
SINCE_FORMS = "an ISO time (2026-11-23T02:00), a time today (02:00) or an age (30m, 2h, 1d)"


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`--since`: an ISO 8601 time (without a zone: local time), a time of day (the last
    time the clock showed it) or an age (`90s`, `30m`, `2h`, `1d`), as an aware datetime."""
    current = now or datetime.now().astimezone()
    age = _AGE.match(text)
    if age:
        return current - timedelta(**{_UNITS[age.group(2)]: int(age.group(1))})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        moment = _time_of_day(text, current)
    return moment if moment.tzinfo else moment.astimezone()


def _time_of_day(text: str, current: datetime) -> datetime:
    try:
        clock = time.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid time '{text}': use {SINCE_FORMS}") from None
    moment = datetime.combine(current.date(), clock, current.tzinfo)
    return moment - timedelta(days=1) if moment > current else moment


def since_argument(text: str) -> datetime:
    """argparse type for `--since` (a bad value is a one-line usage error, exit 2)."""
    return parse_since(text)


def event_moment(event: dict[str, Any]) -> datetime | None:
    """When `event` happened (aware; a timestamp without a zone is taken as UTC)."""
    try:
        moment = datetime.fromisoformat(str(event.get("ts")))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class EventFilter:
    """`--state`, `--event` (any of them) and `--since`; None: no condition."""

    state: str | None = None
    events: tuple[str, ...] = ()
    since: datetime | None = None

    @property
    def active(self) -> bool:
        return self.state is not None or bool(self.events) or self.since is not None

    def keep(self, event: dict[str, Any], state: str | None) -> bool:
        if self.state is not None and state != self.state:
            return False
        if self.events and event.get("event") not in self.events:
            return False
        if self.since is not None:
            moment = event_moment(event)
            return moment is not None and moment >= self.since
        return True


def states_of(events: list[dict[str, Any]]) -> list[str | None]:
    """The state each event belongs to (None: the run's own events, such as `loop_start`)."""
    # A `parallel:` fan-out's branches interleave: each keeps its own (issue 25).
    current: dict[Any, str | None] = {}
    owners: list[str | None] = []
    for event in events:
        kind = event.get("event")
        branch = event.get("branch") if "parallel_state" in event else None
        if kind == STATE_ENTER:
            current[branch] = str(event.get("state"))
        if kind == ROUTE:
            owners.append(str(event.get("from")))
            current[branch] = None
        elif kind in (LOOP_START, LOOP_RESUME, LOOP_COMPLETE):
            owners.append(None)
        else:
            owners.append(current.get(branch))
    return owners
