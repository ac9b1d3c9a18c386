"""What a run does when an action met one of Claude's limits: wait for a usage limit to
reset, back off from a rate limit or overload, or give up.

Pure decisions (the time is passed in): the run core asks `plan_after_limit` and carries
out the answer (`LimitWait`, `LimitBackoff`, `LimitGiveUp`, or None: take the result as
it is, as before these waits existed). Neither a wait nor a backoff counts an iteration,
an error or a stall streak: the state simply runs again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from little_loops.fsm.engine.cursor_records import LimitWaitRecord
from little_loops.fsm.model.durations import format_duration
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.schema import RateLimitConfig

__all__ = [
    "BACKOFF_CAP_SECONDS",
    "EXACT_RESET_MARGIN_SECONDS",
    "TEXT_RESET_MARGIN_SECONDS",
    "UNKNOWN_RESET_WAIT_SECONDS",
    "LimitBackoff",
    "LimitGiveUp",
    "LimitWait",
    "plan_after_limit",
    "saved_wait_plan",
]

EXACT_RESET_MARGIN_SECONDS = 2.0
"""After an exact reset time (claude's `rate_limit_event`): clocks differ a little."""

TEXT_RESET_MARGIN_SECONDS = 60.0
"""After a reset time read from claude's message, which only gives the minute."""

UNKNOWN_RESET_WAIT_SECONDS = 3600.0
"""How long to wait when claude did not say when the limit resets, before trying again."""

BACKOFF_CAP_SECONDS = 1800.0
"""The longest backoff after a rate limit or overload (and the longest repeated wait)."""

THROTTLE_FIRST_SECONDS = 5.0
THROTTLE_CAP_SECONDS = 60.0
"""The short backoff for claude's "temporarily limiting requests" (not a usage limit)."""


@dataclass(frozen=True)
class LimitWait:
    """Wait until `until` (epoch seconds) for a usage limit to reset, then run again."""

    until: float
    hit: LimitHit


@dataclass(frozen=True)
class LimitBackoff:
    """Wait `seconds`, then run the state again (`attempt` counts from 1)."""

    seconds: float
    attempt: int
    hit: LimitHit


@dataclass(frozen=True)
class LimitGiveUp:
    """End the run as `usage_limited` (resumable): the reset is beyond `max_wait`.
    `until`: when a resumed run may go on (None: not known)."""

    message: str
    until: float | None = None


LimitPlan = LimitWait | LimitBackoff | LimitGiveUp


def plan_after_limit(
    hit: LimitHit, config: RateLimitConfig, *, backoffs: int, usage_waits: int, now: float
) -> LimitPlan | None:
    """What to do about `hit`, the `backoffs`-th rate-limit backoff or `usage_waits`-th
    usage wait of this state so far; None: the state takes its result as before."""
    if hit.kind == "usage_limit":
        return _usage_plan(hit, config, usage_waits, now)
    if backoffs >= config.retries:
        return None  # claude's error stands, as it did before these backoffs
    return LimitBackoff(_backoff_seconds(hit, config, backoffs), backoffs + 1, hit)


def _usage_plan(hit: LimitHit, config: RateLimitConfig, usage_waits: int, now: float) -> LimitPlan:
    if hit.resets_at is None:
        until = now + min(UNKNOWN_RESET_WAIT_SECONDS, config.max_wait)
    else:
        until = hit.resets_at + _reset_margin(hit)
        if until - now > config.max_wait:
            return LimitGiveUp(_beyond_max_wait(hit.message, config), until)
    # A limit met again right after its reset (a clock off, a reset moved): wait longer
    # each time instead of asking again and again.
    floor = _doubling(config.first_backoff, usage_waits - 1) if usage_waits else 0.0
    return LimitWait(max(until, now + floor), hit)


def _reset_margin(hit: LimitHit) -> float:
    """The exact epoch comes from the stream; a time in claude's words has minutes only."""
    return EXACT_RESET_MARGIN_SECONDS if hit.exact_reset else TEXT_RESET_MARGIN_SECONDS


def _backoff_seconds(hit: LimitHit, config: RateLimitConfig, backoffs: int) -> float:
    if hit.kind == "throttle":
        first = min(THROTTLE_FIRST_SECONDS, config.first_backoff)
        return min(_doubling(first, backoffs), THROTTLE_CAP_SECONDS)
    return _doubling(config.first_backoff, backoffs)


def _doubling(first: float, times: int) -> float:
    return min(first * 2.0 ** max(times, 0), BACKOFF_CAP_SECONDS)


def saved_wait_plan(
    record: Mapping[str, Any], config: RateLimitConfig, *, now: float
) -> LimitGiveUp | None:
    """A resumed run's saved wait (`RunCursor.limit_wait`): give up again when what is
    left of it is still beyond `max_wait` (a weekly limit); None: wait what is left."""
    wait = LimitWaitRecord.from_dict(record)
    if wait is not None and float(wait.until) - now > config.max_wait:
        return LimitGiveUp(_beyond_max_wait(wait.message, config), float(wait.until))
    return None


def _beyond_max_wait(message: str, config: RateLimitConfig) -> str:
    return (
        f"{message} (the reset is more than rate_limit.max_wait "
        f"{format_duration(config.max_wait)} away; resume after it)"
    )
