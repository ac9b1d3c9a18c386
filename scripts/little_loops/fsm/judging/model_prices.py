"""What an LLM evaluation cost, from the usage the SDK reports and the model's list price.

Prices are US dollars per million tokens (Anthropic's published list prices). Cache reads
cost a tenth of the input price and cache writes a quarter more. A model not listed here
is not priced: its tokens still count, and the run's spending says some were not priced.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MODEL_PRICES", "cost_of", "usage_tokens"]

# (substring of the model id, input $/MTok, output $/MTok); the first match wins, so the
# more specific names come first.
MODEL_PRICES: tuple[tuple[str, float, float], ...] = (
    ("opus-4-5", 5.0, 25.0),
    ("opus-4-6", 5.0, 25.0),
    ("opus", 15.0, 75.0),
    ("sonnet", 3.0, 15.0),
    ("haiku-4", 1.0, 5.0),
    ("3-5-haiku", 0.8, 4.0),
    ("haiku-3-5", 0.8, 4.0),
    ("haiku", 0.25, 1.25),
)
CACHE_READ_FACTOR = 0.1
CACHE_WRITE_FACTOR = 1.25


def usage_tokens(usage: Any) -> dict[str, int]:
    """Tokens by kind from an SDK `usage` object (or mapping); zeros for what is missing."""

    def read(name: str) -> int:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return {
        "input": read("input_tokens"),
        "output": read("output_tokens"),
        "cache_read": read("cache_read_input_tokens"),
        "cache_creation": read("cache_creation_input_tokens"),
    }


def cost_of(model: str, tokens: Mapping[str, int]) -> float | None:
    """The list price of `tokens` on `model`; None when the model is not priced."""
    for name, input_price, output_price in MODEL_PRICES:
        if name in model:
            dollars = (
                tokens.get("input", 0) * input_price
                + tokens.get("output", 0) * output_price
                + tokens.get("cache_read", 0) * input_price * CACHE_READ_FACTOR
                + tokens.get("cache_creation", 0) * input_price * CACHE_WRITE_FACTOR
            )
            return dollars / 1_000_000
    return None
