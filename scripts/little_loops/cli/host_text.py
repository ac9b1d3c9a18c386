"""Issue 24 in `status`: which agent host a failing-over or paced run is on, and which
hosts are limited or paced out until when (`HeadMemory.hosts`, saved with the run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from little_loops.cli.spending_text import reset_phrase

__all__ = ["host_lines"]


def host_lines(memory: Mapping[str, Any] | None, now: float) -> list[str]:
    """`Host: gemini`, then one `Host limited: ...` / `Host quota: ...` line per host
    (none for a run that neither fails over nor paces)."""
    if not memory:
        return []
    lines = [f"Host: {memory['last']}"] if memory.get("last") else []
    for host, limited in (memory.get("limited") or {}).items():
        if float(limited.get("until", 0)) > now:
            when = reset_phrase(float(limited["until"]), now)
            lines.append(f"Host limited: {host} until {when} ({limited.get('message', '')})")
    for host, quota in (memory.get("quota") or {}).items():
        resets = quota.get("resets_at")
        when = f", resets {reset_phrase(float(resets), now)}" if resets else ""
        lines.append(f"Host quota: {host} at {float(quota['utilization']):.0%}{when}")
    return lines
