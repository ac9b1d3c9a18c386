"""What `ll-loop status` adds to the saved state so that a person knows where a run is and
what to do (issue 23, item 15): why it stopped, how long it has run, the action under way
and its log, and the next command, by loop name.

The reference's lines (`Loop:`, `Status:`, `Current state:`, ...) keep their place and
words; a stop reason is added to `Status:` only where the status alone does not say it.
"""

from __future__ import annotations

from datetime import datetime

from little_loops.cli.display import one_line, shorten
from little_loops.cli.liveness import Owner, owner_of
from little_loops.cli.output import format_duration, plural
from little_loops.fsm.model.log_names import action_log_name
from little_loops.fsm.persistence import LoopState, StatePersistence
from little_loops.fsm.store.run_history import LIVE_STATUSES
from little_loops.fsm.store.state_files import read_last_events

__all__ = ["action_lines", "elapsed_line", "next_line", "stop_reason"]

_RECENT_EVENTS = 50  # enough to find the state under way's action_start
_ACTION_WIDTH = 200
_RESUMABLE = ("interrupted", "awaiting_continuation", "stalled", "usage_limited")


def stop_reason(state: LoopState) -> str:
    """` (max_iterations reached after 20 iterations)` where the status does not say why."""
    why = state.terminated_by
    if state.status == "interrupted" and why == "max_iterations":
        return f" (max_iterations reached after {plural(state.iteration, 'iteration')})"
    if state.status == "interrupted" and why == "signal":
        return " (stopped by ll-loop stop, Ctrl-C or a signal)"
    if state.status == "failed" and why == "timeout":
        return " (the loop's timeout was reached)"
    return ""


def elapsed_line(state: LoopState, now: datetime) -> str | None:
    """`Elapsed: 2m 34s`: the run's time (so far, for a run under way)."""
    if state.elapsed_ms is not None and state.status not in LIVE_STATUSES:
        return f"Elapsed: {_long_duration(state.elapsed_ms)}"
    started = _moment(state.started_at)
    ended = now if state.status in LIVE_STATUSES else _moment(state.updated_at)
    if started is None or ended is None:
        return None
    return f"Elapsed: {_long_duration(max(int((ended - started).total_seconds() * 1000), 0))}"


def _long_duration(milliseconds: int) -> str:
    """`4.0s`, `2m 34s`, and for the runs of a night `9h 12m`."""
    hours, rest = divmod(milliseconds // 1000, 3600)
    return f"{hours}h {rest // 60}m" if hours else format_duration(milliseconds)


def action_lines(state: LoopState, persistence: StatePersistence) -> list[str]:
    """`Action: <action>` and `Log: <path>` of the state a live run is in."""
    if state.status not in LIVE_STATUSES or owner_of(state) is Owner.GONE:
        return []
    recent = read_last_events(persistence.events_file, _RECENT_EVENTS)
    action, iteration = _action_under_way(recent, state.current_state)
    if action is None:
        return []
    # The iteration its `state_enter` said: the state file may not have counted it yet.
    number = iteration if iteration is not None else state.current_iteration()
    log = persistence.logs_dir / action_log_name(number, state.current_state)
    lines = [f"Action: {shorten(one_line(action), _ACTION_WIDTH)}"]
    return [*lines, f"Log: {log}" if log.exists() else f"Log: {log} (nothing written yet)"]


def next_line(state: LoopState) -> str | None:
    """`Next: <command>`, by loop name, for a run that can go on or is under way."""
    name = state.loop_name
    if state.status in LIVE_STATUSES:
        if owner_of(state) is Owner.GONE:
            return f"Next: ll-loop resume {name}"
        return f"Next: ll-loop watch {name} (follow it), ll-loop stop {name} (stop it)"
    if state.status == "budget_exhausted":
        return f"Next: ll-loop resume {name} --max-cost <a higher budget>"
    if state.status in _RESUMABLE:
        return f"Next: ll-loop resume {name}"
    return None


def _action_under_way(
    events: list[dict[str, object]], current: str
) -> tuple[str | None, int | None]:
    """The top-level run's last `action_start` since it last entered `current`, and that
    entry's iteration (events oldest first; a sub-loop's carry `depth`)."""
    action: str | None = None
    iteration: int | None = None
    for event in events:
        kind = event.get("event")
        if event.get("depth"):
            continue
        if kind == "state_enter" and event.get("state") == current:
            action = None
            number = event.get("iteration")
            iteration = number if isinstance(number, int) else None
        elif kind == "action_start":
            text = event.get("action")
            action = text if isinstance(text, str) else None
            if action is not None and event.get("host"):  # issue 24: its agent host
                action = f"{action} (on {event['host']})"
    return action, iteration


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None
