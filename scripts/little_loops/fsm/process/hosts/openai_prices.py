"""What a run on an OpenAI model cost, from its tokens and the model's list price.

Codex reports tokens but no cost; this table prices them the way `judging/model_prices.py`
prices Claude's (that module sits above the process layer, so this one stands beside the
adapters). US dollars per million tokens, OpenAI's published list prices; cached input has
its own price. A model not listed is not priced: its tokens still count.
"""

from __future__ import annotations

__all__ = ["OPENAI_PRICES", "openai_cost"]

# (prefix of the model id, input, cached input, output) $/MTok; the first match wins, so
# the more specific names come first.
OPENAI_PRICES: tuple[tuple[str, float, float, float], ...] = (
    ("gpt-5-nano", 0.05, 0.005, 0.40),
    ("gpt-5-mini", 0.25, 0.025, 2.00),
    ("gpt-5", 1.25, 0.125, 10.00),  # gpt-5, gpt-5-codex, gpt-5.1, gpt-5.1-codex
    ("codex-mini", 1.50, 0.375, 6.00),
    ("gpt-4.1-nano", 0.10, 0.025, 0.40),
    ("gpt-4.1-mini", 0.40, 0.10, 1.60),
    ("gpt-4.1", 2.00, 0.50, 8.00),
    ("gpt-4o-mini", 0.15, 0.075, 0.60),
    ("gpt-4o", 2.50, 1.25, 10.00),
    ("o4-mini", 1.10, 0.275, 4.40),
    ("o3", 2.00, 0.50, 8.00),
)


def openai_cost(model: str, *, uncached_input: int, cached_input: int, output: int) -> float | None:
    """The list price of a run's tokens on `model`; None when the model is not priced.

    `output` includes reasoning tokens (OpenAI bills them as output)."""
    for prefix, input_price, cached_price, output_price in OPENAI_PRICES:
        if model.startswith(prefix):
            dollars = (
                uncached_input * input_price + cached_input * cached_price + output * output_price
            )
            return dollars / 1_000_000
    return None
