"""The requests to wait: a backoff (`Sleep`) and a wait until a wall-clock time
(`WaitUntil`, a usage limit's reset). Apart from `run_requests` so that a run that never
waits does not build them at start-up; `requests` exports them too."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Sleep", "WaitUntil"]


@dataclass(frozen=True)
class Sleep:
    """Wait `seconds` (backoff) unless a shutdown cuts it short; submit None."""

    seconds: float


@dataclass(frozen=True)
class WaitUntil:
    """Wait until the wall-clock time `until` (epoch seconds; a usage limit's reset)
    unless a shutdown cuts it short; submit None. Measured against the wall clock, so a
    machine that slept through part of the wait does not wait that part again."""

    until: float
