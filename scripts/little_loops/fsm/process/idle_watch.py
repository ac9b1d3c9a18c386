"""Silence as a limit: an action that prints nothing for too long is stopped (HEAD's
`idle_timeout` / `default_idle_timeout`).

The runner shows the watch a marker of the action's output so far (any value that
changes when something is written, such as the bytes seen on stdout and stderr); the
watch says when the marker has stayed the same for `seconds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["IdleWatch"]


@dataclass
class IdleWatch:
    """How long the output has been still, against the allowed `seconds`."""

    seconds: float
    _marker: object = field(default=None, repr=False)
    _still_since: float | None = field(default=None, repr=False)

    def too_quiet(self, marker: object, now: float) -> bool:
        """Whether the output (as `marker` shows it now) has been still `seconds`."""
        if self._still_since is None or marker != self._marker:
            self._marker, self._still_since = marker, now
            return False
        return now - self._still_since >= self.seconds
