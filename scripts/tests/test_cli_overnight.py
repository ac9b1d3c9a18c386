"""Overnight runs through the real `ll-loop` command (issue 13): usage-limit waits that
survive a stop, rate-limit backoffs, the budget with its exit code, and what `status`
says. Slash commands run a scripted fake `claude` that prints stream-json."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures import scripted_claude
from fixtures.cli_support import LL_LOOP, cli_env, run_cli, write_loop

LOOP = """\
name: night
initial: work
rate_limit:
  first_backoff: 0.1
{extra}
states:
  work:
    action: /ll:work
    evaluate:
      type: exit_code
    on_success: more
    on_failure: done
    on_error: done
  more:
    action: /ll:more
    evaluate:
      type: exit_code
    on_success: done
    on_failure: done
  done:
    terminal: true
"""


def setup(tmp_path: Path, steps: list[dict[str, Any]], extra: str = "") -> dict[str, str]:
    write_loop(tmp_path, "night", LOOP.format(extra=extra))
    claude = scripted_claude.install(tmp_path / "fake", steps)
    env = cli_env(tmp_path)
    env["LL_CLAUDE_BIN"] = str(claude)
    return env


def state(tmp_path: Path) -> dict[str, Any]:
    data = json.loads((tmp_path / ".loops/.running/night.state.json").read_text())
    assert isinstance(data, dict)
    return data


def events(tmp_path: Path) -> list[dict[str, Any]]:
    text = (tmp_path / ".loops/.running/night.events.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def wait_until(check: Any, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_overload_after_claudes_retries_backs_off_and_goes_on(tmp_path: Path) -> None:
    overloaded = "API Error: Repeated 529 Overloaded errors. Try again later."
    env = setup(tmp_path, [{"text": overloaded, "is_error": True, "status": 529}, {}])
    done = run_cli(tmp_path, "run", "night", env=env)
    assert done.returncode == 0, done.stderr
    assert overloaded in done.stdout
    assert "backing off 0.1s (retry 1 of 8)" in done.stdout
    assert state(tmp_path)["iteration"] == 2  # work, more: the retry is not an iteration
    assert len(scripted_claude.calls(tmp_path / "fake")) == 3


def test_each_run_of_an_action_again_after_a_limit_keeps_a_log_of_its_own(
    tmp_path: Path,
) -> None:
    """The first run's log keeps claude's limit message, and the events name each log."""
    overloaded = "API Error: Repeated 529 Overloaded errors. Try again later."
    failing = {"text": overloaded, "is_error": True, "status": 529}
    env = setup(tmp_path, [failing, failing, {"text": "worked"}])
    done = run_cli(tmp_path, "run", "night", env=env)
    assert done.returncode == 0, done.stderr
    logs = tmp_path / ".loops/.running/night.logs"
    names = ["1-work.log", "1-work.retry-1.log", "1-work.retry-2.log"]
    texts = [(logs / name).read_text(encoding="utf-8") for name in names]
    assert [overloaded in text for text in texts] == [True, True, False]
    assert '"result": "worked"' in texts[2]
    completed = [e for e in events(tmp_path) if e["event"] == "action_complete"]
    assert [Path(e["log_path"]).name for e in completed[:3]] == names


def test_a_far_reset_ends_with_exit_7_and_status_says_when(tmp_path: Path) -> None:
    limited = {
        "text": "You've hit your 5-hour limit · resets 3am",
        "is_error": True,
        "status": 429,
        "reset_in": 7200,
    }
    env = setup(tmp_path, [limited], extra="  max_wait: 1h")
    ended = run_cli(tmp_path, "run", "night", env=env)
    assert ended.returncode == 7, ended.stderr
    assert "Loop paused for Claude's usage limit: work" in ended.stderr
    assert "Resume after the reset: ll-loop resume night" in ended.stderr
    saved = state(tmp_path)
    assert saved["status"] == "usage_limited"
    assert saved["limit_wait"]["session_id"] == "s-0"
    status = run_cli(tmp_path, "status", "night", env=env)
    assert "Status: usage_limited (usage limit resets at " in status.stdout
    again = run_cli(tmp_path, "resume", "night", env=env)
    assert again.returncode == 7  # still beyond max_wait: ends again, nothing runs
    assert len(scripted_claude.calls(tmp_path / "fake")) == 1


@pytest.mark.slow
def test_stop_during_a_limit_wait_then_resume_waits_only_what_is_left(tmp_path: Path) -> None:
    limited = {
        "text": "You've hit your 5-hour limit",
        "is_error": True,
        "status": 429,
        "reset_in": 4,
        "session": "sess-A",
    }
    env = setup(tmp_path, [limited, {}])
    run = subprocess.Popen(
        [str(LL_LOOP), "run", "night"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: (
                (tmp_path / ".loops/.running/night.state.json").exists()
                and state(tmp_path)["status"] == "waiting_for_limit"
            ),
            "the limit wait",
        )
        listed = run_cli(tmp_path, "list", "--running", env=env)
        assert "waiting for the usage limit to reset at " in listed.stdout
        stopped_at = time.time()
        assert run_cli(tmp_path, "stop", "night", env=env).returncode == 0
        out, err = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 130, err
    assert "waiting for the usage limit to reset at " in out
    saved = state(tmp_path)
    assert saved["status"] == "interrupted"
    until = saved["limit_wait"]["until"]
    resumed = run_cli(tmp_path, "resume", "night", env=env)
    assert resumed.returncode == 0, resumed.stderr
    waits = [e for e in events(tmp_path) if e["event"] == "limit_wait"]
    assert len(waits) == 2
    assert waits[1]["wait_seconds"] <= round(until - stopped_at)
    argv = scripted_claude.calls(tmp_path / "fake")
    assert argv[1][argv[1].index("--resume") + 1] == "sess-A"  # the session went on
    assert any("usage limit reset after" in line for line in resumed.stdout.splitlines())


def test_the_budget_stops_the_run_with_exit_8_and_a_higher_one_finishes_it(
    tmp_path: Path,
) -> None:
    env = setup(tmp_path, [{"cost": 0.02}])
    ended = run_cli(tmp_path, "run", "night", "--max-cost", "0.01", env=env)
    assert ended.returncode == 8, ended.stderr
    assert "-> more (" in ended.stdout and "$0.0200)" in ended.stdout
    assert "budget reached: spent $0.0200 of $0.0100" in ended.stderr
    assert "ll-loop resume night --max-cost N" in ended.stderr
    saved = state(tmp_path)
    assert (saved["status"], saved["max_cost_usd"]) == ("budget_exhausted", 0.01)
    status = run_cli(tmp_path, "status", "night", env=env).stdout
    assert "Spent: $0.0200 (120 tokens: 100 in, 20 out)" in status
    again = run_cli(tmp_path, "resume", "night", env=env)
    assert again.returncode == 8  # the saved --max-cost still holds
    done = run_cli(tmp_path, "resume", "night", "--max-cost", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert "Loop completed: done (" in done.stdout and "$0.0400, 240 tokens)" in done.stdout
    history = run_cli(tmp_path, "history", "night", "--runs", env=env).stdout
    assert "$0.0400" in history


@pytest.mark.parametrize("amount", ["0", "-1", "lots"])
def test_a_bad_max_cost_is_a_usage_error(tmp_path: Path, amount: str) -> None:
    env = setup(tmp_path, [{}])
    done = run_cli(tmp_path, "run", "night", f"--max-cost={amount}", env=env)
    assert done.returncode == 2
    assert "--max-cost" in done.stderr and "Traceback" not in done.stderr
