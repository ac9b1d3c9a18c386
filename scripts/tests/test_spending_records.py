"""What a run spent, as counted and as shown (found by the mutation check of
engine/spending.py, docs/testing.md "Mutation check": the CLI tests mask costs and token
counts with `normalize`, so nothing checked these numbers' shapes or sums)."""

from __future__ import annotations

import pytest

from little_loops.cli.spending_text import spending_line, spent_text
from little_loops.fsm.engine.spending import RunSpending, format_cost, format_tokens


def test_every_kind_of_token_counts_in_the_total() -> None:
    spent = RunSpending(input=1, output=20, cache_read=300, cache_creation=4000)
    assert spent.tokens == 4321
    assert spending_line(spent.to_dict()) == (
        "Spent: $0.0000 (4.3k tokens: 1 in, 20 out, 300 cache read, 4000 cache write)"
    )


def test_a_call_counts_only_the_kinds_it_reports() -> None:
    spent = RunSpending()
    spent.add(0.1234567, {"input": 5})
    spent.add(None, {})  # no cost and no tokens: still priced
    assert spent.to_dict() == {
        "cost_usd": 0.123457,
        "tokens": {"input": 5, "output": 0, "cache_read": 0, "cache_creation": 0},
    }


@pytest.mark.parametrize(
    ("saved", "line", "text"),
    [
        ({"cost_usd": 0, "tokens": {}}, None, ""),
        (
            {"cost_usd": 0, "tokens": {"input": 1}},
            "Spent: $0.0000 (1 tokens: 1 in)",
            ", $0.0000, 1 tokens",
        ),
        (
            {"cost_usd": 0, "tokens": {"input": 7}},
            "Spent: $0.0000 (7 tokens: 7 in)",
            ", $0.0000, 7 tokens",
        ),
        ({"cost_usd": 0.5, "tokens": {}}, "Spent: $0.5000 (0 tokens: )", ", $0.5000, 0 tokens"),
        (None, None, ""),
    ],
)
def test_nothing_spent_shows_nothing_and_cost_or_tokens_alone_show(
    saved: dict[str, object] | None, line: str | None, text: str
) -> None:
    assert spending_line(saved) == line
    assert spent_text(saved) == text


def test_a_saved_record_without_a_cost_reads_as_nothing_spent() -> None:
    assert RunSpending.from_dict({"cost_usd": None, "tokens": {"output": 3}}).cost_usd == 0.0
    assert RunSpending.from_dict({"tokens": None}) == RunSpending()


@pytest.mark.parametrize(
    ("tokens", "shown"),
    [
        (999, "999 tokens"),
        (1000, "1.0k tokens"),
        (12_345, "12.3k tokens"),
        (999_949, "999.9k tokens"),
        (1_000_000, "1.0M tokens"),
        (1_050_000, "1.1M tokens"),
        (4_100_000, "4.1M tokens"),
    ],
)
def test_token_counts_read_as_a_person_says_them(tokens: int, shown: str) -> None:
    assert format_tokens(tokens) == shown


@pytest.mark.parametrize(
    ("cost", "shown"),
    [(0.0123, "$0.0123"), (0.99994, "$0.9999"), (1.0, "$1.00"), (12.5, "$12.50")],
)
def test_costs_below_a_dollar_show_four_places_above_two(cost: float, shown: str) -> None:
    assert format_cost(cost) == shown
