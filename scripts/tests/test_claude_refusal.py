"""Telling a `claude` that refused to run from one that ran (claude_refusal, runner).

The messages are the real CLI's (seen by the e2e tests in `e2e/test_e2e_refusals.py`);
here small scripts repeat them so the runner's handling is checked without Node.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from little_loops.fsm.process.claude_refusal import (
    CLAUDE_NOT_FOUND,
    claude_not_found,
    claude_refusal,
)
from little_loops.fsm.process.runner import DefaultActionRunner

ROOT_MESSAGE = (
    "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons"
)
ROOT_ERROR = (
    f"claude exited with code 1: {ROOT_MESSAGE} (running as root: run ll-loop as a normal "
    "user, or set IS_SANDBOX=1 if this machine is a sandbox)"
)
LOGIN_MESSAGE = "Not logged in · Please run /login"
LOGIN_ERROR = (
    f"claude exited with code 1: {LOGIN_MESSAGE} "
    "(log in by running `claude` once, or set ANTHROPIC_API_KEY)"
)

KEY_ERROR = (
    "claude exited with code 1: Invalid API key · Fix external API key (check "
    "ANTHROPIC_API_KEY, or unset it and log in by running `claude` once)"
)


@pytest.mark.parametrize(
    ("exit_code", "output", "stderr", "expected"),
    [
        (0, "", "", None),
        (0, LOGIN_MESSAGE + "\n", "", None),
        (1, "", ROOT_MESSAGE + "\n", ROOT_ERROR),
        (1, LOGIN_MESSAGE + "\n", "", LOGIN_ERROR),
        (1, "  \n", "", "claude exited with code 1: no message"),
        (
            2,
            "",
            "error: unknown option '--bogus'\n",
            "claude exited with code 2: error: unknown option '--bogus'",
        ),
        (1, "Invalid API key · Fix external API key\n", "", KEY_ERROR),
        (
            1,
            "API Error: 500 boom. Try again.\n",
            "",
            "claude exited with code 1: API Error: 500 boom. Try again.",
        ),
        (
            1,
            "Error: Reached max turns (3)\n",
            "",
            "claude exited with code 1: Error: Reached max turns (3)",
        ),
        (1, "3 tests failed\n", "", None),
        (1, f"The docs say: {LOGIN_MESSAGE}\nand more\n", "", None),
    ],
)
def test_claude_refusal(exit_code: int, output: str, stderr: str, expected: str | None) -> None:
    assert claude_refusal(exit_code, output, stderr) == expected


def test_claude_not_found_names_the_configured_path() -> None:
    assert claude_not_found("claude") == CLAUDE_NOT_FOUND
    assert claude_not_found("/opt/cc/claude") == (
        "claude CLI not found at /opt/cc/claude: install Claude Code there "
        "or point LL_CLAUDE_BIN at the `claude` binary"
    )


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return path


def test_runner_turns_a_login_refusal_on_stdout_into_an_error(tmp_path: Path) -> None:
    claude = _script(tmp_path / "claude", f"echo '{LOGIN_MESSAGE}'; exit 1\n")
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:x", 10, True)
    assert (result.output, result.exit_code, result.error) == (LOGIN_MESSAGE + "\n", 1, LOGIN_ERROR)


def test_runner_turns_a_root_refusal_into_an_error(tmp_path: Path) -> None:
    claude = _script(tmp_path / "claude", f"echo '{ROOT_MESSAGE}' >&2; exit 1\n")
    result = DefaultActionRunner(claude_bin=str(claude)).run("/ll:x", 10, True)
    assert (result.output, result.exit_code, result.error) == ("", 1, ROOT_ERROR)


def test_shell_actions_are_never_taken_for_claude(tmp_path: Path) -> None:
    result = DefaultActionRunner().run(f"echo '{LOGIN_MESSAGE}'; exit 1", 10, False)
    assert (result.exit_code, result.error) == (1, None)


def test_runner_names_a_missing_configured_claude(tmp_path: Path) -> None:
    missing = tmp_path / "no-claude"
    result = DefaultActionRunner(claude_bin=str(missing)).run("/ll:x", 10, True)
    assert (result.exit_code, result.error) == (127, claude_not_found(str(missing)))
