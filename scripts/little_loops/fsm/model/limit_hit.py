"""Claude stopped at a limit (`LimitHit`, of a `LimitKind`): the record the core waits on.

A record only, in the bottom layer so that the run core (`engine/`) decides waits from it
without importing the process layer; `process.claude_limits`, which reads claude's words
into it, re-exports both names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["LimitHit", "LimitKind"]

LimitKind = Literal["usage_limit", "rate_limit", "overloaded", "throttle"]


@dataclass(frozen=True)
class LimitHit:
    """Claude stopped at a limit: which kind, in claude's words, and when it resets.

    `resets_at` is epoch seconds (usage limits only; None when unknown). `limit_type` is
    the API's name of the limit (`five_hour`, `seven_day`, `seven_day_opus`, ...) from
    the `rate_limit_event` or from the message's words; None when neither says.
    `exact_reset`: `resets_at` is the stream's exact epoch, not a time read from claude's
    message (which gives minutes only).
    """

    kind: LimitKind
    message: str
    resets_at: float | None = None
    limit_type: str | None = None
    exact_reset: bool = False
