"""The readable lines of `ll-loop history`.

One line per state visit, from its `route` event, with what the visit's other events said:

    02:14:07 fix  ✓ success -> test  (41s, $0.12)

(the time the state was entered, in the local zone, with the date when not today; the
verdict with its mark, and the reason of an `error`; where the run went; how long the visit
took; the cost when an event of the visit carries one). The events folded into that line
(`state_enter`, `action_start`, `action_complete`, `evaluate`) are not shown on their own
unless asked for with `--event`; every other event gets a line of its own:
`02:14:00 loop_start loop=fix-tests`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from little_loops.cli.display import GOOD_VERDICTS, SUB_LOOP_INDENT, last_line, one_line, shorten
from little_loops.cli.history_query import event_moment
from little_loops.cli.output import GREEN, RED, paint
from little_loops.fsm.engine.events import (
    ACTION_COMPLETE,
    ACTION_START,
    EVALUATE,
    LOOP_RESUME,
    LOOP_START,
    ROUTE,
    SIGNAL_IGNORED,
    STATE_ENTER,
)
from little_loops.fsm.engine.spending import format_cost

FOLDED = frozenset({STATE_ENTER, ACTION_START, ACTION_COMPLETE, EVALUATE})
COST_KEYS = ("cost_usd", "total_cost_usd", "cost")
VALUE_WIDTH = 60
BRANCH_ITEM_WIDTH = 30
# The keys a `parallel:` branch's events carry (shown in the line's prefix instead).
_BRANCH_TAGS = ("branch", "branches", "parallel_state", "branch_item")
REASON_WIDTH = 80
# Route reasons that are not a verdict's route (HEAD: a throttle's hard limit, the way
# back after a cap's summary state, a spent rate-limit budget).
MOVES_WITHOUT_VERDICT = frozenset(
    {
        "maintain",
        "max_visits",
        "throttle_hard",
        "max_steps",
        "max_iterations_reached",
        "rate_limit_exhausted",
    }
)


@dataclass
class _Visit:
    """What the events of the state visit under way said so far."""

    entered: datetime | None = None
    cost: float = 0.0
    costed: bool = False
    verdict: str | None = None
    error: str | None = None
    state: str | None = None
    lines_before: int = 0  # lines printed before the visit began
    interrupted: bool = False  # other lines were printed during it

    @property
    def shown_at(self) -> datetime | None:
        """The time its line shows: its start, unless other lines came during it."""
        return None if self.interrupted else self.entered

    def note(self, event: dict[str, Any]) -> None:
        for key in COST_KEYS:
            value = event.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.cost += value
                self.costed = True
                break
        kind = event.get("event")
        if kind == ACTION_COMPLETE:
            self.error = _action_failure(event)
        elif kind == EVALUATE:
            self.verdict = str(event.get("verdict", "?"))
            if event.get("error"):
                self.error = one_line(event["error"])


def _action_failure(event: dict[str, Any]) -> str | None:
    """Why an action failed, as the progress display says it (`exit code 127: <stderr>`)."""
    if event.get("error"):
        return one_line(event["error"])
    code = event.get("exit_code")
    if not isinstance(code, int) or code == 0:
        return None
    stderr = last_line(event.get("stderr_tail"))
    return f"exit code {code}: {stderr}" if stderr else f"exit code {code}"


def readable_lines(
    events: list[dict[str, Any]], keep: Callable[[int], bool], *, fold: bool
) -> list[str]:
    """The lines for the events whose index `keep` accepts (`fold`: the default view)."""
    # Per sub-loop depth (a `loop:` state spans its child) and `parallel:` branch.
    visits: dict[tuple[int, Any], _Visit] = {}
    lines: list[str] = []
    for index, event in enumerate(events):
        kind = event.get("event")
        depth = (_depth(event), event.get("branch") if "parallel_state" in event else None)
        if kind == STATE_ENTER:
            entered = event_moment(event)
            visits[depth] = _Visit(entered, state=str(event.get("state")), lines_before=len(lines))
        visit = visits.setdefault(depth, _Visit())
        visit.note(event)
        if not keep(index) or (fold and (kind in FOLDED or _restart_of_resume(events, index))):
            continue
        if kind == ROUTE:
            # Lines printed during the visit (a usage-limit wait, a sub-loop's) came after
            # its start: the visit's line then takes its end's time, to keep time order.
            visit.interrupted = len(lines) > visit.lines_before
            lines.append(_route_line(event, visit))
        else:
            lines.append(_event_line(event, visit.state if kind in _OF_A_STATE else None))
    return lines


def _restart_of_resume(events: list[dict[str, Any]], index: int) -> bool:
    """The `loop_start` a resumed run writes right after its `loop_resume` (as the
    reference did): the `loop_resume` line says it all."""
    return (
        index > 0
        and events[index].get("event") == LOOP_START
        and events[index - 1].get("event") == LOOP_RESUME
        and _depth(events[index]) == _depth(events[index - 1])
    )


# A state's own events, which do not name it: their lines do (`--event action_complete`).
_OF_A_STATE = frozenset({ACTION_START, ACTION_COMPLETE, EVALUATE, SIGNAL_IGNORED})


def _depth(event: dict[str, Any]) -> int:
    depth = event.get("depth")
    return depth if isinstance(depth, int) and depth > 0 else 0


def _pad(event: dict[str, Any]) -> str:
    """A sub-loop's lines are indented by its depth (spec/ll-head-dialect.md §4.7); a
    `parallel:` branch's say which item they are of (`[go 2/3] b: `, issue 25)."""
    pad = SUB_LOOP_INDENT * _depth(event)
    if "parallel_state" not in event:
        return pad
    index, total = event.get("branch"), event.get("branches", "?")
    number = index + 1 if isinstance(index, int) else "?"
    item = shorten(one_line(str(event.get("branch_item", "?"))), BRANCH_ITEM_WIDTH)
    return f"{pad}[{event.get('parallel_state', '?')} {number}/{total}] {item}: "


def clock_time(moment: datetime | None) -> str:
    """`02:14:07` in the local zone; with the date in front when it is not today."""
    if moment is None:
        return "--:--:--"
    local = moment.astimezone()
    if local.date() == datetime.now().astimezone().date():
        return local.strftime("%H:%M:%S")
    return local.strftime("%Y-%m-%d %H:%M:%S")


def _route_line(event: dict[str, Any], visit: _Visit) -> str:
    left = str(event.get("from", "?"))
    to = event.get("to", "?")
    reason = event.get("reason")
    if reason in MOVES_WITHOUT_VERDICT:
        return f"{clock_time(event_moment(event))} {_pad(event)}{left}  {reason} -> {to}"
    if not (event.get("verdict") or visit.verdict or reason):
        return _next_line(event, visit)
    verdict = str(event.get("verdict") or visit.verdict or "?")
    good = verdict in GOOD_VERDICTS
    mark = paint("✓", GREEN, sys.stdout) if good else paint("✗", RED, sys.stdout)
    said = f" - {shorten(visit.error, REASON_WIDTH)}" if verdict == "error" and visit.error else ""
    stalled = " (stalled)" if reason == "stalled" else ""
    started = visit.entered or event_moment(event)
    shown = visit.shown_at or event_moment(event)
    return (
        f"{clock_time(shown)} {_pad(event)}{left}  {mark} {verdict}{said} -> {to}{stalled}"
        f"  ({_took(started, event_moment(event), visit)})"
    )


def _next_line(event: dict[str, Any], visit: _Visit) -> str:
    """A move by `next:` (no verdict): `a  -> b (next)`, with the action's failure that the
    route ignored (`a  ! exit code 127: ... -> b (next)`)."""
    failed = f"! {shorten(visit.error, REASON_WIDTH)} " if visit.error else ""
    started = visit.entered or event_moment(event)
    shown = clock_time(visit.shown_at or event_moment(event))
    return (
        f"{shown} {_pad(event)}{event.get('from', '?')}  {failed}"
        f"-> {event.get('to', '?')} (next)  ({_took(started, event_moment(event), visit)})"
    )


def _took(start: datetime | None, end: datetime | None, visit: _Visit) -> str:
    parts = [_duration((end - start).total_seconds())] if start and end else []
    if visit.costed:
        parts.append(format_cost(visit.cost))
    return ", ".join(parts) or "?"


def _duration(seconds: float) -> str:
    """`0.2s` under 10 seconds, `41s` under a minute, else `2m 34s`."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{int(seconds)}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m {rest}s"


def _event_line(event: dict[str, Any], state: str | None = None) -> str:
    """`<time> [<state>  ]<event> key=value ...` (long values cut, line breaks folded)."""
    tags = _BRANCH_TAGS if "parallel_state" in event else ()
    rest = " ".join(
        f"{key}={_value(value)}"
        for key, value in event.items()
        if key not in ("event", "ts", "depth", *tags)
    )
    owner = f"{state}  " if state else ""
    head = f"{clock_time(event_moment(event))} {_pad(event)}{owner}{event.get('event', '?')}"
    return f"{head} {rest}" if rest else head


def _value(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shorten(one_line(text), VALUE_WIDTH)
