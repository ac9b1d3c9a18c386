"""Telling that the Claude Code CLI refused to run, and what the user can do about it.

A slash-command state whose `claude` refused to start must get the `error` verdict with
claude's own words, never be judged as if the model had answered. What the real CLI
(2.1.x, run by the end-to-end tests) does when it refuses:

- as root, `--dangerously-skip-permissions` is refused unless `IS_SANDBOX=1` is set:
  exit 1, nothing on stdout, the reason on stderr;
- without credentials: exit 1 and `Not logged in · Please run /login` on **stdout**;
- a key the API rejects: exit 1 and `Invalid API key · Fix external API key` on stdout;
- an API error that outlived its retries: exit 1 and one `API Error: ...` line on stdout;
- a missing binary never starts (the runner's start fails).

A non-zero exit with other output is not a refusal: the session ran, and the state is
judged as usual (by exit code when the LLM is off).
"""

from __future__ import annotations

CLAUDE_NOT_FOUND = "claude CLI not found: install Claude Code or set LL_CLAUDE_BIN"

_ROOT_REFUSAL = "cannot be used with root/sudo privileges"
_ROOT_HINT = (
    "running as root: run ll-loop as a normal user, or set IS_SANDBOX=1 "
    "if this machine is a sandbox"
)
_LOGIN_REFUSAL = "Please run /login"
_LOGIN_HINT = "log in by running `claude` once, or set ANTHROPIC_API_KEY"
_KEY_REFUSAL = "Invalid API key"
_KEY_HINT = "check ANTHROPIC_API_KEY, or unset it and log in by running `claude` once"
# How claude's own one-line failure reports on stdout begin.
_FAILURE_STARTS = ("Not logged in", _KEY_REFUSAL, "API Error:", "Error:")


def claude_not_found(program: str) -> str:
    """Why a slash command could not start: no `claude` on PATH, or not at `program`."""
    if program == "claude":
        return CLAUDE_NOT_FOUND
    return (
        f"claude CLI not found at {program}: install Claude Code there "
        "or point LL_CLAUDE_BIN at the `claude` binary"
    )


def claude_refusal(exit_code: int, output: str, stderr: str) -> str | None:
    """The error for a `claude` run that refused or failed to work, or None when it ran.

    That is a non-zero exit that printed nothing on stdout, or only one of claude's own
    failure lines. The message quotes claude and, when known, says what to do.
    """
    if exit_code == 0:
        return None
    said = output.strip()
    if said and not _is_refusal_line(said):
        return None
    message = said or stderr.strip() or "no message"
    hint = _hint_for(message)
    error = f"claude exited with code {exit_code}: {message}"
    return f"{error} ({hint})" if hint else error


def is_auth_failure(output: str, api_error_status: int | None) -> bool:
    """Whether a failed claude run could not authenticate: not logged in, a key the API
    rejects (claude's own lines above), or an API error 401 (HEAD sends these straight to
    `on_error`: waiting or retrying does not help)."""
    said = output.strip()
    if api_error_status == 401 or said.startswith("API Error: 401"):
        return True
    return _is_refusal_line(said) and (_LOGIN_REFUSAL in said or said.startswith(_KEY_REFUSAL))


def _is_refusal_line(text: str) -> bool:
    # One line only: a model's long answer that quotes such a line is not a refusal.
    if "\n" in text:
        return False
    return text.startswith(_FAILURE_STARTS) or _LOGIN_REFUSAL in text


def _hint_for(message: str) -> str | None:
    if _ROOT_REFUSAL in message:
        return _ROOT_HINT
    if _LOGIN_REFUSAL in message:
        return _LOGIN_HINT
    if message.startswith(_KEY_REFUSAL):
        return _KEY_HINT
    return None
