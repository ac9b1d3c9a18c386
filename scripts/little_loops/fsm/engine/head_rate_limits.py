"""HEAD's per-state rate-limit keys (spec/ll-head-dialect.md §7.6, §9i): pure decisions.

A HEAD state that sets any of `max_rate_limit_retries`, `rate_limit_backoff_base_seconds`,
`rate_limit_max_wait_seconds`, `rate_limit_long_wait_ladder`, `on_rate_limit_exhausted`
meets a rate limit or a usage limit with HEAD's ladder instead of our loop-level
`rate_limit:` settings (the keys it leaves out take HEAD's defaults): first up to
`max_rate_limit_retries` short backoffs in place (`base·2^(n−1)` plus up to `base` of
jitter), then the long-wait ladder (its last entry repeats), all within a waiting budget
of `rate_limit_max_wait_seconds` for the state. A usage limit with a known reset waits
for it instead, or exhausts at once when the reset lies beyond what is left; one with an
unknown (or already passed) reset skips the short backoffs for the ladder. Overloads
and claude's short throttle keep our own handling (§7.6: "our own overload handling
covers the first").

The memory of the ladder is the state's entry in `HeadMemory.rate_limit` (saved for
resume, shared with sub-loops): `short_retries`, `long_retries`, `total_wait_seconds`,
`exhaustions` (in a row, for `rate_limit_storm`) and, during a wait, `until` / `tier` /
`session_id` so that a resumed run waits only what is left.

The jitter is derived from a hash of (state, attempt): the run core does no I/O and must
replay the same way on Temporal, so it may not draw random numbers.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from little_loops.fsm.engine.limit_policy import (
    EXACT_RESET_MARGIN_SECONDS,
    TEXT_RESET_MARGIN_SECONDS,
)
from little_loops.fsm.model.durations import format_duration
from little_loops.fsm.model.head_loop import HeadStateConfig
from little_loops.fsm.model.limit_hit import LimitHit
from little_loops.fsm.schema import StateConfig

__all__ = [
    "DEFAULT_BACKOFF_BASE_SECONDS",
    "DEFAULT_LONG_WAIT_LADDER",
    "DEFAULT_MAX_RATE_LIMIT_RETRIES",
    "DEFAULT_MAX_WAIT_SECONDS",
    "LADDER_KINDS",
    "STORM_COUNT",
    "HeadExhausted",
    "HeadLimits",
    "HeadWait",
    "exhausted_keys",
    "head_limits",
    "jitter_seconds",
    "note_exhausted",
    "note_through",
    "plan_head_wait",
]

DEFAULT_MAX_RATE_LIMIT_RETRIES = 3
DEFAULT_BACKOFF_BASE_SECONDS = 30
DEFAULT_MAX_WAIT_SECONDS = 21600
DEFAULT_LONG_WAIT_LADDER = (300, 900, 1800, 3600)

LADDER_KINDS = ("rate_limit", "usage_limit")
"""The limits HEAD's ladder handles; overloads and the short throttle keep ours."""

STORM_COUNT = 3
"""Exhaustions of one state in a row that make a `rate_limit_storm`."""

_COUNTERS = ("short_retries", "long_retries", "total_wait_seconds")


@dataclass(frozen=True)
class HeadLimits:
    """A HEAD state's rate-limit settings, HEAD's defaults filled in."""

    retries: int
    base: float
    budget: float
    ladder: tuple[float, ...]
    on_exhausted: str | None


@dataclass(frozen=True)
class HeadWait:
    """Wait `seconds` in place (`tier` `short` or `long`), then run the action again."""

    seconds: float
    tier: str


@dataclass(frozen=True)
class HeadExhausted:
    """The state's rate-limit budget is spent: `message` says why."""

    message: str


def head_limits(state: StateConfig) -> HeadLimits | None:
    """The HEAD ladder of `state`, or None: our `rate_limit:` settings apply (a legacy
    state, or a HEAD state that sets none of the keys)."""
    if not isinstance(state, HeadStateConfig):
        return None
    keys = (
        state.max_rate_limit_retries,
        state.rate_limit_backoff_base_seconds,
        state.rate_limit_max_wait_seconds,
        state.rate_limit_long_wait_ladder,
        state.on_rate_limit_exhausted,
    )
    if all(key is None for key in keys):
        return None
    ladder = state.rate_limit_long_wait_ladder or DEFAULT_LONG_WAIT_LADDER
    return HeadLimits(
        retries=_or(state.max_rate_limit_retries, DEFAULT_MAX_RATE_LIMIT_RETRIES),
        base=float(_or(state.rate_limit_backoff_base_seconds, DEFAULT_BACKOFF_BASE_SECONDS)),
        budget=float(_or(state.rate_limit_max_wait_seconds, DEFAULT_MAX_WAIT_SECONDS)),
        ladder=tuple(float(step) for step in ladder),
        on_exhausted=state.on_rate_limit_exhausted,
    )


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def jitter_seconds(state: str, attempt: int, base: float) -> float:
    """Up to `base` seconds, the same for the same (state, attempt) in every run."""
    digest = zlib.crc32(f"{state}:{attempt}".encode())
    return round(base * digest / 0xFFFFFFFF, 3)


def plan_head_wait(
    limits: HeadLimits, entry: dict[str, Any], hit: LimitHit, state: str, now: float
) -> HeadWait | HeadExhausted:
    """What to do about `hit`, given the state's memory `entry` (not changed here)."""
    waited = float(entry.get("total_wait_seconds", 0))
    left = limits.budget - waited
    if hit.kind == "usage_limit" and hit.resets_at is not None:
        margin = EXACT_RESET_MARGIN_SECONDS if hit.exact_reset else TEXT_RESET_MARGIN_SECONDS
        seconds = hit.resets_at + margin - now
        if seconds > left:
            return HeadExhausted(_beyond_budget(hit, limits, waited))
        if seconds > 0:
            return HeadWait(seconds, "long")
        # a reset already past that still refuses: wait as for an unknown reset
    if left <= 0:
        return HeadExhausted(_budget_spent(hit, limits))
    short = int(entry.get("short_retries", 0))
    if hit.kind == "rate_limit" and short < limits.retries:
        seconds = limits.base * 2.0**short + jitter_seconds(state, short + 1, limits.base)
        return HeadWait(min(seconds, left), "short")
    rung = min(int(entry.get("long_retries", 0)), len(limits.ladder) - 1)
    return HeadWait(min(limits.ladder[rung], left), "long")


def _budget_spent(hit: LimitHit, limits: HeadLimits) -> str:
    return (
        f"{hit.message} (rate_limit_max_wait_seconds {format_duration(limits.budget)} "
        "spent waiting in this state; resume to try again)"
    )


def _beyond_budget(hit: LimitHit, limits: HeadLimits, waited: float) -> str:
    left = format_duration(max(limits.budget - waited, 0))
    return (
        f"{hit.message} (the reset is beyond what is left of rate_limit_max_wait_seconds: "
        f"{left}; resume after it)"
    )


def note_through(table: dict[str, dict[str, Any]], state: str) -> None:
    """`state`'s action got through: its ladder and its run of exhaustions start over."""
    table.pop(state, None)


def note_exhausted(entry: dict[str, Any]) -> int:
    """Count an exhaustion (the ladder starts over); the exhaustions in a row so far."""
    for key in (*_COUNTERS, "until", "tier", "session_id"):
        entry.pop(key, None)
    entry["exhaustions"] = int(entry.get("exhaustions", 0)) + 1
    return int(entry["exhaustions"])


def exhausted_keys(state: str, entry: dict[str, Any], target: str | None) -> dict[str, Any]:
    """The payload of `rate_limit_exhausted` (read before `note_exhausted` clears it)."""
    short = int(entry.get("short_retries", 0))
    long = int(entry.get("long_retries", 0))
    return {
        "state": state,
        "retries": short + long,
        "short_retries": short,
        "long_retries": long,
        "total_wait_seconds": round(float(entry.get("total_wait_seconds", 0))),
        "next": target,
    }
