"""The qwen host adapter against the real Qwen Code CLI (pinned in .ci/qwen-code-version),
with its `anthropic` auth type pointed at the runner's fake Anthropic API on 127.0.0.1
(issue 24; spec agent-hosts.md §4): a run with a tool call, resume in a new process, a
refused key, and `ll-loop run` with `host: qwen`.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from api_script import ApiScript, Rule, user_text
from e2e_project import LL_LOOP, VENV_BIN
from fake_anthropic import FakeAnthropicServer
from fixtures.cli_support import normalize
from qwen_home import qwen_env

from little_loops.fsm.model.claude_run import ClaudeRun
from little_loops.fsm.model.host_ending import HostEnding
from little_loops.fsm.process.hosts import host_named

RUN_SECONDS = 150
SHELL_TOOL = "run_shell_command"  # Qwen Code's name of its shell tool
TOOL_PROMPT = "Please run the tool now"


@dataclass
class Ran:
    run: ClaudeRun
    said: str
    ending: HostEnding


class _Said:
    def __init__(self) -> None:
        self.text = ""

    def lines(self, text: str) -> None:
        self.text += text

    def piece(self, text: str) -> None:
        self.text += text


def run_qwen(
    tmp_path: Path, server: FakeAnthropicServer, qwen_bin: Path, prompt: str, session: str | None
) -> Ran:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = qwen_env(base_url=server.base_url, root=tmp_path, qwen_bin=qwen_bin, work=work)
    host = host_named("qwen")
    command = host.command(str(qwen_bin), prompt, resume_session=session)
    done = subprocess.run(
        command.argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
    )
    said = _Said()
    stream = host.stream(said, cap=64 * 1024)
    stream.feed(done.stdout)
    stream.close()
    output, _ = stream.output_with_marker(None)
    ending = host.ending(
        stream.run, exit_code=done.returncode, output=output, stderr=done.stderr, now=0.0
    )
    return Ran(stream.run, said.text, ending)


def test_tool_output_is_not_said_and_the_session_resumes(
    tmp_path: Path, qwen_bin: Path, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    """§4: stream-json of Claude Code's shape: only the agent's text is handed on (a tool
    result holding `CONTEXT_HANDOFF:` is not); session id and tokens; `--resume`
    continues the session in a new process (the history goes to the API again)."""
    tool = (SHELL_TOOL, {"command": "echo 'CONTEXT_HANDOFF: from the tool'"})
    script.rules = [
        Rule("Please go on now", text="Went on."),
        Rule(TOOL_PROMPT, tool=tool, closing="Ran it."),
    ]
    first = run_qwen(tmp_path, fake_api, qwen_bin, TOOL_PROMPT, None)
    assert (first.ending, first.said, first.run.result_text) == (
        HostEnding("success"),
        "Ran it.\n",
        "Ran it.",
    )
    assert first.run.session_id is not None and first.run.input_tokens > 0
    second = run_qwen(tmp_path, fake_api, qwen_bin, "Please go on now", first.run.session_id)
    assert (second.ending, second.said) == (HostEnding("success"), "Went on.\n")
    assert second.run.session_id == first.run.session_id
    resumed = [r for r in fake_api.messages_requests() if "Please go on now" in user_text(r)]
    history = str(resumed[0].body["messages"])
    assert TOOL_PROMPT in history and "CONTEXT_HANDOFF: from the tool" in history


def test_a_refused_key_is_an_auth_ending(
    tmp_path: Path, qwen_bin: Path, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    script.rules = [Rule("Say hello", error=(401, "authentication_error", "invalid x-api-key"))]
    ran = run_qwen(tmp_path, fake_api, qwen_bin, "Say hello", None)
    assert ran.ending.kind == "auth", ran.ending
    assert "invalid x-api-key" in ran.ending.message


def test_ll_loop_runs_a_prompt_state_on_qwen(
    tmp_path: Path, qwen_bin: Path, script: ApiScript, fake_api: FakeAnthropicServer
) -> None:
    """Issue 24 item 1: `host: qwen` runs the prompt through Qwen Code."""
    script.rules = [Rule("Please work on the parser", text="Work finished.")]
    root = tmp_path / "project"
    (root / ".loops").mkdir(parents=True)
    (root / ".loops" / "q.yaml").write_text(LOOP, encoding="utf-8")
    env = qwen_env(
        base_url=fake_api.base_url,
        root=tmp_path,
        qwen_bin=qwen_bin,
        work=root,
        extra_path=[VENV_BIN],
    )
    done = subprocess.run(
        [str(LL_LOOP), "run", "q"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
    )
    assert (done.returncode, normalize(done.stdout), done.stderr) == (
        0,
        "Running loop: q\n"
        "Max steps: 3\n"
        "\n"
        "[1/3] work -> Please work on the parser (on qwen)\n"
        "       ✓ yes\n"
        "       -> done (Ns)\n"  # Qwen Code reports no cost
        "\n"
        "Loop completed: done (1 iteration, Ns, $C, N tokens)\n",
        "",
    )


LOOP = """\
name: q
initial: work
max_steps: 3
host: qwen
states:
  work:
    action: Please work on the parser
    action_type: prompt
    evaluate:
      type: output_contains
      pattern: Work finished
    on_yes: done
    on_no: done
  done:
    terminal: true
"""
