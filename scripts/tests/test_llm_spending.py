"""What LLM evaluations cost (issue 13 item 5): the SDK's usage, priced by model, counted
in the run's spending without changing what the evaluator returns."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic  # noqa: F401  # in the dev extra: a missing SDK fails here, never skips
import pytest
from fake_anthropic import FakeAnthropicServer, Reply, message, tool_use_message

from little_loops.fsm.evaluators import EvaluationResult, evaluate_llm_structured
from little_loops.fsm.judging.model_prices import cost_of, usage_tokens

GOOD = {"verdict": "success", "confidence": 0.9, "reason": "fine"}


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server


def test_sonnet_is_priced_at_list_price() -> None:
    tokens = {"input": 1_000_000, "output": 100_000, "cache_read": 1_000_000, "cache_creation": 0}
    assert cost_of("claude-sonnet-4-20250514", tokens) == pytest.approx(3.0 + 1.5 + 0.3)
    assert cost_of("claude-opus-4-1-20250805", {"output": 1_000_000}) == pytest.approx(75.0)
    assert cost_of("claude-haiku-4-5", {"input": 1_000_000}) == pytest.approx(1.0)
    assert cost_of("some-other-model", {"input": 5}) is None


def test_usage_tokens_reads_mappings_and_objects() -> None:
    usage = {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": None}
    assert usage_tokens(usage) == {"input": 7, "output": 3, "cache_read": 0, "cache_creation": 0}


def test_an_evaluation_reports_its_spending_and_still_compares_as_before(
    fake_api: FakeAnthropicServer,
) -> None:
    body = tool_use_message(GOOD)
    body["model"] = "claude-sonnet-4-20250514"
    body["usage"] = {"input_tokens": 1000, "output_tokens": 200}
    fake_api.replies.append(Reply(body))
    result = evaluate_llm_structured("3 passed", timeout=5)
    assert result == EvaluationResult(
        "success", {"confidence": 0.9, "confident": True, "reason": "fine", "raw": GOOD}
    )
    assert result.spending == {
        "cost_usd": pytest.approx(0.003 + 0.003),
        "tokens": {"input": 1000, "output": 200, "cache_read": 0, "cache_creation": 0},
    }


def test_an_unpriced_model_counts_tokens_only(fake_api: FakeAnthropicServer) -> None:
    fake_api.replies.append(Reply(message([{"type": "text", "text": "no tool"}])))
    result = evaluate_llm_structured("x", timeout=5)
    assert result.verdict == "error"
    assert result.spending is not None
    assert result.spending["cost_usd"] is None
    assert result.spending["tokens"]["input"] == 10
