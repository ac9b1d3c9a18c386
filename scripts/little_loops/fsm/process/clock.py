"""The host's clocks, handed to the engine (which reads no clock of its own).

`SystemClock.monotonic` measures durations (the loop timeout, `elapsed_ms`);
`SystemClock.wall` stamps events and `start_time_ms`. A test or another engine passes its
own object with the same two methods.
"""

from __future__ import annotations

import time

__all__ = ["SYSTEM_CLOCK", "SystemClock"]


class SystemClock:
    """The machine's clocks, in seconds."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()
