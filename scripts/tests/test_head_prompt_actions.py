"""Prompt actions of HEAD files (spec/ll-head-dialect.md §2.2 `action_type`, `agent`,
`tools`, `model`, `effort`, `timeout`, `idle_timeout`, `session_mode`,
`append_to_messages`; §2.1 `default_timeout`, `default_idle_timeout`; §7.8), run by
`FSMExecutor` with a fake `claude` on PATH that records its command line, and real
shell actions for the idle timeout."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import cli_in_process, write_loop

from little_loops.fsm.engine.head_actions import CONTINUITY_HEADING, NO_WALL_CLOCK_SECONDS
from little_loops.fsm.engine.run_loop import FSMExecutor
from little_loops.fsm.engine.step_result import ExecutionResult
from little_loops.fsm.model.head_loop import HeadLoop
from little_loops.fsm.process.runner import ActionResult, DefaultActionRunner
from little_loops.fsm.schema import FSMLoop

DONE = {"terminal": True}


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        self.events.append({k: v for k, v in event.items() if k != "ts"})

    def of(self, name: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["event"] == name]


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `claude` on PATH: each call appends its arguments (each ended by NUL, the call
    by \\x01) to `calls`, then answers `said: <prompt>`; the LLM judge is off in these
    loops."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "claude"
    script.write_text(
        "#!/bin/bash\n"
        f'printf "%s\\0" "$@" >> {tmp_path}/calls; printf "\\1" >> {tmp_path}/calls\n'
        'echo "said: ${@: -1}"\n'
        f"exit $(cat {tmp_path}/exit_code 2>/dev/null || echo 0)\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.delenv("LL_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / "calls"


def calls(path: Path) -> list[list[str]]:
    """Each recorded claude command line (its arguments)."""
    text = path.read_text()
    return [call.split("\0")[:-1] for call in text.split("\x01")[:-1]]


def run(
    states: dict[str, Any], *, head: bool = True, runner: Any = None, **top: Any
) -> tuple[ExecutionResult, Recorder, FSMExecutor]:
    data = {
        "name": "demo",
        "initial": next(iter(states)),
        "states": states,
        "llm": {"enabled": False},
        **top,
    }
    loop = HeadLoop.from_dict(data) if head else FSMLoop.from_dict(data)
    recorder = Recorder()
    executor = FSMExecutor(loop, event_callback=recorder, action_runner=runner)
    return executor.run(), recorder, executor


STREAM_FLAGS = ["--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose"]


# -- the claude command line ----------------------------------------------------------------


def test_s2_2_a_prompt_action_runs_through_claude_with_agent_tools_and_model(
    claude: Path,
) -> None:
    states = {
        "review": {
            "action_type": "prompt",
            "action": "Review the diff of ${context.branch}",
            "agent": "reviewer",
            "tools": ["Read", "Grep"],
            "model": "claude-haiku-4-5",
            "effort": "high",
            "next": "done",
        },
        "done": DONE,
    }
    result, events, _ = run(states, context={"branch": "main"})
    assert calls(claude) == [
        [
            *STREAM_FLAGS,
            "--agent",
            "reviewer",
            "--tools",
            "Read,Grep",
            "--model",
            "claude-haiku-4-5",
            "-p",
            "Review the diff of main",
        ]
    ]
    complete = events.of("action_complete")[0]
    assert complete["effort"] == "high"
    assert complete["exit_code"] == 0
    assert result.final_state == "done"


def test_s2_2_effort_is_only_shown_and_absent_without_it(claude: Path) -> None:
    states = {"ask": {"action_type": "prompt", "action": "Hi", "next": "done"}, "done": DONE}
    _, events, _ = run(states)
    assert calls(claude) == [[*STREAM_FLAGS, "-p", "Hi"]]
    assert "effort" not in events.of("action_complete")[0]


def test_s2_2_slash_command_type_and_a_leading_slash_are_prompt_mode_too(claude: Path) -> None:
    states = {
        "one": {
            "action_type": "slash_command",
            "action": "/ll:check",
            "model": "m1",
            "next": "two",
        },
        "two": {"action": "/usr/bin/true", "agent": "a", "next": "done"},
        "done": DONE,
    }
    run(states)
    assert calls(claude) == [
        [*STREAM_FLAGS, "--model", "m1", "-p", "/ll:check"],
        [*STREAM_FLAGS, "--agent", "a", "-p", "/usr/bin/true"],
    ]


def test_s2_2_a_shell_action_gets_no_claude_flags(claude: Path, tmp_path: Path) -> None:
    states = {
        "build": {"action": f"echo built > {tmp_path}/out", "model": "m1", "next": "done"},
        "done": DONE,
    }
    run(states)
    assert not claude.exists()
    assert (tmp_path / "out").read_text() == "built\n"


def test_s2_2_a_legacy_slash_command_gets_no_new_flags(claude: Path) -> None:
    states = {"ask": {"action": "/ll:check", "next": "done"}, "done": DONE}
    run(states, head=False)
    assert calls(claude) == [[*STREAM_FLAGS, "-p", "/ll:check"]]


# -- timeouts -------------------------------------------------------------------------------


class TimeoutRecorder:
    """A runner that only records the time limit of each action and succeeds."""

    def __init__(self) -> None:
        self.timeouts: list[float] = []

    def run(self, action: str, timeout: float, is_slash_command: bool) -> ActionResult:
        self.timeouts.append(timeout)
        return ActionResult(output="", stderr="", exit_code=0, duration_ms=1)


@pytest.mark.parametrize(
    ("state", "top", "expected"),
    [
        ({"action": "make"}, {}, 3600),
        ({"action": "Go", "action_type": "prompt"}, {}, 3600),
        ({"action": "make"}, {"default_timeout": 77}, 77),
        ({"action": "make", "timeout": 5}, {"default_timeout": 77}, 5),
        ({"action": "srv/tool", "action_type": "mcp_tool"}, {}, 30),
        ({"action": "srv/tool", "action_type": "mcp_tool"}, {"default_timeout": 77}, 77),
        ({"action": "Go", "action_type": "prompt", "idle_timeout": 60}, {}, NO_WALL_CLOCK_SECONDS),
        (
            {"action": "Go", "action_type": "prompt"},
            {"default_idle_timeout": 60},
            NO_WALL_CLOCK_SECONDS,
        ),
        (
            {"action": "Go", "action_type": "prompt", "idle_timeout": 0},
            {"default_idle_timeout": 60},
            3600,
        ),
        ({"action": "Go", "action_type": "prompt", "idle_timeout": 60, "timeout": 9}, {}, 9),
        ({"action": "make", "idle_timeout": 60}, {}, 3600),
    ],
)
def test_s2_1_action_timeouts_of_a_head_file(
    state: dict[str, Any], top: dict[str, Any], expected: float
) -> None:
    runner = TimeoutRecorder()
    run({"a": {**state, "next": "done"}, "done": DONE}, runner=runner, **top)
    assert runner.timeouts == [expected]


def test_s2_1_a_legacy_action_keeps_its_120_seconds() -> None:
    runner = TimeoutRecorder()
    run({"a": {"action": "make", "next": "done"}, "done": DONE}, head=False, runner=runner)
    assert runner.timeouts == [120]


def test_s2_2_idle_timeout_kills_a_silent_action(tmp_path: Path) -> None:
    states = {
        "wait": {"action": "sleep 5", "idle_timeout": 1, "route": {"error": "done"}},
        "done": DONE,
    }
    started = time.monotonic()
    result, events, _ = run(states)
    assert time.monotonic() - started < 4
    complete = events.of("action_complete")[0]
    assert complete["exit_code"] == 124
    assert complete["error"] == "Action idle for 1s (no output)"
    assert events.of("evaluate")[0]["error"] == "Action idle for 1s (no output)"
    assert result.final_state == "done"


def test_s2_1_default_idle_timeout_lets_an_action_that_keeps_talking_finish() -> None:
    talk = "for i in 1 2 3 4 5 6; do echo $i; sleep 0.3; done"
    states = {"talk": {"action": talk, "route": {"yes": "done"}}, "done": DONE}
    result, events, _ = run(states, default_idle_timeout=1)
    assert events.of("action_complete")[0]["exit_code"] == 0
    assert result.final_state == "done"


def test_s2_2_output_on_stderr_counts_as_activity() -> None:
    talk = "for i in 1 2 3 4 5 6; do echo $i >&2; sleep 0.3; done"
    result = DefaultActionRunner().run(talk, 10, False, idle_timeout=1)
    assert (result.exit_code, result.timeout_kind) == (0, None)


def test_s2_5_the_runner_says_which_timeout_stopped_an_action() -> None:
    idle = DefaultActionRunner().run("sleep 5", 10, False, idle_timeout=0.5)
    wall = DefaultActionRunner().run(
        "while true; do echo x; sleep 0.1; done", 1, False, idle_timeout=5
    )
    assert (idle.exit_code, idle.timed_out, idle.timeout_kind) == (124, True, "idle")
    assert (wall.exit_code, wall.timed_out, wall.timeout_kind) == (124, True, "wall")
    assert wall.error == "Action timed out after 1s"


# -- session_mode: continue (§7.8), append_to_messages -----------------------------------------


def prompt(text: str, nxt: str, **extra: Any) -> dict[str, Any]:
    return {"action_type": "prompt", "action": text, "next": nxt, **extra}


def test_s7_8_a_continue_state_gets_the_previous_prompt_states_summary(claude: Path) -> None:
    states = {
        "plan": prompt("Plan it", "shell", session_mode="continue"),
        "shell": {"action": "echo between", "next": "build"},
        "build": prompt("Build it", "done", session_mode="continue"),
        "done": DONE,
    }
    _, _, executor = run(states)
    prompts = [call[-1] for call in calls(claude)]
    assert prompts == [
        "Plan it",
        f"{CONTINUITY_HEADING}\n\nsaid: Plan it\n\n---\n\nBuild it",
    ]
    assert executor.cursor.head.session_summary == (
        f"said: {CONTINUITY_HEADING}\n\nsaid: Plan it\n\n---\n\nBuild it"
    )


def test_s7_8_a_fresh_prompt_state_in_between_takes_the_summary(claude: Path) -> None:
    states = {
        "plan": prompt("Plan it", "ask", session_mode="continue"),
        "ask": prompt("Unrelated", "build"),
        "build": prompt("Build it", "done", session_mode="continue"),
        "done": DONE,
    }
    run(states)
    assert [call[-1] for call in calls(claude)] == ["Plan it", "Unrelated", "Build it"]


def test_s7_8_the_loop_default_and_a_failed_state_leave_no_summary(
    claude: Path, tmp_path: Path
) -> None:
    (tmp_path / "exit_code").write_text("1")
    states = {"plan": prompt("Plan it", "build"), "build": prompt("Build it", "done"), "done": DONE}
    _, _, executor = run(states, session_mode="continue")
    assert [call[-1] for call in calls(claude)] == ["Plan it", "Build it"]
    assert executor.cursor.head.session_summary is None


def test_s7_8_the_loop_default_continues_prompt_states(claude: Path) -> None:
    states = {"plan": prompt("Plan it", "build"), "build": prompt("Build it", "done"), "done": DONE}
    run(states, session_mode="continue")
    assert calls(claude)[1][-1] == f"{CONTINUITY_HEADING}\n\nsaid: Plan it\n\n---\n\nBuild it"


def test_s2_2_append_to_messages_keeps_the_interpolated_text_after_the_action() -> None:
    states = {
        "scan": {
            "action": "printf '3 findings'",
            "capture": "scan",
            "append_to_messages": "scan said: ${captured.scan.output}",
            "next": "again",
        },
        "again": {
            "action": "true",
            "append_to_messages": "again ran (${state.name})",
            "next": "done",
        },
        "done": DONE,
    }
    _, _, executor = run(states)
    assert executor.cursor.head.messages == ["scan said: 3 findings", "again ran (again)"]


def test_s2_2_an_append_that_cannot_be_interpolated_is_reported_and_skipped() -> None:
    states = {
        "scan": {"action": "true", "append_to_messages": "${captured.nope.output}", "next": "done"},
        "done": DONE,
    }
    result, events, executor = run(states)
    assert events.of("append_to_messages_failed") == [
        {
            "event": "append_to_messages_failed",
            "state": "scan",
            "error": "Path 'nope' not found in captured",
        }
    ]
    assert executor.cursor.head.messages == []
    assert result.final_state == "done"


# -- through the real `ll-loop run` (the loader reads the HEAD file) --------------------------

REVIEW_LOOP = """\
name: review
description: Review a topic with a reviewer agent, then note it.
initial: review
states:
  review:
    action: "Review ${context.topic}"
    action_type: prompt
    agent: reviewer
    tools: [Read, Grep]
    model: claude-haiku-4-5
    effort: high
    session_mode: continue
    append_to_messages: "reviewed ${context.topic}"
    route:
      yes: summarize
      _: failed
  summarize:
    action: "Summarize"
    action_type: prompt
    session_mode: continue
    route:
      yes: done
      _: failed
  done:
    terminal: true
  failed:
    terminal: true
"""


def test_s2_2_a_head_file_run_by_ll_loop_sends_the_flags_and_the_summary(
    claude: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    write_loop(tmp_path, "review", REVIEW_LOOP)
    code, _, err = cli_in_process(capsys, "run", "review", "--no-llm", "--context", "topic=auth")
    assert (code, err) == (0, "")
    assert calls(claude) == [
        [
            *STREAM_FLAGS,
            "--agent",
            "reviewer",
            "--tools",
            "Read,Grep",
            "--model",
            "claude-haiku-4-5",
            "-p",
            "Review auth",
        ],
        [*STREAM_FLAGS, "-p", f"{CONTINUITY_HEADING}\n\nsaid: Review auth\n\n---\n\nSummarize"],
    ]
    events = [
        json.loads(line)
        for line in (tmp_path / ".loops/.running/review.events.jsonl").read_text().splitlines()
    ]
    completes = [event for event in events if event["event"] == "action_complete"]
    assert [event.get("effort") for event in completes] == ["high", None]
    assert [event["verdict"] for event in events if event["event"] == "evaluate"] == ["yes", "yes"]
    saved = json.loads((tmp_path / ".loops/.running/review.state.json").read_text())
    assert saved["status"] == "completed"
    assert saved["head"]["messages"] == ["reviewed auth"]
