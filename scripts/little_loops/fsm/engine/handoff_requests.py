"""The request to hand a run off (a `CONTEXT_HANDOFF` signal): pause, or spawn a new
session. Apart from `run_requests` so that a run that never hands off does not build it at
start-up; `requests` exports it too."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HandOff"]


@dataclass(frozen=True)
class HandOff:
    """Give a handoff to the `HandoffHandler` (pause or spawn); submit its `HandoffResult`."""

    loop_name: str
    continuation: str | None
