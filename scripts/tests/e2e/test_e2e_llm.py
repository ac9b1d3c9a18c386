"""`llm_structured` judging a slash command's result; claude and the SDK share the fake API.

The `ll-loop` process runs the real `claude` for the action and then asks the model for a
verdict through the Anthropic SDK, which honours `ANTHROPIC_BASE_URL` as claude does.
"""

from __future__ import annotations

from typing import Any

import pytest
from api_script import ApiScript, Rule, user_text
from e2e_project import E2EProject
from fake_anthropic import FakeAnthropicServer
from fixtures.cli_support import normalize

JUDGED_LOOP = """\
name: judged
initial: work
max_iterations: 3
states:
  work:
    action: /work the parser
    evaluate:
      type: llm_structured
    on_success: done
    on_failure: work
  done:
    terminal: true
"""
CLAUDE_SAYS = "All 12 tests pass."
JUDGE_PROMPT = (
    "Evaluate whether this action succeeded based on its output.\n\n"
    f"<action_output>\n{CLAUDE_SAYS}\n\n</action_output>"
)
RUN_HEADER = "Running loop: judged\nMax iterations: 3\n\n[1/3] work -> /work the parser\n"


def _judged_run(project: E2EProject, script: ApiScript, judge: Rule) -> tuple[int, str, str]:
    script.rules = [judge, Rule("Please work on: the parser", text=CLAUDE_SAYS)]
    project.write_command("work", "Please work on: $ARGUMENTS\n")
    project.write_loop("judged", JUDGED_LOOP)
    done = project.ll_loop("run", "judged")
    return done.returncode, normalize(done.stdout), normalize(done.stderr)


def test_llm_verdict_on_a_slash_command(
    project: E2EProject, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    answer = {"verdict": "success", "confidence": 0.9, "reason": "all tests pass"}
    judge = Rule("Evaluate whether", tool=("evaluate", answer))
    assert _judged_run(project, script, judge) == (
        0,
        RUN_HEADER + "       ✓ success (confidence: 0.9)\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns, $C, N tokens)\n",
        "",
    )
    claude_request, judge_request = fake_api.messages_requests()
    assert claude_request.headers["x-app"] == "cli"
    assert claude_request.body["stream"] is True
    assert user_text(judge_request) == JUDGE_PROMPT
    assert judge_request.body["tool_choice"] == {"type": "tool", "name": "evaluate"}
    assert "stream" not in judge_request.body


@pytest.mark.parametrize(
    ("judge", "error"),
    [
        (
            Rule(
                "Evaluate whether",
                tool=("evaluate", {"verdict": "success", "confidence": "high", "reason": "ok"}),
            ),
            "LLM returned a non-numeric confidence: 'high'",
        ),
        (Rule("Evaluate whether", text="Looks fine to me."), "No evaluation in LLM response"),
    ],
    ids=["non-numeric-confidence", "no-tool-call"],
)
def test_malformed_llm_reply_is_an_error_verdict(
    project: E2EProject, script: ApiScript, judge: Rule, error: str
) -> None:
    assert _judged_run(project, script, judge) == (
        1,
        RUN_HEADER + f"       ✗ error - {error}\n\n",
        f"Loop failed: work (1 iteration, Ns, $C, N tokens) - {error}\n",
    )
    evaluate: dict[str, Any] = next(
        event for event in project.events("judged") if event["event"] == "evaluate"
    )
    assert (evaluate["verdict"], evaluate["error"]) == ("error", error)
