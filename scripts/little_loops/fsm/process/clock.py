"""The host's clocks, handed to the engine (which reads no clock of its own).

`SystemClock.monotonic` measures durations (the loop timeout, `elapsed_ms`);
`SystemClock.wall` stamps events and `start_time_ms`. A test or another engine passes its
own object with the same two methods. When `time.time` has been replaced (a test of the
reference patching `little_loops.fsm.executor.time.time`), the loop clock is `time.time()`,
the reference's, so the replacement drives the loop `timeout`.
"""

from __future__ import annotations

import time

from little_loops.fsm.process import reference_seams

__all__ = ["SYSTEM_CLOCK", "SystemClock"]


class SystemClock:
    """The machine's clocks, in seconds."""

    def monotonic(self) -> float:
        if reference_seams.time_replaced():  # a test faking the reference's loop clock
            return time.time()
        return time.monotonic()

    def wall(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()
