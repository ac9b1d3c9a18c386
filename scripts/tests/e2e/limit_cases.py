"""What the real Claude Code CLI prints when it meets a limit: the cases, run and recorded.

Each `LimitCase` is one way the fake API refuses every request (a subscriber's usage
limit, a 429 or 529 that outlives claude's own retries, the short throttle, a rejected
key). `run_case` runs the real `claude -p` against it; the stream-json transcripts in
`scripts/tests/fixtures/claude_limits/<case>.jsonl` were recorded with

    LL_E2E_CLAUDE=... python scripts/tests/e2e/limit_cases.py [CASE ...]

and `test_e2e_claude_limits.py` runs every case again, so the fixtures stay honest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from claude_code import claude_env
from fake_anthropic import (
    FakeAnthropicServer,
    Reply,
    error_body,
    overloaded,
    rate_limited,
    usage_limit_reached,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_limits"
# The prompt of every case (the fake API refuses it whatever it says).
PROMPT = "Say hi"
# Where a recording's temporary folder is written instead, so fixtures do not change.
RECORDED_ROOT = "/tmp/claude-limits"
STREAM_FLAGS = ("--output-format", "stream-json", "--verbose")
CASE_TIMEOUT = 120.0


@dataclass(frozen=True)
class LimitCase:
    """One refusal: `reply(now)` answers every request; `ahead` is the reset's distance."""

    name: str
    reply: Callable[[float], Reply]
    subscriber: bool = False
    max_retries: int = 0
    ahead: float | None = None


def _throttle(now: float) -> Reply:
    # Rejected without naming a limit: claude calls it the short throttle, not a usage limit.
    headers = {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(int(now + 60)),
    }
    return Reply(error_body("rate_limit_error", "Too many requests"), 429, headers)


def _bad_key(now: float) -> Reply:
    return Reply(error_body("authentication_error", "invalid x-api-key"), status=401)


HOUR, DAY = 3600.0, 86400.0
CASES = {
    case.name: case
    for case in (
        LimitCase(
            "session_limit",
            lambda now: usage_limit_reached(now + HOUR, "five_hour"),
            subscriber=True,
            ahead=HOUR,
        ),
        LimitCase(
            "weekly_limit",
            lambda now: usage_limit_reached(now + 3 * DAY, "seven_day"),
            subscriber=True,
            ahead=3 * DAY,
        ),
        LimitCase(
            "opus_limit",
            lambda now: usage_limit_reached(now + 2 * DAY, "seven_day_opus"),
            subscriber=True,
            ahead=2 * DAY,
        ),
        LimitCase(
            "usage_limit_no_reset",
            lambda now: usage_limit_reached(None, "five_hour"),
            subscriber=True,
        ),
        LimitCase(
            "rate_limit_429",
            lambda now: rate_limited("Number of requests has exceeded your rate limit"),
            max_retries=2,
        ),
        LimitCase("overloaded_529", lambda now: overloaded(), max_retries=2),
        LimitCase("throttle", _throttle, subscriber=True, max_retries=1),
        # A subscriber's plain 429 (no usage-limit headers) is the throttle as well.
        LimitCase(
            "throttle_subscriber_429",
            lambda now: rate_limited("Number of requests has exceeded your rate limit"),
            subscriber=True,
            max_retries=1,
        ),
        LimitCase("auth_401", _bad_key),
    )
}


@dataclass(frozen=True)
class CaseRun:
    """How one run of `claude -p` ended."""

    exit_code: int
    stdout: str
    stderr: str
    requests: int
    seconds: float
    started: float


def run_case(case: LimitCase, *, claude_bin: Path, workdir: Path, stream: bool) -> CaseRun:
    """Run the real `claude -p` in `workdir` against a fake API answering with `case`."""
    home, project = workdir / "home", workdir / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with FakeAnthropicServer() as server:
        server.responder = lambda request: case.reply(started)
        env = claude_env(
            base_url=server.base_url,
            home=home,
            claude_bin=claude_bin,
            subscriber=case.subscriber,
            max_retries=case.max_retries,
        )
        env["TZ"] = "UTC"
        flags = STREAM_FLAGS if stream else ()
        command = [str(claude_bin), "-p", "--dangerously-skip-permissions", *flags, PROMPT]
        clock = time.monotonic()
        done = subprocess.run(
            command,
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CASE_TIMEOUT,
            check=False,
        )
        seconds = time.monotonic() - clock
        requests = len(server.messages_requests())
    return CaseRun(done.returncode, done.stdout, done.stderr, requests, seconds, started)


def stream_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a stream-json transcript, one a line."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _record(claude_bin: Path, names: list[str]) -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for case in (CASES[name] for name in names or CASES):
        with tempfile.TemporaryDirectory() as tmp:
            run = run_case(case, claude_bin=claude_bin, workdir=Path(tmp), stream=True)
            transcript = run.stdout.replace(tmp, RECORDED_ROOT)
        (FIXTURES / f"{case.name}.jsonl").write_text(transcript, encoding="utf-8")
        print(f"{case.name}: exit {run.exit_code}, {run.requests} requests, {run.seconds:.1f}s")


if __name__ == "__main__":
    import os

    from claude_code import E2E_CLAUDE_ENV

    _record(Path(os.environ[E2E_CLAUDE_ENV]), sys.argv[1:])
    sys.exit(0)
