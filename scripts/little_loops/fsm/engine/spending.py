"""What a run has spent: dollars and tokens, summed over its slash-command actions (as
claude reports them) and its LLM evaluations (from the SDK's usage, priced by model).

Kept in the run's cursor, so it is saved in the state file and a resumed run goes on
counting from there; the budget (`max_cost_usd`, `--max-cost`) is checked against it.
Issue 24: `hosts` splits the prompt actions' spending by agent host; it is written only
once a host other than claude ran one (a claude-only run's `spending` stays as it was).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TOKEN_KINDS", "RunSpending", "format_cost", "format_tokens"]

TOKEN_KINDS = ("input", "output", "cache_read", "cache_creation")


@dataclass
class RunSpending:
    """Dollars (`cost_usd`) and tokens by kind (`TOKEN_KINDS`) spent so far."""

    cost_usd: float = 0.0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    priced: bool = True  # False once a cost was not known (an unpriced model's tokens)
    # host -> {"cost_usd", "tokens"}: the prompt actions' spending per agent host.
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_creation

    @property
    def anything(self) -> bool:
        return self.cost_usd > 0 or self.tokens > 0

    def add(
        self, cost_usd: float | None, tokens: Mapping[str, int], *, host: str | None = None
    ) -> None:
        """Count one call: its cost (None: unknown) and its tokens by kind; also in the
        agent `host`'s own spending when given (a prompt action)."""
        if cost_usd is None:
            self.priced = self.priced and not any(tokens.values())
        else:
            self.cost_usd += cost_usd
        for kind in TOKEN_KINDS:
            setattr(self, kind, getattr(self, kind) + int(tokens.get(kind, 0)))
        if host is not None:
            own = self.hosts.setdefault(host, {"cost_usd": 0.0, "tokens": 0})
            own["cost_usd"] = round(float(own["cost_usd"]) + (cost_usd or 0.0), 6)
            own["tokens"] = int(own["tokens"]) + sum(int(n) for n in tokens.values())

    def by_host(self) -> dict[str, dict[str, Any]]:
        """The spending per host to show: only when a host other than claude ran."""
        return dict(self.hosts) if set(self.hosts) - {"claude"} else {}

    def copy(self) -> RunSpending:
        values = dict(self.__dict__)
        values["hosts"] = {name: dict(own) for name, own in self.hosts.items()}
        return RunSpending(**values)

    def to_dict(self) -> dict[str, Any]:
        """`{"cost_usd", "tokens": {kind: n}}` (+ `"unpriced": true` when some cost was
        not known): the shape of the state file's `spending` and of events."""
        out: dict[str, Any] = {
            "cost_usd": round(self.cost_usd, 6),
            "tokens": {kind: getattr(self, kind) for kind in TOKEN_KINDS},
        }
        if not self.priced:
            out["unpriced"] = True
        hosts = self.by_host()
        if hosts:
            out["hosts"] = {name: dict(own) for name, own in hosts.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> RunSpending:
        if not data:
            return cls()
        tokens = data.get("tokens") or {}
        hosts = data.get("hosts") or {}
        return cls(
            cost_usd=float(data.get("cost_usd") or 0.0),
            priced=not data.get("unpriced", False),
            hosts={str(name): dict(own) for name, own in hosts.items()},
            **{kind: int(tokens.get(kind) or 0) for kind in TOKEN_KINDS},
        )


def format_cost(cost_usd: float) -> str:
    """`$0.0123` below a dollar (four places: an action often costs cents), `$12.34` above."""
    return f"${cost_usd:.4f}" if cost_usd < 1 else f"${cost_usd:.2f}"


def format_tokens(tokens: int) -> str:
    """`950 tokens`, `12.3k tokens`, `4.1M tokens`."""
    if tokens < 1000:
        return f"{tokens} tokens"
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k tokens"
    return f"{tokens / 1_000_000:.1f}M tokens"
