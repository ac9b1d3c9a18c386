"""Slash commands read through claude's stream-json, with the real Claude Code CLI.

What claude reports (cost, tokens, turns, session) lands in `ActionResult.claude`; the
output is the final text; only what the agent says is scanned for signals; `--resume`
continues the earlier conversation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from api_script import ApiScript, Rule
from e2e_project import E2EProject
from fake_anthropic import FakeAnthropicServer
from fixtures.cli_support import normalize

from little_loops.fsm.process.runner import ActionResult, DefaultActionRunner

ANSWER = "All done.\nThe parser works."
LOOP = """\
name: {name}
initial: work
max_iterations: 3
states:
  work:
    action: /work the parser
    evaluate:
      type: exit_code
    on_success: done
    on_failure: done
  done:
    terminal: true
"""


@pytest.fixture
def runner(project: E2EProject, monkeypatch: pytest.MonkeyPatch) -> DefaultActionRunner:
    """A runner in the project, its claude talking to the fake API (the test's environment)."""
    project.write_command("work", "Please work on: $ARGUMENTS\n")
    for key, value in project.env().items():
        monkeypatch.setenv(key, value)
    return DefaultActionRunner(cwd=project.root)


def run_work(runner: DefaultActionRunner, log: Path, **options: str) -> ActionResult:
    return runner.run("/work the parser", 60, True, log_path=log, **options)


def test_the_run_is_reported_and_the_output_is_the_final_text(
    project: E2EProject, script: ApiScript, runner: DefaultActionRunner
) -> None:
    script.rules = [Rule("Please work on", text=ANSWER)]
    log = project.root / "logs" / "1-work.log"
    shown: list[str] = []
    result = runner.run("/work the parser", 60, True, log_path=log, on_line=shown.append)
    assert (result.exit_code, result.error, result.output) == (0, None, ANSWER + "\n")
    assert shown == ANSWER.splitlines()
    claude = result.claude
    assert claude is not None
    # The fake API reports 10 input and 5 output tokens per answer.
    assert (claude.input_tokens, claude.output_tokens, claude.num_turns) == (10, 5, 1)
    assert claude.cost_usd is not None and claude.cost_usd > 0
    assert (claude.is_error, claude.api_error_status) == (False, None)
    # The log keeps claude's own lines; the session is the one claude announced first.
    first = json.loads(log.read_text().splitlines()[0])
    assert (first["type"], first["subtype"]) == ("system", "init")
    assert claude.session_id == first["session_id"]


def test_resume_continues_the_conversation(
    project: E2EProject,
    script: ApiScript,
    fake_api: FakeAnthropicServer,
    runner: DefaultActionRunner,
) -> None:
    script.rules = [
        Rule("continue where you left off", text="Carried on."),
        Rule("Please work on", text=ANSWER),
    ]
    first = run_work(runner, project.root / "1.log")
    assert first.claude is not None and first.claude.session_id is not None
    result = runner.run(
        "continue where you left off", 60, True, resume_session=first.claude.session_id
    )
    assert (result.exit_code, result.output) == (0, "Carried on.\n")
    assert result.claude is not None and result.claude.session_id == first.claude.session_id
    # The API saw the earlier turns: the first prompt and the first answer.
    messages = fake_api.messages_requests()[-1].body["messages"]
    said = [json.dumps(message["content"]) for message in messages]
    assert any("Please work on: the parser" in text for text in said)
    assert any(json.dumps(ANSWER)[1:-1] in text for text in said)


def test_a_handoff_in_a_file_the_agent_reads_does_not_fire(
    project: E2EProject, script: ApiScript
) -> None:
    (project.root / "notes.txt").write_text("remember\nCONTEXT_HANDOFF: x\n")
    script.rules = [Rule("Please work on", bash="cat notes.txt", closing="I read the notes.")]
    project.write_command("work", "Please work on: $ARGUMENTS\n")
    project.write_loop("reads", LOOP.format(name="reads"))
    done = project.ll_loop("run", "reads")
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "Running loop: reads\n"
        "Max iterations: 3\n"
        "\n"
        "[1/3] work -> /work the parser\n"
        "       ✓ success\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (1 iteration, Ns, $C, N tokens)\n",
        "",
    )
    # The action's log still holds the tool result, as claude printed it.
    completed = [e for e in project.events("reads") if e["event"] == "action_complete"]
    log = Path(completed[0]["log_path"])
    assert "CONTEXT_HANDOFF: x" in log.read_text()


def test_a_handoff_the_agent_says_fires(project: E2EProject, script: ApiScript) -> None:
    script.rules = [Rule("Please work on", text="Module A done.\nCONTEXT_HANDOFF: y")]
    project.write_command("work", "Please work on: $ARGUMENTS\n")
    project.write_loop("says", LOOP.format(name="says"))
    done = project.ll_loop("run", "says")
    assert done.returncode == 3
    state = project.state("says")
    assert (state["status"], state["continuation_prompt"]) == ("awaiting_continuation", "y")


def test_a_flag_claude_does_not_know_is_a_refusal(
    project: E2EProject, runner: DefaultActionRunner
) -> None:
    # A claude that does not understand our flags (here: one more it cannot know) refuses
    # on stderr; the state gets claude's own words.
    wrapper = project.root / "claude-wrapper"
    wrapper.write_text(f'#!/bin/sh\nexec "{project.claude_bin}" --bogus "$@"\n')
    wrapper.chmod(0o755)
    runner.claude_bin = str(wrapper)
    result = run_work(runner, project.root / "1.log")
    assert (result.exit_code, result.output) == (1, "")
    assert result.error == "claude exited with code 1: error: unknown option '--bogus'"
