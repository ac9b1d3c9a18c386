"""Context handoff through the real Claude Code CLI: pause and resume, spawn, continue.

The slash command `/work` is a project command file; the fake API's script makes the
first session hand off and the session that gets the continuation prompt finish.
"""

from __future__ import annotations

import pytest
from api_script import ApiScript, Rule, prompt_text
from e2e_project import E2EProject, wait_for_exit
from fake_anthropic import FakeAnthropicServer
from fixtures.cli_support import normalize

WORK_COMMAND = "Please work on: $ARGUMENTS\n"
CONTINUATION = "Continue with module B"
FIRST_PROMPT = "Please work on: the parser\n"
CONTINUED_PROMPT = f"Please work on: the parser\n\n{CONTINUATION}\n"

LOOP = """\
name: {name}
initial: work
max_iterations: 5{extra}
states:
  work:
    action: /work the parser
    evaluate:
      type: output_contains
      pattern: Module B finished
    on_success: done
    on_failure: work
  done:
    terminal: true
"""
HANDS_OFF_ONCE = [
    Rule(CONTINUATION, text="Module B finished."),
    Rule(FIRST_PROMPT, text=f"Module A done.\nCONTEXT_HANDOFF: {CONTINUATION}"),
]


@pytest.fixture
def work_command(project: E2EProject) -> None:
    project.write_command("work", WORK_COMMAND)


@pytest.mark.usefixtures("work_command")
def test_pause_then_resume(
    project: E2EProject, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    script.rules = HANDS_OFF_ONCE
    project.write_loop("paused", LOOP.format(name="paused", extra=""))

    paused = project.ll_loop("run", "paused")
    assert (paused.returncode, normalize(paused.stdout), paused.stderr) == (
        3,
        "Running loop: paused\n"
        "Max iterations: 5\n"
        "\n"
        "[1/5] work -> /work the parser\n"
        "       ✗ failure\n"
        f"       handoff: {CONTINUATION}\n"
        "\n"
        "Loop paused for handoff: work (1 iteration, Ns, $C, N tokens)\n"
        f"Continuation: {CONTINUATION}\n"
        "Resume with: ll-loop resume paused\n",
        "",
    )
    state = project.state("paused")
    assert (state["status"], state["continuation_prompt"]) == (
        "awaiting_continuation",
        CONTINUATION,
    )

    resumed = project.ll_loop("resume", "paused")
    assert (resumed.returncode, normalize(resumed.stdout), resumed.stderr) == (
        0,
        "Resuming loop 'paused' from state 'work' (iteration 1)\n"
        f"Continuation context: {CONTINUATION}\n"
        "Max iterations: 5\n"
        "\n"
        f"[2/5] work -> /work the parser {CONTINUATION}\n"
        "       ✓ success\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (2 iterations, Ns, $C, N tokens)\n",
        "",
    )
    assert project.state("paused")["status"] == "completed"
    # The continuation prompt reached the resumed session through $ARGUMENTS.
    prompts = [prompt_text(request) for request in fake_api.messages_requests()]
    assert prompts == [FIRST_PROMPT, CONTINUED_PROMPT]


SPAWN_PROMPT = f"Continue loop execution. Run: ll-loop resume spawned\n\n{CONTINUATION}"


@pytest.mark.usefixtures("work_command")
def test_spawned_session_resumes_the_loop(
    project: E2EProject, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    script.rules = [
        # The spawned session is told to resume; the model does it with the Bash tool.
        Rule("Run: ll-loop resume spawned", bash="ll-loop resume spawned", closing="Resumed."),
        *HANDS_OFF_ONCE,
    ]
    project.write_loop("spawned", LOOP.format(name="spawned", extra="\non_handoff: spawn"))

    handed_off = project.ll_loop("run", "spawned")
    assert (handed_off.returncode, normalize(handed_off.stdout), handed_off.stderr) == (
        3,
        "Running loop: spawned\n"
        "Max iterations: 5\n"
        "\n"
        "[1/5] work -> /work the parser\n"
        "       ✗ failure\n"
        f"       handoff: {CONTINUATION}\n"
        "\n"
        "Loop handed off to a new Claude session: work (1 iteration, Ns, $C, N tokens)\n"
        f"Continuation: {CONTINUATION}\n"
        "Session log: .loops/.running/spawned.handoff.log\n"
        "Follow with: ll-loop status spawned\n",
        "",
    )
    [spawned] = [
        event for event in project.events("spawned") if event["event"] == "handoff_spawned"
    ]
    wait_for_exit(spawned["pid"])

    assert project.state("spawned")["status"] == "completed"
    assert project.running_file("spawned.handoff.log").read_text() == "Resumed.\n"
    requests = fake_api.messages_requests()
    prompts = [prompt_text(request) for request in requests[:3]]
    assert prompts == [FIRST_PROMPT, SPAWN_PROMPT, CONTINUED_PROMPT]
    # What `ll-loop resume` printed came back to the spawned session as the tool result.
    [result] = [
        b for b in requests[3].body["messages"][-1]["content"] if b["type"] == "tool_result"
    ]
    assert normalize(result["content"]) == (
        "Resuming loop 'spawned' from state 'work' (iteration 1)\n"
        f"Continuation context: {CONTINUATION}\n"
        "Max iterations: 5\n"
        "\n"
        f"[2/5] work -> /work the parser {CONTINUATION}\n"
        "       ✓ success\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (2 iterations, Ns, $C, N tokens)"
    )
    assert len(requests) == 4


@pytest.mark.usefixtures("work_command")
def test_continue_through_two_handoffs(
    project: E2EProject, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    script.rules = [
        Rule("Continue with part 3", text="Module B finished."),
        Rule("Continue with part 2", text="Part 2 done.\nCONTEXT_HANDOFF: Continue with part 3"),
        Rule(FIRST_PROMPT, text="Part 1 done.\nCONTEXT_HANDOFF: Continue with part 2"),
    ]
    project.write_loop("continued", LOOP.format(name="continued", extra="\non_handoff: continue"))

    done = project.ll_loop("run", "continued")
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "Running loop: continued\n"
        "Max iterations: 5\n"
        "\n"
        "[1/5] work -> /work the parser\n"
        "       ✗ failure\n"
        "       handoff: Continue with part 2\n"
        "       continuing in a fresh process (continuation 1)\n"
        "[2/5] work -> /work the parser Continue with part 2\n"
        "       ✗ failure\n"
        "       handoff: Continue with part 3\n"
        "       continuing in a fresh process (continuation 2)\n"
        "[3/5] work -> /work the parser Continue with part 3\n"
        "       ✓ success\n"
        "       -> done (Ns, $C)\n"
        "\n"
        "Loop completed: done (3 iterations, Ns, $C, N tokens)\n",
        "",
    )
    state = project.state("continued")
    assert (state["status"], state["handoff_count"]) == ("completed", 2)
    continued = [e for e in project.events("continued") if e["event"] == "handoff_continued"]
    assert [(e["count"], e["continuation"]) for e in continued] == [
        (1, "Continue with part 2"),
        (2, "Continue with part 3"),
    ]
    # Each continuation is a fresh claude session that gets the latest prompt.
    assert [prompt_text(request) for request in fake_api.messages_requests()] == [
        FIRST_PROMPT,
        "Please work on: the parser\n\nContinue with part 2\n",
        "Please work on: the parser\n\nContinue with part 3\n",
    ]
