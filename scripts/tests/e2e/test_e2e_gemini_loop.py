"""Loops with `host: gemini` run by `ll-loop` through the real Gemini CLI and the fake
Gemini API (issue 24 items 1, 2 and 7): a plain run, a handoff, a usage limit with a near
reset waited out and the same session continued, a 5xx retried, a missing CLI.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_project import VENV_BIN, E2EProject
from fake_gemini import FakeGeminiServer, GeminiRule, quota_error, server_error
from gemini_cli import FAKE_MODEL, gemini_env

from little_loops.fsm.engine.limit_step import CONTINUE_PROMPT
from little_loops.fsm.process.hosts.gemini_prices import cost_of_tokens

pytestmark = pytest.mark.slow
FINISHED = "Work finished."
CONTINUATION = "Continue with module B"
FLASH_COST = cost_of_tokens(FAKE_MODEL, uncached=23, cached=100, output=7)

LEGACY_LOOP = """\
name: {name}
initial: work
max_iterations: 5
host: gemini
rate_limit:
  first_backoff: 1s
states:
  work:
    action: /work the parser
    evaluate:
      type: output_contains
      pattern: {pattern}
    on_success: done
    on_failure: work
  done:
    terminal: true
"""

HEAD_LOOP = f"""\
name: night
initial: work
max_steps: 5
host: gemini
rate_limit:
  first_backoff: 1s
states:
  work:
    action: Please work on the parser
    action_type: prompt
    model: {FAKE_MODEL}
    evaluate:
      type: output_contains
      pattern: Work finished
    on_yes: done
    on_no: done
  done:
    terminal: true
"""


class GeminiProject(E2EProject):
    """A project whose `ll-loop` runs `gemini` (its home in tmp) against the fake API."""

    def env(self) -> dict[str, str]:
        env = gemini_env(
            base_url=self.base_url,
            home=self.home,
            gemini_bin=self.claude_bin,
            extra_path=[VENV_BIN],
            model=FAKE_MODEL,
        )
        env.pop("LL_HOST_CLI", None)
        return env


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(tmp_path / "api.jsonl") as fake:
        yield fake


@pytest.fixture
def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: FakeGeminiServer, gemini_bin: Path
) -> GeminiProject:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    monkeypatch.chdir(root)
    return GeminiProject(root, home, server.base_url, gemini_bin)


def completes(done: object) -> None:
    assert getattr(done, "returncode", None) == 0, getattr(done, "stdout", "") + getattr(
        done, "stderr", ""
    )


def test_a_legacy_loop_runs_its_state_on_gemini(
    project: GeminiProject, server: FakeGeminiServer
) -> None:
    """`host: gemini` on a legacy loop: the slash command's text goes to gemini; the
    evaluator reads the agent's text; `action_complete` names the host, its session,
    tokens and list-price cost."""
    server.rules = [GeminiRule("/work the parser", text=FINISHED)]
    project.write_loop("plain", LEGACY_LOOP.format(name="plain", pattern="Work finished"))
    done = project.ll_loop("run", "plain")
    completes(done)
    assert server.turn_texts()[0].endswith("/work the parser")
    assert project.state("plain")["status"] == "completed"
    complete = next(e for e in project.events("plain") if e["event"] == "action_complete")
    assert complete["host"] == "gemini"
    tokens = {"input": 23, "output": 7, "cache_read": 100, "cache_creation": 0}
    assert complete["tokens"] == tokens
    assert len(complete["session_id"]) == 36
    assert complete["cost_usd"] == pytest.approx(FLASH_COST)


def test_a_handoff_pauses_and_resume_continues_on_gemini(
    project: GeminiProject, server: FakeGeminiServer
) -> None:
    """CONTEXT_HANDOFF: in gemini's text (cut across stream deltas) pauses the loop (exit 3);
    `ll-loop resume` sends the continuation to gemini and the loop finishes."""
    server.rules = [
        GeminiRule(CONTINUATION, text="Module B finished."),
        GeminiRule("/work the parser", text=f"Module A done.\nCONTEXT_HANDOFF: {CONTINUATION}"),
    ]
    project.write_loop("paused", LEGACY_LOOP.format(name="paused", pattern="Module B finished"))
    paused = project.ll_loop("run", "paused")
    assert paused.returncode == 3, paused.stdout + paused.stderr
    assert f"Continuation: {CONTINUATION}\n" in paused.stdout
    assert project.state("paused")["continuation_prompt"] == CONTINUATION
    resumed = project.ll_loop("resume", "paused")
    completes(resumed)
    assert project.state("paused")["status"] == "completed"
    assert server.turn_texts()[-1].endswith(f"/work the parser\n\n{CONTINUATION}")


def test_a_usage_limit_with_a_near_reset_is_waited_out_on_the_same_session(
    project: GeminiProject, server: FakeGeminiServer
) -> None:
    """The agent runs a tool, then its quota is spent with a retry delay of 3 s: the run
    waits for the reset, then continues the same gemini session (`--resume`), whose next
    request carries the first prompt, the tool call and the continue prompt."""
    server.rules = [
        GeminiRule(CONTINUE_PROMPT, text=FINISHED),
        GeminiRule(
            "Please work on the parser",
            shell="echo step 1 > step1.txt",
            closing_error=quota_error(retry_delay="3s"),
        ),
    ]
    project.write_loop("night", HEAD_LOOP)
    started = time.monotonic()
    done = project.ll_loop("run", "night")
    completes(done)
    assert "waiting for the usage limit to reset at " in done.stdout
    assert time.monotonic() - started < 40  # an exact reset: no minute's margin
    assert (project.root / "step1.txt").read_text() == "step 1\n"
    *_, again = server.turns()
    said = [part.get("text", "") for c in again.body["contents"] for part in c["parts"]]
    calls = [part for c in again.body["contents"] for part in c["parts"] if "functionCall" in part]
    assert "Please work on the parser" in said and said[-1] == CONTINUE_PROMPT
    assert len(calls) == 1
    events = project.events("night")
    assert [e["event"] for e in events].count("limit_wait") == 1
    sessions = [e.get("session_id") for e in events if e["event"] == "action_complete"]
    assert len(sessions) == 2 and sessions[0] == sessions[1] is not None


def test_a_usage_limit_before_any_answer_runs_the_prompt_again_afresh(
    project: GeminiProject, server: FakeGeminiServer
) -> None:
    """Gemini keeps nothing of a new session whose first request was refused, so after the
    wait the same prompt runs again in a new session (no `--resume` of a lost session)."""
    server.rules = [
        GeminiRule("Please work on the parser", error=quota_error(retry_delay="2s"), times=1),
        GeminiRule("Please work on the parser", text=FINISHED),
    ]
    project.write_loop("night", HEAD_LOOP)
    done = project.ll_loop("run", "night")
    completes(done)
    assert "waiting for the usage limit to reset at " in done.stdout
    assert [t.split("\n")[-1] for t in server.turn_texts()] == ["Please work on the parser"] * 2
    again = server.turns()[-1].body["contents"]
    assert [c["role"] for c in again] == ["user"]
    events = project.events("night")
    sessions = [e.get("session_id") for e in events if e["event"] == "action_complete"]
    assert sessions[0] is None and sessions[1] is not None


def test_a_server_error_is_retried_on_gemini(
    project: GeminiProject, server: FakeGeminiServer
) -> None:
    """A 500 that outlives gemini's own attempts is transient: backed off and run again."""
    server.rules = [
        GeminiRule("Please work on the parser", error=server_error(500), times=1),
        GeminiRule("Please work on the parser", text=FINISHED),
    ]
    project.write_loop("night", HEAD_LOOP)
    done = project.ll_loop("run", "night")
    completes(done)
    assert "backing off 1s (retry 1 of 8)" in done.stdout
    assert [e["event"] for e in project.events("night")].count("rate_limit_backoff") == 1
    assert len(server.turns()) == 2
    assert project.state("night")["status"] == "completed"


def test_a_missing_gemini_cli_says_how_to_install_it(
    project: GeminiProject, server: FakeGeminiServer
) -> None:
    """`run` says in one line which CLI is missing and how to install it."""
    project.write_loop("night", HEAD_LOOP)
    env = project.env()
    del env["LL_GEMINI_BIN"]
    env["PATH"] = os.pathsep.join([str(VENV_BIN), "/usr/bin", "/bin"])
    assert shutil.which("gemini", path=env["PATH"]) is None
    done = project.ll_loop("run", "night", env=env)
    line = "gemini CLI not found: npm install -g @google/gemini-cli (or set LL_GEMINI_BIN)"
    # Said before the first state runs (cli/host_preflight.py), not when it is reached.
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"Cannot run night: state 'work' runs on gemini, but {line}\n"
    assert server.turns() == []
