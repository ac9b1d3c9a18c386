"""The real Claude Code CLI on the Temporal engine: a slash command runs in the
`ll-loop.run_action` activity of a real `ll-loop worker` (dev server), its stream-json
output is read there, and a `CONTEXT_HANDOFF:` seen in it pauses the workflow, or starts
the continuation session on the host (`on_handoff: spawn`), as on the local engine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from api_script import ApiScript, Rule, prompt_text
from e2e_project import E2EProject
from fake_anthropic import FakeAnthropicServer
from fixtures.cli_support import normalize
from fixtures.processes import processes_with
from fixtures.temporal_servers import DevServer
from fixtures.temporal_workers import Worker, wait_until
from test_e2e_handoff import (
    CONTINUATION,
    CONTINUED_PROMPT,
    FIRST_PROMPT,
    HANDS_OFF_ONCE,
    LOOP,
    WORK_COMMAND,
)


@pytest.fixture
def on_temporal(project: E2EProject, temporal_dev_server: DevServer) -> Iterator[dict[str, str]]:
    """The environment of `ll-loop` on the Temporal engine, with a worker running in the
    project (whose spawned claude sessions and their `ll-loop` reach the server too)."""
    project.write_command("work", WORK_COMMAND)
    env = {**project.env(), **temporal_dev_server.env(), "LL_ENGINE": "temporal"}
    worker = Worker(project.root, env)
    try:
        yield env
    finally:
        worker.stop()


def test_a_handoff_from_claude_pauses_the_workflow_and_resume_continues_it(
    project: E2EProject,
    script: ApiScript,
    fake_api: FakeAnthropicServer,
    on_temporal: dict[str, str],
) -> None:
    script.rules = HANDS_OFF_ONCE
    project.write_loop("paused", LOOP.format(name="paused", extra=""))

    paused = project.ll_loop("run", "paused", env=on_temporal)
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
    # claude's raw stream stays in the action's log on the host.
    log = project.running_file("paused.logs/1-work.log").read_text(encoding="utf-8")
    assert '"type":"result"' in log.replace(" ", "")

    resumed = project.ll_loop("resume", "paused", env=on_temporal)
    assert resumed.returncode == 0, resumed.stderr
    assert "Loop completed: done (2 iterations" in resumed.stdout
    prompts = [prompt_text(request) for request in fake_api.messages_requests()]
    assert prompts == [FIRST_PROMPT, CONTINUED_PROMPT]


SPAWN_PROMPT = f"Continue loop execution. Run: ll-loop resume spawned\n\n{CONTINUATION}"


def test_a_spawned_session_on_the_host_resumes_the_workflow(
    project: E2EProject,
    script: ApiScript,
    fake_api: FakeAnthropicServer,
    on_temporal: dict[str, str],
) -> None:
    script.rules = [
        Rule("Run: ll-loop resume spawned", bash="ll-loop resume spawned", closing="Resumed."),
        *HANDS_OFF_ONCE,
    ]
    project.write_loop("spawned", LOOP.format(name="spawned", extra="\non_handoff: spawn"))

    handed_off = project.ll_loop("run", "spawned", env=on_temporal)
    assert handed_off.returncode == 3, handed_off.stderr
    assert "Loop handed off to a new Claude session: work (1 iteration" in handed_off.stdout

    def completed() -> bool:
        status = project.ll_loop("status", "spawned", "--json", env=on_temporal)
        return status.returncode == 0 and '"status": "completed"' in status.stdout

    wait_until(completed, "the spawned session to resume the run to its end")
    prompts = [prompt_text(request) for request in fake_api.messages_requests()[:3]]
    assert prompts == [FIRST_PROMPT, SPAWN_PROMPT, CONTINUED_PROMPT]
    # Its `ll-loop resume` saw the end too, and the session ended: nothing is left behind.
    wait_until(lambda: not processes_with("resume spawned"), "the spawned session to end")
