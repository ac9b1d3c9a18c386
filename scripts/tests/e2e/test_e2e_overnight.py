"""Overnight runs through the real Claude Code CLI and the fake Messages API (issue 13):
(a) a subscriber's session limit is waited out and the same session continued; (b) a 429
that outlasts claude's own retries is backed off; (c) a budget stops a run, exit 8, and a
higher one finishes it; (d) `notify` hears the events in order; (e) an answer that only
*says* the limit words never waits; (f) a stop during a wait, then resume, waits only what
is left."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api_script import user_text
from claude_code import claude_env
from e2e_project import LL_LOOP, VENV_BIN, E2EProject
from fake_anthropic import (
    FakeAnthropicServer,
    RecordedRequest,
    Reply,
    rate_limited,
    text_message,
    usage_limit_reached,
)

from little_loops.fsm.engine.limit_step import CONTINUE_PROMPT

WORK = "Please work on: $ARGUMENTS\n"
FINISHED = "Work finished."

LOOP = """\
name: night
initial: work
max_iterations: 5
rate_limit:
  first_backoff: 1s
{extra}
states:
  work:
    action: /work the parser
    evaluate:
      type: output_contains
      pattern: Work finished
    on_success: done
    on_failure: done
  done:
    terminal: true
"""


class Answers:
    """The fake API's responder: `first` answers the first `times` requests of the work,
    then `Work finished.`; every request is kept with the time it came."""

    def __init__(self, first: Callable[[], Reply], times: int = 1) -> None:
        self.first, self.times = first, times
        self.seen: list[tuple[float, RecordedRequest]] = []
        self.wall: list[float] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        self.seen.append((time.monotonic(), request))
        self.wall.append(time.time())
        if len(self.seen) <= self.times:
            return self.first()
        return Reply(text_message(FINISHED))


def subscriber_env(project: E2EProject, **extra: str) -> dict[str, str]:
    env = claude_env(
        base_url=project.base_url,
        home=project.home,
        claude_bin=project.claude_bin,
        extra_path=[VENV_BIN],
        subscriber=True,
    )
    env.update(extra)
    return env


def setup(
    project: E2EProject, fake_api: FakeAnthropicServer, answers: Answers, extra: str = ""
) -> None:
    fake_api.responder = answers
    project.write_command("work", WORK)
    project.write_loop("night", LOOP.format(extra=extra))


def names(project: E2EProject) -> list[str]:
    return project.event_names("night")


def notified(path: Path, count: int, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.1)
    raise AssertionError(f"notify heard {path.read_text() if path.exists() else 'nothing'}")


def test_a_session_limit_is_waited_out_and_the_session_continued(
    project: E2EProject, fake_api: FakeAnthropicServer
) -> None:
    answers = Answers(lambda: usage_limit_reached(time.time() + 5, "five_hour"))
    heard = project.root / "heard.txt"
    notify = f"  notify: 'echo \"$LL_EVENT $LL_STATUS\" >> {heard}'"
    setup(project, fake_api, answers, extra=notify.replace("  notify", "notify"))
    started = time.monotonic()
    done = project.ll_loop("run", "night", env=subscriber_env(project))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "waiting for the usage limit to reset at " in done.stdout
    assert "usage limit reset after" in done.stdout
    [(limited_at, limited), (again_at, again)] = answers.seen
    assert again_at - limited_at >= 5  # it waited for the reset...
    assert time.monotonic() - started < 45  # ...and not the minute a text reset adds
    # The same conversation went on: the first prompt is there, then the continue prompt.
    turns = [m for m in again.body["messages"] if m["role"] == "user"]
    said = "\n".join(user_text(RecordedRequest("", {}, {"messages": [t]})) for t in turns)
    assert "Please work on: the parser" in said and CONTINUE_PROMPT in said
    assert "Please work on: the parser" in user_text(limited)
    # (d) the events reached notify in order
    assert notified(heard, 3) == [
        "limit_wait_started waiting_for_limit",
        "limit_wait_ended running",
        "completed completed",
    ]
    assert names(project).count("limit_wait") == 1
    assert project.state("night")["iteration"] == 1


def test_a_429_after_claudes_retries_is_backed_off(
    project: E2EProject, fake_api: FakeAnthropicServer
) -> None:
    answers = Answers(lambda: rate_limited(retry_after=1), times=2)
    setup(project, fake_api, answers)
    env = claude_env(
        base_url=project.base_url,
        home=project.home,
        claude_bin=project.claude_bin,
        extra_path=[VENV_BIN],
        max_retries=1,
    )
    done = project.ll_loop("run", "night", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "API Error: Request rejected (429)" in done.stdout
    assert "backing off 1s (retry 1 of 8)" in done.stdout
    assert len(answers.seen) == 3  # claude's try and retry, then ours
    assert "rate_limit_backoff" in names(project)


def expensive() -> Reply:
    body = text_message(FINISHED)
    body["usage"] = {"input_tokens": 20_000, "output_tokens": 2_000}
    return Reply(body)


def test_a_budget_stops_the_run_and_a_higher_one_finishes_it(
    project: E2EProject, fake_api: FakeAnthropicServer
) -> None:
    fake_api.responder = lambda request: expensive()
    project.write_command("work", WORK)
    project.write_loop(
        "night",
        LOOP.format(extra="").replace("on_success: done", "on_success: more")
        + "  more:\n    action: /work more\n    next: done\n",
    )
    stopped = project.ll_loop("run", "night", "--max-cost", "0.01")
    assert stopped.returncode == 8, stopped.stdout + stopped.stderr
    assert "budget reached: spent $" in stopped.stderr
    spent = project.state("night")["spending"]
    assert spent["cost_usd"] > 0.01 and spent["tokens"]["input"] >= 20_000
    status = project.ll_loop("status", "night").stdout
    assert "Status: budget_exhausted" in status and "Spent: $" in status
    done = project.ll_loop("resume", "night", "--max-cost", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert project.state("night")["status"] == "completed"


def test_an_answer_that_says_the_limit_words_does_not_wait(
    project: E2EProject, fake_api: FakeAnthropicServer
) -> None:
    words = "You've hit your session limit · resets 11:21pm (UTC)"
    fake_api.responder = lambda request: Reply(text_message(f"{words}\n{FINISHED}"))
    project.write_command("work", WORK)
    project.write_loop("night", LOOP.format(extra=""))
    done = project.ll_loop("run", "night", env=subscriber_env(project))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "limit_wait" not in names(project)
    assert "waiting for the usage limit" not in done.stdout


def test_stop_during_a_limit_wait_then_resume_waits_only_what_is_left(
    project: E2EProject, fake_api: FakeAnthropicServer
) -> None:
    answers = Answers(lambda: usage_limit_reached(time.time() + 12, "five_hour"))
    setup(project, fake_api, answers)
    env = subscriber_env(project)
    run = subprocess.Popen(
        [str(LL_LOOP), "run", "night"],
        cwd=project.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        project.wait_for_status("night", "waiting_for_limit")
        assert project.ll_loop("stop", "night", env=env).returncode == 0
        run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 130
    saved = project.state("night")
    assert saved["status"] == "interrupted"
    until = saved["limit_wait"]["until"]
    left = until - time.time()
    resumed = project.ll_loop("resume", "night", env=env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    waits: list[dict[str, Any]] = [e for e in project.events("night") if e["event"] == "limit_wait"]
    assert len(waits) == 2
    # The resumed wait is for the same reset, what was left of it, not a new one.
    assert waits[1]["until"] == waits[0]["until"]
    assert waits[1]["wait_seconds"] <= round(left) + 1
    assert len(answers.seen) == 2  # the action ran again only once, after the reset
    assert answers.wall[1] >= until - 1
