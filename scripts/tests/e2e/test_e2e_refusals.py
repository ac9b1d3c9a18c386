"""A real `claude` that refuses to run: the state gets `error` and the user sees why."""

from __future__ import annotations

import os

import pytest
from api_script import ApiScript, Rule
from e2e_project import E2EProject
from fake_anthropic import FakeAnthropicServer
from fixtures.cli_support import normalize

# `retries: 0`: a 429 claude gave up on ends the run as it did before backoffs existed
# (test_e2e_overnight.py shows the backoff).
REFUSED_LOOP = """\
name: refused
initial: work
rate_limit:
  retries: 0
states:
  work:
    action: /work the parser
    on_success: done
    on_failure: work
  done:
    terminal: true
"""
ROOT_REFUSAL = (
    "claude exited with code 1: --dangerously-skip-permissions cannot be used with "
    "root/sudo privileges for security reasons (running as root: run ll-loop as a normal "
    "user, or set IS_SANDBOX=1 if this machine is a sandbox)"
)


def _run_refused(project: E2EProject, env: dict[str, str]) -> tuple[int, str, str]:
    project.write_command("work", "Please work on: $ARGUMENTS\n")
    project.write_loop("refused", REFUSED_LOOP)
    done = project.ll_loop("run", "refused", env=env)
    return done.returncode, normalize(done.stdout), normalize(done.stderr)


def _expected(error: str) -> tuple[int, str, str]:
    stdout = (
        "Running loop: refused\n"
        "Max iterations: 50\n"
        "\n"
        "[1/50] work -> /work the parser\n"
        f"       ✗ error - {error}\n"
        "\n"
    )
    return 1, stdout, f"Loop failed: work (1 iteration, Ns) - {error}\n"


def test_not_logged_in(project: E2EProject, fake_api: FakeAnthropicServer) -> None:
    env = project.env()
    del env["ANTHROPIC_API_KEY"]
    error = (
        "claude exited with code 1: Not logged in · Please run /login "
        "(log in by running `claude` once, or set ANTHROPIC_API_KEY)"
    )
    assert _run_refused(project, env) == _expected(error)
    assert project.state("refused")["status"] == "failed"
    assert fake_api.requests == []


def test_root_without_is_sandbox(project: E2EProject, fake_api: FakeAnthropicServer) -> None:
    env = project.env()
    env.pop("IS_SANDBOX", None)
    if os.geteuid() == 0:
        assert _run_refused(project, env) == _expected(ROOT_REFUSAL)
        assert fake_api.requests == []
    else:  # a normal user is not refused: claude reaches the API
        _run_refused(project, env)
        agents = {request.headers.get("x-app") for request in fake_api.messages_requests()}
        assert "cli" in agents


def test_missing_binary(project: E2EProject) -> None:
    env = project.env()
    missing = project.root / "no-claude"
    env["LL_CLAUDE_BIN"] = str(missing)
    error = (
        f"claude CLI not found at {missing}: install Claude Code there "
        "or point LL_CLAUDE_BIN at the `claude` binary"
    )
    assert _run_refused(project, env) == _expected(error)


@pytest.mark.parametrize(
    ("api_error", "error"),
    [
        (
            (401, "authentication_error", "invalid x-api-key"),
            "claude exited with code 1: Invalid API key · Fix external API key (check "
            "ANTHROPIC_API_KEY, or unset it and log in by running `claude` once)",
        ),
        (
            (429, "rate_limit_error", "slow down"),
            "claude exited with code 1: API Error: Request rejected (429) · slow down",
        ),
    ],
    ids=["rejected-key", "rate-limited"],
)
def test_api_errors(
    project: E2EProject, script: ApiScript, api_error: tuple[int, str, str], error: str
) -> None:
    script.rules = [Rule("Please work on", error=api_error)]
    assert _run_refused(project, project.env()) == _expected(error)
