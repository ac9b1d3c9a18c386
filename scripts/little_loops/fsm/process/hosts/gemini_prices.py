"""What a Gemini CLI run cost, from the tokens it reports and the model's list price.

Gemini CLI reports tokens but no cost, so the cost comes from this table: Google's
published paid-tier list prices for the Gemini API, US dollars per million tokens, for
prompts up to 200k tokens (longer prompts cost more on the Pro models; this table does
not know the prompt length of each request and prices them all at the lower rate).
Thinking tokens are billed as output but `stream-json` does not report them, so a thinking
model's cost is a lower bound. A model not listed is not priced: its tokens still count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["GEMINI_PRICES", "cost_of_stats", "cost_of_tokens"]

# (prefix of the model id, input, output, cached input) in $/MTok; the first match wins,
# so the more specific names come first.
GEMINI_PRICES: tuple[tuple[str, float, float, float], ...] = (
    ("gemini-3-pro", 2.00, 12.00, 0.20),
    ("gemini-2.5-pro", 1.25, 10.00, 0.31),
    ("gemini-2.5-flash-lite", 0.10, 0.40, 0.025),
    ("gemini-2.5-flash", 0.30, 2.50, 0.075),
    ("gemini-2.0-flash-lite", 0.075, 0.30, 0.01875),
    ("gemini-2.0-flash", 0.10, 0.40, 0.025),
)


def cost_of_tokens(model: str, *, uncached: int, cached: int, output: int) -> float | None:
    """The list price of these tokens on `model`; None when the model is not priced."""
    name = model.removeprefix("models/")
    for prefix, input_price, output_price, cached_price in GEMINI_PRICES:
        if name.startswith(prefix):
            dollars = uncached * input_price + cached * cached_price + output * output_price
            return dollars / 1_000_000
    return None


def cost_of_stats(stats: Mapping[str, Any], model: str | None) -> float | None:
    """The cost of one invocation's `result.stats`: per model when it lists them (the
    `auto` model routes between several), else all of it on `model`. None when a model
    that used tokens is not priced."""
    models = stats.get("models")
    if isinstance(models, Mapping) and models:
        total = 0.0
        for name, used in models.items():
            cost = _cost_of_usage(str(name), used)
            if cost is None:
                return None
            total += cost
        return total
    return _cost_of_usage(model, stats) if model else None


def _cost_of_usage(model: str, used: Any) -> float | None:
    if not isinstance(used, Mapping):
        return None
    cached = _count(used.get("cached"))
    uncached = (
        _count(used["input"])
        if "input" in used
        else max(_count(used.get("input_tokens")) - cached, 0)
    )
    output = _count(used.get("output_tokens"))
    if not any((cached, uncached, output)):
        return 0.0
    return cost_of_tokens(model, uncached=uncached, cached=cached, output=output)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
