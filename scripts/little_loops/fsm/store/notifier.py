"""Telling a person: which moments of a run call the loop's `notify` command, and with what.

A run calls its notify command (`notify:` in the loop file, or `--notify CMD`) when it
ends or needs someone: the end of the run as saved (`completed`, `failed`, `handoff`,
`stalled`, `interrupted`, `max_iterations`, `budget_exhausted`, `usage_limited`), and the
start and end of a usage-limit wait (`limit_wait_started`, `limit_wait_ended`), and a
`human_approval` question (`approval_needed`, the question in `LL_MESSAGE`), and a
state moving to the next agent host of its list (`host_switch`, issue 24). Each call
gets `LL_LOOP`, `LL_EVENT`, `LL_STATUS` (the state file's status then), `LL_MESSAGE` (one
readable line) and `LL_STATE_FILE` in its environment. The end is told only once its
state is saved, so a command reading `LL_STATE_FILE` sees how the run ended. Starting,
bounding and logging the command is `process.notify_command`'s job.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from little_loops.fsm.engine.events import APPROVAL_NEEDED, HOST_SWITCH, LIMIT_WAIT, LIMIT_WAIT_END
from little_loops.fsm.process.notify_command import NOTIFY_TIMEOUT_SECONDS, start_notify_command
from little_loops.fsm.store.notify_log import notify_log_path
from little_loops.fsm.store.state_files import LoopState, StatePersistence

__all__ = [
    "NOTIFY_EVENTS",
    "Notification",
    "RunNotifier",
    "approval_notification",
    "end_notification",
    "limit_notification",
    "notify_log_path",
    "run_notifier",
]

NOTIFY_EVENTS = (
    "completed",
    "failed",
    "handoff",
    "stalled",
    "budget_exhausted",
    "usage_limited",
    "interrupted",
    "max_iterations",
    "limit_wait_started",
    "limit_wait_ended",
    "approval_needed",
    "host_switch",
)
"""Every `LL_EVENT` a notify command can get."""

_MESSAGE_CAP = 1000  # characters of LL_MESSAGE: a notification, not a log

# How a run ended (`terminated_by`) -> the event told. `signal_stop` (an action's
# LOOP_STOP) is the loop ending itself on purpose: `completed`, with status `stopped`.
_END_EVENTS = {
    "terminal": "completed",
    "signal_stop": "completed",
    "error": "failed",
    "timeout": "failed",
    "handoff": "handoff",
    "stalled": "stalled",
    "signal": "interrupted",
    "max_iterations": "max_iterations",
    "budget_exhausted": "budget_exhausted",
    "usage_limited": "usage_limited",
}


@dataclass(frozen=True)
class Notification:
    """One call of the notify command: its `LL_EVENT`, `LL_STATUS` and `LL_MESSAGE`."""

    event: str
    status: str
    message: str


def end_notification(state: LoopState) -> Notification:
    """What to tell about the run that ended as `state` (as saved)."""
    event = _END_EVENTS.get(state.terminated_by or "", "failed")
    return Notification(event, state.status, _one_line(_end_message(event, state)))


def _end_message(event: str, state: LoopState) -> str:
    where = f"at state '{state.current_state}'"
    if event == "handoff":
        resume = f"{where}; continue with: ll-loop resume {state.loop_name}"
        return state.continuation_prompt or resume
    if event == "completed":
        plural = "" if state.iteration == 1 else "s"
        done = f"after {state.iteration} iteration{plural}{_took(state)}"
        if state.terminated_by == "signal_stop":
            return f"stopped by LOOP_STOP {where} {done}"
        return f"done {where} {done}"
    if state.error:
        return state.error
    if event == "interrupted":
        return f"{where}; continue with: ll-loop resume {state.loop_name}"
    if event == "max_iterations":
        return f"{state.iteration} iterations done, stopped before state '{state.current_state}'"
    return where


def _took(state: LoopState) -> str:
    return f", {_duration(state.elapsed_ms / 1000)}" if state.elapsed_ms else ""


def limit_notification(event: dict[str, Any], *, today: date | None = None) -> Notification | None:
    """What to tell about a usage-limit wait starting or ending (None: another event).

    A reset on another day than `today` (default: today here) is shown with its date.
    """
    kind = event.get("event")
    if kind == LIMIT_WAIT:
        message = _wait_message(event, today or date.today())
        return Notification("limit_wait_started", "waiting_for_limit", message)
    if kind == LIMIT_WAIT_END:
        waited = _duration(_seconds(event.get("waited_seconds")) or 0.0)
        state = event.get("state")
        again = f"; running state '{state}' again" if state else ""
        return Notification("limit_wait_ended", "running", f"waited {waited}{again}")
    if kind == HOST_SWITCH:  # issue 24: a state moved to the next agent host
        moved = f"{event.get('state')}: {event.get('from')} -> {event.get('to')}"
        return Notification("host_switch", "running", f"{moved} ({event.get('message', '')})")
    return None


def approval_notification(event: dict[str, Any]) -> Notification | None:
    """What to tell when a run asks a person (None: another event). Told once per
    question: a resumed run waiting again (`approval_waiting`) asks nobody twice."""
    if event.get("event") != APPROVAL_NEEDED:
        return None
    return Notification("approval_needed", "awaiting_approval", _one_line(str(event["question"])))


def _wait_message(event: dict[str, Any], today: date) -> str:
    """`waiting for the usage limit to reset at 11:21pm (UTC), 3h12m`; without a reset
    time (claude did not say), until when the run waits."""
    resets = _reset_time(event.get("resets_at"), today)
    until = _reset_time(event.get("until"), today)
    seconds = _seconds(event.get("wait_seconds"))
    if seconds is None or (resets is None and until is None):
        return _one_line(str(event.get("message") or "waiting for the usage limit to reset"))
    wait = _duration(seconds)
    if resets is None:
        return f"waiting for the usage limit until {until}, {wait} (its reset time is unknown)"
    return f"waiting for the usage limit to reset at {resets}, {wait}"


def _seconds(value: object) -> float | None:
    """A number of seconds from an event (anything else: None; an event never fails a run)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) if math.isfinite(value) else None


def _reset_time(text: object, today: date) -> str | None:
    """An ISO 8601 time as claude shows it: `11:21pm (UTC)`, local to this process's TZ
    (with the date when it is not today)."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone()
    except (ValueError, OverflowError, OSError):
        return None
    hour = moment.hour % 12 or 12
    clock = f"{hour}:{moment.minute:02d}{'am' if moment.hour < 12 else 'pm'}"
    if moment.date() != today:  # claude's way: `Nov 26, 7:52pm`, `Jan 2, 2027, 9:00am`
        year = f" {moment.year}," if moment.year != today.year else ""
        clock = f"{moment:%b} {moment.day},{year} {clock}"
    return f"{clock} ({moment.tzname()})"


def _duration(seconds: float) -> str:
    """`3h12m`, `12m`, `45s`."""
    whole = max(round(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if minutes else f"{secs}s"


def _one_line(text: str) -> str:
    line = " ".join(text.replace("\0", "").split())  # no NUL can go into an environment
    return line if len(line) <= _MESSAGE_CAP else line[: _MESSAGE_CAP - 3] + "..."


@dataclass
class RunNotifier:
    """Calls `command` for a run of `loop_name`; never waits for it, never raises.

    `timeout` bounds each call (`NOTIFY_TIMEOUT_SECONDS`; tests make it short); `cwd` is
    where the command runs (default: this process's directory, the checkout of a run).
    """

    command: str
    loop_name: str
    state_file: Path
    log_path: Path
    timeout: float = NOTIFY_TIMEOUT_SECONDS
    cwd: Path | None = None
    _supervisors: list[subprocess.Popen[bytes]] = field(
        default_factory=list, init=False, repr=False
    )

    def on_event(self, event: dict[str, Any]) -> None:
        """A run event: told when it is one of the usage-limit wait's."""
        notification = limit_notification(event) or approval_notification(event)
        if notification is not None:
            self.send(notification)

    def on_end(self, state: LoopState) -> None:
        """The run ended and `state` is saved."""
        self.send(end_notification(state))

    def send(self, notification: Notification) -> None:
        """Start the command for `notification` and return at once."""
        # Finished supervisors are reaped here, so a long run leaves no zombies.
        self._supervisors = [sup for sup in self._supervisors if sup.poll() is None]
        supervisor = start_notify_command(
            self.command,
            self._environment(notification),
            label=notification.event,
            log_path=self.log_path,
            timeout=self.timeout,
            cwd=self.cwd,
        )
        if supervisor is not None:
            self._supervisors.append(supervisor)

    def wait(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for each call under way (for a script that wants
        them finished before it exits; a run never does)."""
        for supervisor in self._supervisors:
            with contextlib.suppress(subprocess.TimeoutExpired):
                supervisor.wait(timeout=timeout)
        self._supervisors = [sup for sup in self._supervisors if sup.poll() is None]

    def _environment(self, notification: Notification) -> dict[str, str]:
        return {
            **os.environ,
            "LL_LOOP": self.loop_name,
            "LL_EVENT": notification.event,
            "LL_STATUS": notification.status,
            "LL_MESSAGE": notification.message,
            "LL_STATE_FILE": str(self.state_file.absolute()),
        }


def run_notifier(command: str | None, persistence: StatePersistence) -> RunNotifier | None:
    """The notifier of a run whose notify command is `command` (None or empty: none)."""
    if not command:
        return None
    return RunNotifier(
        command=command,
        loop_name=persistence.loop_name,
        state_file=persistence.state_file,
        log_path=notify_log_path(persistence),
    )
