"""How an agent CLI's run ended, classified (`HostEnding`): the record failover reads.

Every host adapter (`process.hosts`) reads its CLI's exit code, JSON events and text
into one of five kinds, so that the run core decides waits, retries and failover the
same way whatever the agent. A record only, in the bottom layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from little_loops.fsm.model.limit_hit import LimitHit

__all__ = ["EndingKind", "HostEnding"]

EndingKind = Literal["success", "usage_limit", "transient", "auth", "other"]
"""`success`: the CLI finished its turn. `usage_limit`: the account's quota is spent until
a reset (`resets_at` when the CLI says when). `transient`: a rate limit (429), a server
error (5xx) or an overload the CLI gave up retrying: worth trying again on the same host.
`auth`: the CLI could not authenticate (a key or login to fix). `other`: anything else."""


@dataclass(frozen=True)
class HostEnding:
    """How one run of an agent CLI ended, in the CLI's own words (`message`)."""

    kind: EndingKind
    message: str = ""
    resets_at: float | None = None  # epoch seconds, usage limits only
    limit_type: str | None = None  # the CLI's name of the limit, when it gives one
    exact_reset: bool = False  # `resets_at` is a machine-readable epoch, not read from text

    def as_limit(self) -> LimitHit | None:
        """The limit the run core waits on for this ending (None: not a limit)."""
        if self.kind == "usage_limit":
            message = self.message or "usage limit reached"
            return LimitHit(
                "usage_limit", message, self.resets_at, self.limit_type, self.exact_reset
            )
        if self.kind == "transient":
            return LimitHit("rate_limit", self.message or "transient API error")
        return None
