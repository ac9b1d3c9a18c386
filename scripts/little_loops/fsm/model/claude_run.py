"""What one claude run reported about itself (`ClaudeRun`, with its `RateLimitInfo`).

Records only: `process.claude_stream` builds them from claude's stream-json, and the run
core reads them (through `ActionResult.claude`) to decide waits and failover, so they sit
in the bottom layer. `claude_stream` re-exports both under their old names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["ClaudeRun", "RateLimitInfo"]


@dataclass
class RateLimitInfo:
    """One `rate_limit_event`: where the account stands against a usage limit."""

    status: str  # allowed | allowed_warning | rejected
    resets_at: float | None  # epoch seconds (`resetsAt`)
    limit_type: str | None  # five_hour | seven_day | seven_day_opus | ...
    utilization: float | None

    def to_dict(self) -> dict[str, Any]:
        return _set_fields(self)


@dataclass
class ClaudeRun:
    """What one claude run reported about itself."""

    session_id: str | None = None
    result_text: str | None = None  # the final `result` text (None: no result event)
    is_error: bool = False
    api_error_status: int | None = None
    cost_usd: float | None = None  # total_cost_usd
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    num_turns: int | None = None
    retries: int = 0  # system/api_retry lines seen
    last_retry_error: str | None = None  # their `error` (rate_limit|overloaded|...)
    rate_limit: RateLimitInfo | None = None  # the last rejected one, else the last one seen
    host: str | None = None  # the agent host that ran (None: claude, as before hosts)

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, JSON-able; `result_text` left out (it is the
        action's output, stored there already, and may be large)."""
        data = _set_fields(self, leave_out=("result_text",))
        if self.rate_limit is not None:
            data["rate_limit"] = self.rate_limit.to_dict()
        return data


def _set_fields(record: Any, leave_out: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of a dataclass `record` holding something (not None, 0 or False)."""
    data: dict[str, Any] = {}
    for item in fields(record):
        value = getattr(record, item.name)
        if item.name not in leave_out and value is not None and value is not False and value != 0:
            data[item.name] = value
    return data
