"""Failover and pacing between agent hosts (issue 24): pure decisions on the run's memory.

A prompt state whose `host:` is a list (`[claude, codex]`) runs on the first host that
is free. A host is not free while a usage limit it reported holds (until its reset) or,
with `rate_limit.max_utilization`, while the quota use it last reported is past that
share (until its window resets). When the host running a state reports a usage limit,
the state runs again on the next free host of its list, with the same prompt and a short
note of what the previous host said (`handoff_note`); when no host of the list is free,
the run waits for the earliest reset (`earliest`). A later action on a list goes back to
an earlier host as soon as it is free again (`host_return`).

The memory is `HeadMemory.hosts` (saved with the run, so a resumed run knows it):
`{"limited": {host: {"until", "message", "resets_at", "exact"}}, "quota": {host:
{"utilization", "resets_at"}}, "sessions": {host: {state: session id}}, "last": host}`.
It stays empty for a run that neither fails over nor paces, so its state files do not
change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from little_loops.fsm.engine.limit_policy import (
    EXACT_RESET_MARGIN_SECONDS,
    TEXT_RESET_MARGIN_SECONDS,
    UNKNOWN_RESET_WAIT_SECONDS,
)
from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.schema import RateLimitConfig

__all__ = [
    "HOST_RETURN",
    "HOST_SWITCH",
    "NOTE_CHARS",
    "Blocked",
    "earliest",
    "free_hosts",
    "handoff_note",
    "note_limited",
    "note_quota",
    "note_session",
    "session_of",
    "take_return",
]

HOST_SWITCH = "host_switch"
"""Event: a state moved to the next host of its list after a usage limit."""

HOST_RETURN = "host_return"
"""Event: an action went back to an earlier host of its list, free again."""

NOTE_CHARS = 2000
"""The most of the previous host's last text the next host is told."""

WARNING_UTILIZATION = 1.0
"""The quota use assumed for Claude's `allowed_warning` when it gives no utilization."""


@dataclass(frozen=True)
class Blocked:
    """Why `host` is not free until `until` (`reason`: `usage_limit`, or
    `max_utilization` for its quota use; `hit`: the limit to wait for)."""

    host: str
    until: float
    hit: LimitHit
    reason: str = "usage_limit"


def note_limited(
    memory: dict[str, Any], host: str, hit: LimitHit, config: RateLimitConfig, now: float
) -> float:
    """Remember that `host` met the usage limit `hit`; when it is free again."""
    if hit.resets_at is not None:
        margin = EXACT_RESET_MARGIN_SECONDS if hit.exact_reset else TEXT_RESET_MARGIN_SECONDS
        until = hit.resets_at + margin
    else:
        until = now + min(UNKNOWN_RESET_WAIT_SECONDS, config.max_wait)
    record: dict[str, Any] = {"until": until, "message": hit.message, "exact": hit.exact_reset}
    if hit.resets_at is not None:
        record["resets_at"] = hit.resets_at
    memory.setdefault("limited", {})[host] = record
    return until


def note_quota(memory: dict[str, Any], host: str, run: ClaudeRun | None) -> None:
    """Remember the quota use `host` last reported (Claude's `rate_limit_event`, Codex's
    `rate_limits`, as the adapters put it on the run's `rate_limit`)."""
    info = run.rate_limit if run is not None else None
    if info is None:
        return
    used = info.utilization
    if used is None and info.status == "allowed_warning":
        used = WARNING_UTILIZATION
    if used is None:
        return
    memory.setdefault("quota", {})[host] = {"utilization": used, "resets_at": info.resets_at}


def note_session(memory: dict[str, Any], host: str, state: str, session: str | None) -> None:
    if session:
        memory.setdefault("sessions", {}).setdefault(host, {})[state] = session


def session_of(memory: dict[str, Any], host: str, state: str) -> str | None:
    session = (memory.get("sessions") or {}).get(host, {}).get(state)
    return str(session) if session else None


def _blocked(
    memory: dict[str, Any], host: str, now: float, max_utilization: float | None
) -> Blocked | None:
    """Why `host` is not free at `now` (None: it is)."""
    limited = (memory.get("limited") or {}).get(host)
    if limited is not None and float(limited["until"]) > now:
        hit = LimitHit(
            "usage_limit",
            str(limited.get("message", "")),
            limited.get("resets_at"),
            None,
            bool(limited.get("exact", False)),
        )
        return Blocked(host, float(limited["until"]), hit)
    quota = (memory.get("quota") or {}).get(host)
    if max_utilization is None or quota is None:
        return None
    resets = quota.get("resets_at")
    used = float(quota["utilization"])
    if used < max_utilization or resets is None or float(resets) <= now:
        return None
    message = (
        f"{host}: quota use {used:.0%} is past rate_limit.max_utilization {max_utilization:.0%}"
    )
    until = float(resets) + EXACT_RESET_MARGIN_SECONDS
    hit = LimitHit("usage_limit", message, float(resets), None, True)
    return Blocked(host, until, hit, "max_utilization")


def free_hosts(
    memory: dict[str, Any], hosts: tuple[str, ...], now: float, max_utilization: float | None
) -> tuple[list[str], list[Blocked]]:
    """The hosts of `hosts` free at `now` (in list order), and why the others are not."""
    free: list[str] = []
    blocked: list[Blocked] = []
    for host in hosts:
        why = _blocked(memory, host, now, max_utilization)
        if why is None:
            free.append(host)
        else:
            blocked.append(why)
    return free, blocked


def earliest(blocked: list[Blocked]) -> Blocked:
    """The blocked host free first (the earlier in the list on a tie)."""
    return min(blocked, key=lambda why: why.until)


def take_return(memory: dict[str, Any], host: str, now: float) -> str | None:
    """When `host` runs a new action after its limit passed: the host the run used
    meanwhile (the action returns from it), and `host`'s limit is forgotten; else None."""
    limited = memory.get("limited") or {}
    record = limited.get(host)
    if record is None or float(record["until"]) > now:
        return None
    del limited[host]
    last = memory.get("last")
    return str(last) if last and last != host else None


def handoff_note(previous: str, said: str) -> str:
    """What the next host is told after the prompt: who stopped, and its last text."""
    tail = said.strip()[-NOTE_CHARS:]
    heard = f" Its last words were:\n\n{tail}" if tail else " It had said nothing yet."
    return (
        f"\n\n---\nNote: this task was started by another agent ({previous}), which was "
        f"stopped by a usage limit before it finished.{heard}"
    )
