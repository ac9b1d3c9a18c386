"""HEAD's LLM judge (spec/ll-head-dialect.md §3.2 "LLM judge, HEAD default schema", §2.2
`model`), asked through the real Anthropic SDK of a fake API on 127.0.0.1, for prompt
actions run by a fake `claude` on PATH and for `llm_structured` evaluations."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic  # noqa: F401  # in the dev extra: a missing SDK fails here, never skips
import pytest
from fake_anthropic import FakeAnthropicServer, Reply, tool_use_message

from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.judging.head_llm_judge import HEAD_EVIDENCE_INSTRUCTION, HEAD_LLM_SCHEMA
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.schema import FSMLoop

DONE = {"terminal": True}
ROUTES = {
    "yes": "passed",
    "no": "failed_check",
    "error": "broken",
    "blocked": "stuck",
    "partial": "halfway",
    "cannot_judge": "unsure",
    "_": "other",
}
TERMINALS = {name: DONE for name in set(ROUTES.values())}


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append({k: v for k, v in event.items() if k != "ts"})

    def evaluations(self) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == "evaluate"]


@pytest.fixture
def fake_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    """The fake API, and a `claude` on PATH that prints the file `said` as its answer."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text(f"#!/bin/bash\ncat {tmp_path}/said\n")
    claude.chmod(0o755)
    (tmp_path / "said").write_text("All 12 tests passed.\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with FakeAnthropicServer() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server


def answer(server: FakeAnthropicServer, **tool_input: Any) -> None:
    server.replies.append(Reply(tool_use_message(tool_input)))


def run(
    state: dict[str, Any], *, head: bool = True, **top: Any
) -> tuple[ExecutionResult, Recorder]:
    data = {"name": "demo", "initial": "check", "states": {"check": state, **TERMINALS}, **top}
    loop = HeadLoop.from_dict(data) if head else FSMLoop.from_dict(data)
    recorder = Recorder()
    return FSMExecutor(loop, event_callback=recorder).run(), recorder


PROMPT_STATE = {"action": "Run the tests", "action_type": "prompt", "route": ROUTES}


def test_s3_2_a_prompt_state_is_judged_with_heads_schema_prompt_and_its_model(
    fake_api: FakeAnthropicServer,
) -> None:
    answer(fake_api, verdict="yes", confidence=0.9, reason="ok", evidence="All 12 tests passed.")
    result, events = run({**PROMPT_STATE, "model": "claude-haiku-4-5"})
    body = fake_api.requests[0].body
    assert body["model"] == "claude-haiku-4-5"
    assert body["tools"][0]["input_schema"] == HEAD_LLM_SCHEMA
    assert body["tools"][0]["input_schema"]["properties"]["verdict"]["enum"] == [
        "yes",
        "no",
        "blocked",
        "partial",
        "cannot_judge",
    ]
    assert body["tools"][0]["input_schema"]["required"] == [
        "verdict",
        "confidence",
        "reason",
        "evidence",
    ]
    assert body["messages"][0]["content"] == (
        "Evaluate whether this action succeeded based on its output.\n\n"
        f"{HEAD_EVIDENCE_INSTRUCTION}\n\n"
        "<action_output>\nAll 12 tests passed.\n\n</action_output>"
    )
    assert events.evaluations() == [
        {
            "event": "evaluate",
            "type": "default",
            "verdict": "yes",
            "confidence": 0.9,
            "confident": True,
            "reason": "ok",
            "raw": {
                "verdict": "yes",
                "confidence": 0.9,
                "reason": "ok",
                "evidence": "All 12 tests passed.",
            },
            "evidence": "All 12 tests passed.",
        }
    ]
    assert result.final_state == "passed"


def test_s3_2_the_instruction_asks_for_verbatim_evidence_and_no_guessing() -> None:
    assert HEAD_EVIDENCE_INSTRUCTION == (
        "For a yes, no or partial verdict, put in `evidence` a verbatim quote from the "
        "output that supports it. If the output does not let you tell, answer cannot_judge "
        "instead of guessing."
    )


def test_s3_2_the_evaluate_prompt_leads_and_only_the_last_4000_characters_are_judged(
    fake_api: FakeAnthropicServer, tmp_path: Path
) -> None:
    (tmp_path / "said").write_text("x" * 5000 + "END\n")
    answer(fake_api, verdict="no", confidence=0.8, reason="r", evidence="END")
    state = {**PROMPT_STATE, "evaluate": {"type": "llm_structured", "prompt": "Did it end?"}}
    _, events = run(state)
    content = fake_api.requests[0].body["messages"][0]["content"]
    assert content.startswith(f"Did it end?\n\n{HEAD_EVIDENCE_INSTRUCTION}\n\n<action_output>\n")
    judged = content.split("<action_output>\n")[1].removesuffix("\n</action_output>")
    assert len(judged) == 4000
    assert judged.endswith("END\n")
    assert events.evaluations()[0]["verdict"] == "no"


@pytest.mark.parametrize(
    ("tool_input", "verdict", "coerced"),
    [
        ({"verdict": "yes", "confidence": 0.9, "reason": "r", "evidence": "  "}, "no", True),
        ({"verdict": "partial", "confidence": 0.9, "reason": "r"}, "no", True),
        ({"verdict": "blocked", "confidence": 0.9, "reason": "r", "evidence": ""}, "no", True),
        (
            {"verdict": "cannot_judge", "confidence": 0.9, "reason": "r", "evidence": ""},
            "cannot_judge",
            False,
        ),
        (
            {"verdict": "blocked", "confidence": 0.9, "reason": "r", "evidence": "need key"},
            "blocked",
            False,
        ),
    ],
)
def test_s3_2_a_verdict_without_evidence_is_no(
    fake_api: FakeAnthropicServer, tool_input: dict[str, Any], verdict: str, coerced: bool
) -> None:
    fake_api.replies.append(Reply(tool_use_message(tool_input)))
    _, events = run(PROMPT_STATE)
    evaluation = events.evaluations()[0]
    assert evaluation["verdict"] == verdict
    assert evaluation.get("evidence_coerced", False) is coerced


def test_s3_2_a_verdict_outside_the_enum_is_an_error(fake_api: FakeAnthropicServer) -> None:
    answer(fake_api, verdict="success", confidence=0.9, reason="r", evidence="x")
    result, events = run(PROMPT_STATE)
    evaluation = events.evaluations()[0]
    assert evaluation["verdict"] == "error"
    assert evaluation["error"] == (
        "LLM verdict 'success' is not one of yes, no, blocked, partial, cannot_judge"
    )
    assert result.final_state == "broken"


@pytest.mark.parametrize(
    ("tool_input", "verdict"),
    [
        ({"verdict": "yes", "confidence": 0.3, "reason": "r", "evidence": "q"}, "yes_uncertain"),
        ({"verdict": "yes", "confidence": 0.3, "reason": "r", "evidence": ""}, "no_uncertain"),
        (
            {"verdict": "cannot_judge", "confidence": 0.2, "reason": "r", "evidence": ""},
            "cannot_judge_uncertain",
        ),
        ({"verdict": "yes", "confidence": 0.7, "reason": "r", "evidence": "q"}, "yes"),
    ],
)
def test_s3_2_uncertain_suffix_applies_after_the_evidence_rule(
    fake_api: FakeAnthropicServer, tool_input: dict[str, Any], verdict: str
) -> None:
    fake_api.replies.append(Reply(tool_use_message(tool_input)))
    evaluate = {"type": "llm_structured", "uncertain_suffix": True, "min_confidence": 0.6}
    _, events = run({**PROMPT_STATE, "evaluate": evaluate})
    assert events.evaluations()[0]["verdict"] == verdict


def test_s3_2_a_custom_schema_skips_the_enum_and_evidence_rules(
    fake_api: FakeAnthropicServer,
) -> None:
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["verdict"],
    }
    answer(fake_api, verdict="ship", confidence=0.9)
    evaluate = {"type": "llm_structured", "prompt": "Ready?", "schema": schema}
    result, events = run(
        {**PROMPT_STATE, "route": {"ship": "passed", "_": "other"}, "evaluate": evaluate}
    )
    body = fake_api.requests[0].body
    assert body["tools"][0]["input_schema"] == schema
    assert body["messages"][0]["content"].startswith("Ready?\n\n<action_output>")
    assert events.evaluations()[0]["verdict"] == "ship"
    assert "evidence_coerced" not in events.evaluations()[0]
    assert result.final_state == "passed"


def test_s2_2_state_model_is_the_model_of_an_llm_structured_evaluation_of_a_shell_state(
    fake_api: FakeAnthropicServer,
) -> None:
    answer(fake_api, verdict="yes", confidence=0.9, reason="r", evidence="done")
    state = {
        "action": "echo done",
        "model": "claude-opus-4-1",
        "evaluate": {"type": "llm_structured"},
        "route": ROUTES,
    }
    _, events = run(state, llm={"model": "claude-sonnet-4-20250514"})
    assert fake_api.requests[0].body["model"] == "claude-opus-4-1"
    assert events.evaluations()[0]["verdict"] == "yes"


def test_s3_2_without_a_state_model_the_loops_llm_model_judges(
    fake_api: FakeAnthropicServer,
) -> None:
    answer(fake_api, verdict="yes", confidence=0.9, reason="r", evidence="done")
    run(PROMPT_STATE, llm={"model": "claude-loop-model"})
    assert fake_api.requests[0].body["model"] == "claude-loop-model"


def test_s3_2_with_the_llm_off_a_prompt_state_is_judged_by_its_exit_code(
    fake_api: FakeAnthropicServer,
) -> None:
    result, events = run(PROMPT_STATE, llm={"enabled": False})
    assert fake_api.requests == []
    assert events.evaluations() == [
        {"event": "evaluate", "type": "default", "verdict": "yes", "exit_code": 0}
    ]
    assert result.final_state == "passed"


def test_s3_2_a_legacy_slash_command_keeps_the_legacy_judge(
    fake_api: FakeAnthropicServer,
) -> None:
    answer(fake_api, verdict="success", confidence=0.9, reason="ok")
    state = {"action": "/run-tests", "route": {"success": "passed", "_": "other"}}
    result, events = run(state, head=False)
    schema = fake_api.requests[0].body["tools"][0]["input_schema"]
    assert schema["properties"]["verdict"]["enum"] == ["success", "failure", "blocked", "partial"]
    assert events.evaluations()[0]["verdict"] == "success"
    assert result.final_state == "passed"
