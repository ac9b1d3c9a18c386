"""The time limits of the Temporal engine that a client, a worker or a test may shorten.

- `query_seconds`: how long a query waits for a worker to answer (a worker that died is
  still listed by the server for minutes: its queries fail only at this deadline).
- `schedule_to_start_seconds`: how long an activity waits for a worker to take it before
  the run fails, saying no worker runs the checkout's actions (`RunInput`).
- `heartbeat_seconds`: how long a running action may go without a heartbeat before the
  server counts its worker as dead and retries it elsewhere (`RunInput`).
- `sticky_seconds` (the worker's): how long a run's next workflow task waits for the
  worker that ran its last one (it keeps the run in memory) before any worker of the queue
  may take it: after a worker died, the run goes on elsewhere this much later.

The defaults are the production ones (the last is Temporal's own). Each has a variable:
`LL_TEMPORAL_QUERY_SECONDS`, `LL_TEMPORAL_SCHEDULE_TO_START_SECONDS`,
`LL_TEMPORAL_HEARTBEAT_SECONDS` (the `ll-loop` commands, and the runs they start) and
`LL_TEMPORAL_STICKY_SECONDS` (`ll-loop worker`); the tests pass short ones.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import timedelta

from little_loops.fsm.errors import LoopError

__all__ = [
    "DEFAULT_HEARTBEAT_SECONDS",
    "DEFAULT_QUERY_SECONDS",
    "DEFAULT_SCHEDULE_TO_START_SECONDS",
    "DEFAULT_STICKY_SECONDS",
    "TIMEOUT_ENV",
    "Timeouts",
]

DEFAULT_QUERY_SECONDS = 30.0
DEFAULT_SCHEDULE_TO_START_SECONDS = 300.0
DEFAULT_HEARTBEAT_SECONDS = 10.0
DEFAULT_STICKY_SECONDS = 10.0

TIMEOUT_ENV = {
    "query_seconds": "LL_TEMPORAL_QUERY_SECONDS",
    "schedule_to_start_seconds": "LL_TEMPORAL_SCHEDULE_TO_START_SECONDS",
    "heartbeat_seconds": "LL_TEMPORAL_HEARTBEAT_SECONDS",
    "sticky_seconds": "LL_TEMPORAL_STICKY_SECONDS",
}


@dataclass(frozen=True)
class Timeouts:
    """See the module docstring."""

    query_seconds: float = DEFAULT_QUERY_SECONDS
    schedule_to_start_seconds: float = DEFAULT_SCHEDULE_TO_START_SECONDS
    heartbeat_seconds: float = DEFAULT_HEARTBEAT_SECONDS
    sticky_seconds: float = DEFAULT_STICKY_SECONDS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Timeouts:
        """The defaults, each replaced by its `LL_TEMPORAL_*_SECONDS` when set; a value that
        is not a positive number is a one-line error naming the variable."""
        env = os.environ if environ is None else environ
        given = {
            item.name: _seconds(TIMEOUT_ENV[item.name], env[TIMEOUT_ENV[item.name]])
            for item in fields(cls)
            if env.get(TIMEOUT_ENV[item.name])
        }
        return cls(**given)

    @property
    def query(self) -> timedelta:
        return timedelta(seconds=self.query_seconds)

    @property
    def sticky(self) -> timedelta:
        return timedelta(seconds=self.sticky_seconds)


def _seconds(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise LoopError(f"{name}={text}: not a positive number of seconds")
    return value
