"""What a run of a HEAD-dialect loop remembers beyond the legacy cursor.

HEAD's caps, retries, throttle, edge counts, circuit breaker, stall evaluators, messages,
session summaries and sub-loops all keep counts or records that a resumed run must find
again (spec/ll-head-dialect.md §7, §9b, §9h). They live here, in one record on the
`RunCursor` (`RunCursor.head`), saved whole under the state file's `head` key and in the
Temporal carry, and only when something is in it: a legacy loop never writes it, so its
state files stay as they were.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["HeadMemory"]


@dataclass
class HeadMemory:
    """The HEAD-dialect part of a run's position (all empty for a legacy loop).

    - `previous_state`: the state the last pass ran (for `max_retries`, §7.1);
      `retry_counts`: consecutive re-entries per state.
    - `passes`: full passes so far (`max_iterations` beside `max_steps`, §7.4);
      `summaries_run`: which of `on_max_steps` / `on_max_iterations` already ran.
    - `throttle_counts`: action runs per state since it was entered (§7.5);
      `judge_holds`: consecutive undeclared `cannot_judge` re-entries per state (§3.3).
    - `edge_counts`: `"from->to"` -> times taken (`max_edge_revisits`).
    - `circuit_records`: `[state, exit code, verdict, fingerprint]` per evaluated state (§7.7).
    - `evaluator_memory`: per state, what a stall evaluator keeps between calls (§9h).
    - `messages`: texts appended by `append_to_messages`; `session_summary`: what a
      `session_mode: continue` state left for the next one (§7.8).
    - `rate_limit`: per state, the HEAD rate-limit ladder's memory (§7.6).
    - `sub_loops`: the sub-loops under way, outermost first (§9b).
    - `run_dir`: the run's directory (`${context.run_dir}`), kept across resume.
    - `hosts`: issue 24's failover and pacing memory (any dialect, `host_failover`).
    """

    previous_state: str | None = None
    retry_counts: dict[str, int] = field(default_factory=dict)
    passes: int = 0
    summaries_run: list[str] = field(default_factory=list)
    throttle_counts: dict[str, int] = field(default_factory=dict)
    judge_holds: dict[str, int] = field(default_factory=dict)
    edge_counts: dict[str, int] = field(default_factory=dict)
    circuit_records: list[list[Any]] = field(default_factory=list)
    evaluator_memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    session_summary: str | None = None
    rate_limit: dict[str, dict[str, Any]] = field(default_factory=dict)
    sub_loops: list[dict[str, Any]] = field(default_factory=list)
    run_dir: str | None = None
    # Addition (issue 24, both dialects): the agent hosts' limits, quota use and sessions
    # (`engine.host_failover`); empty unless a run fails over between hosts or paces.
    hosts: dict[str, Any] = field(default_factory=dict)

    @property
    def anything(self) -> bool:
        """True when there is something to save."""
        return bool(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (empty and default ones left out), as JSON values."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if value not in (None, 0, [], {}):
                out[item.name] = copy.deepcopy(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> HeadMemory:
        """A saved record (unknown keys ignored, so an older reader skips newer ones)."""
        known = {item.name for item in fields(cls)}
        values = {key: copy.deepcopy(value) for key, value in (data or {}).items() if key in known}
        return cls(**values)

    def copy(self) -> HeadMemory:
        return HeadMemory.from_dict(self.to_dict())
