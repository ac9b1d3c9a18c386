"""What the stall evaluators read from the host: the work tree's diff and history files.

Run by the driver (locally, or by the Temporal worker in its checkout), never by the run
core. Failures raise `StallReadError` with a one-line reason, which becomes the `error`
verdict.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

__all__ = ["GIT_TIMEOUT_SECONDS", "StallReadError", "git_diff_stat", "read_history"]

GIT_TIMEOUT_SECONDS = 30


class StallReadError(Exception):
    """The host could not give what a stall evaluator needs (the message says why)."""


def git_diff_stat(scope: list[str] | None) -> str:
    """`git diff --stat` of the work tree (limited to `scope` paths when given)."""
    argv = ["git", "diff", "--stat", "--", *(scope or [])]
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="backslashreplace",
            timeout=GIT_TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError as exc:
        raise StallReadError("git not found") from exc
    except subprocess.TimeoutExpired as exc:
        raise StallReadError(f"git diff --stat took over {GIT_TIMEOUT_SECONDS}s") from exc
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()  # git's first line says why (usage follows)
        reason = said[0] if said else f"exit code {done.returncode}"
        raise StallReadError(f"git diff --stat failed: {reason}")
    return done.stdout


def read_history(path: str) -> str:
    """The text of a history file ("" when it does not exist)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise StallReadError(f"Cannot read history file {path}: {exc.strerror}") from exc
