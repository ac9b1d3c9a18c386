"""What a run spent and when a usage limit resets, as a person reads them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from little_loops.fsm.engine.spending import RunSpending, format_cost, format_tokens
from little_loops.fsm.model.durations import format_duration

__all__ = ["cost_of_event", "reset_phrase", "spending_line", "spent_text"]


def spent_text(spending: Mapping[str, Any] | None) -> str:
    """`, $0.0412, 12.3k tokens` to add to a summary's parenthesis ('' when nothing)."""
    if not spending:
        return ""
    spent = RunSpending.from_dict(spending)
    if not spent.anything:
        return ""
    return f", {format_cost(spent.cost_usd)}, {format_tokens(spent.tokens)}{_per_host(spent)}"


def _per_host(spent: RunSpending) -> str:
    """` (claude $0.0100, codex $0.0200)` when more than claude ran prompts (issue 24)."""
    hosts = spent.by_host()
    if not hosts:
        return ""
    parts = [f"{name} {format_cost(float(own['cost_usd']))}" for name, own in hosts.items()]
    return f" ({', '.join(parts)})"


def spending_line(spending: Mapping[str, Any] | None) -> str | None:
    """`Spent: $0.0412 (12.3k tokens: 9.1k in, 3.2k out, ...)` for `status`; None: nothing."""
    if not spending:
        return None
    spent = RunSpending.from_dict(spending)
    if not spent.anything:
        return None
    parts = [
        f"{count} {label}"
        for count, label in (
            (spent.input, "in"),
            (spent.output, "out"),
            (spent.cache_read, "cache read"),
            (spent.cache_creation, "cache write"),
        )
        if count
    ]
    unpriced = "" if spent.priced else ", some not priced"
    detail = f"{format_tokens(spent.tokens)}: {', '.join(parts)}{unpriced}"
    return f"Spent: {format_cost(spent.cost_usd)} ({detail}){_host_detail(spent)}"


def _host_detail(spent: RunSpending) -> str:
    """`; by host: claude $0.01 (1.2k tokens), codex ...` (issue 24; '' for claude only)."""
    hosts = spent.by_host()
    parts = [
        f"{name} {format_cost(float(own['cost_usd']))} ({format_tokens(int(own['tokens']))})"
        for name, own in hosts.items()
    ]
    return f"; by host: {', '.join(parts)}" if parts else ""


def cost_of_event(event: Mapping[str, Any]) -> float | None:
    """The `cost_usd` an `action_complete` reported, if any."""
    cost = event.get("cost_usd")
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def reset_phrase(until: str | float, now: float) -> str:
    """`at 11:21pm (UTC), 3h12m` for a wait until `until` (ISO 8601 or epoch seconds),
    in this machine's time zone; the date is added when it is not today."""
    moment = datetime.fromisoformat(until) if isinstance(until, str) else None
    if moment is None:
        moment = datetime.fromtimestamp(float(until)).astimezone()
    local = moment.astimezone()
    today = datetime.fromtimestamp(now).astimezone().date()
    clock = local.strftime("%I:%M%p").lstrip("0").lower()
    day = "" if local.date() == today else local.strftime("%b %d, ").replace(" 0", " ")
    zone = local.tzname() or "local time"
    left = format_duration(max(local.timestamp() - now, 0))
    return f"at {day}{clock} ({zone}), {left}"
