"""An action run again after a worker or server failure (`action_retry`), and why.

Temporal retries an action's activity when its attempt gave no result: its worker died
(the heartbeat stopped), the server restarted and lost the attempt's completion, or the
attempt raised. The action then runs again: at least once, never two at once (the retry
first stops what the dead attempt left running on this host, `activities`). That is never
silent: the retry's activity tells the workflow (the `action_retry` signal), which keeps
it as an event of the run (`events`, `status`, a followed run's progress line) and the
worker logs it.

What the retry knows of the attempt before it (`LastAttempt`): the host and worker
process its heartbeats named, whether that process still runs (this host only), and the
failure Temporal recorded for it. `retry_reason` says it in a few words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from little_loops.fsm.engine.events import ACTION_RETRY

__all__ = [
    "ACTION_RETRY_EVENT",
    "ActionRetry",
    "LastAttempt",
    "retry_reason",
    "retry_status_lines",
    "state_of_activity",
]

ACTION_RETRY_EVENT = ACTION_RETRY  # `events.ACTION_RETRY`
RETRIES_SHOWN = 10
"""The last retries `status` shows (the events keep them all)."""


@dataclass(frozen=True)
class ActionRetry:
    """A state's action run again: its attempt number (2 or more) and why."""

    state: str
    attempt: int
    reason: str

    def event(self, ts: str) -> dict[str, Any]:
        return {
            "event": ACTION_RETRY_EVENT,
            "ts": ts,
            "state": self.state,
            "attempt": self.attempt,
            "reason": self.reason,
        }

    def said(self) -> str:
        """The line of `status` and of the worker's log."""
        return f"state '{self.state}' was run again (attempt {self.attempt}): {self.reason}"


@dataclass(frozen=True)
class LastAttempt:
    """What a retry knows of the attempt before it.

    `host`, `worker_pid`: where its worker ran, from its last heartbeat (None: it sent
    none, or a worker from before this was known). `worker_alive`: that worker process
    still runs (known on this host only). `failure`: Temporal's text when the attempt
    failed by itself (raised), None when it timed out. `timeout`: which timeout ended
    it (`heartbeat`, `start_to_close`, ...), when Temporal said.
    """

    host: str | None = None
    worker_pid: int | None = None
    worker_alive: bool = False
    failure: str | None = None
    timeout: str | None = None


def retry_reason(last: LastAttempt, this_host: str) -> str:
    """Why the action runs again, in a few words (`status`, the progress line)."""
    if last.failure:
        return f"its last attempt failed: {last.failure}"
    if last.timeout == "start_to_close":
        return "its last attempt ran past its time limit"
    if last.host is None or last.worker_pid is None:
        return "its last attempt gave no result (its worker or the server went away)"
    if last.host != this_host:
        return f"its worker on {last.host} stopped answering"
    if last.worker_alive:
        # The worker still runs: the server lost the attempt (restarted, or cut off).
        return "the server restarted or lost touch with its worker"
    return "its worker died"


def state_of_activity(activity_id: str) -> str:
    """The state in an action's activity id, `<n>:<state>:action` (the workflow's
    `_activity_id`); the id itself when it has another shape."""
    number, _, rest = activity_id.partition(":")
    state, _, kind = rest.rpartition(":")
    return state if number.isdigit() and state and kind else activity_id


def retry_status_lines(retries: object) -> list[str]:
    """`status`'s lines for the retries a Temporal run's status holds (its
    `action_retries`: the events, newest last)."""
    if not isinstance(retries, list):
        return []
    lines = []
    for event in retries[-RETRIES_SHOWN:]:
        if isinstance(event, dict):
            retry = ActionRetry(
                str(event.get("state", "?")), int(event.get("attempt", 0)), str(event.get("reason"))
            )
            lines.append(retry.said())
    return lines
