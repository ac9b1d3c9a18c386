"""Install the pinned Claude Code CLI for the end-to-end tests, on first use.

The README's `pytest` runs the e2e tests on a fresh clone: the first session that needs the
CLI installs `@anthropic-ai/claude-code` at the version in `.ci/claude-code-version` with
npm into `.cache/claude-code/` (npm's download cache in `.cache/npm/`; nothing global,
nothing under ~; `.cache/` is gitignored). The package brings the platform's native binary
as an optional dependency, so only the npm registry is needed. A file lock makes concurrent
pytest processes wait for one install instead of both installing. Whatever stops the
install is a `ClaudeCodeUnavailable` whose message is one line saying what to do; the
fixture makes it a failure, never a skip.

`python3 scripts/tests/e2e/claude_install.py` (what `.ci/install-claude-code` runs) does the
same from a shell and prints the binary's path.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from claude_code import CACHED_CLAUDE, E2E_CLAUDE_ENV, PINNED_VERSION_FILE, REPO_ROOT

PACKAGE = "@anthropic-ai/claude-code"
PREFIX = REPO_ROOT / ".cache" / "claude-code"
NPM_CACHE = REPO_ROOT / ".cache" / "npm"
LOCK_FILE = REPO_ROOT / ".cache" / "claude-code.lock"
NPM_TIMEOUT_SECONDS = 900
VERSION_TIMEOUT_SECONDS = 60


class ClaudeCodeUnavailable(Exception):
    """The CLI is not there and cannot be installed; the message says what to do."""


def pinned_version() -> str:
    return PINNED_VERSION_FILE.read_text(encoding="utf-8").strip()


def ensure_claude_code(announce: Callable[[str], None]) -> Path:
    """The Claude Code binary the e2e tests run, installed first if needed.

    `LL_E2E_CLAUDE` names a binary to use as it is; otherwise the pinned version in
    `.cache/claude-code/` is used, installed with npm when it is missing or another version.
    `announce` is told once, before a download starts.
    """
    configured = os.environ.get(E2E_CLAUDE_ENV)
    if configured:
        return _configured_binary(Path(configured))
    version = pinned_version()
    if installed_version(CACHED_CLAUDE) == version:
        return CACHED_CLAUDE
    npm = shutil.which("npm")
    if npm is None:
        raise ClaudeCodeUnavailable(
            f"npm not found: the end-to-end tests install Claude Code {version} with npm into "
            ".cache/claude-code; install Node.js with npm (https://nodejs.org) and run "
            "pytest again"
        )
    with _install_lock():
        # Another pytest process may have installed it while this one waited for the lock.
        if installed_version(CACHED_CLAUDE) != version:
            announce(
                f"installing Claude Code {version} into .cache/claude-code for the end-to-end tests"
            )
            _npm_install(npm, version)
    found = installed_version(CACHED_CLAUDE)
    if found != version:
        raise ClaudeCodeUnavailable(
            f"{CACHED_CLAUDE} is not a working Claude Code {version} after npm install "
            f"(its --version says {found or 'nothing'})"
        )
    return CACHED_CLAUDE


def _configured_binary(path: Path) -> Path:
    if path.is_file() and os.access(path, os.X_OK):
        return path
    raise ClaudeCodeUnavailable(
        f"{E2E_CLAUDE_ENV}={path} is not an executable file: point it at a claude binary, "
        f"or unset it to let the tests install Claude Code {pinned_version()} "
        "into .cache/claude-code"
    )


def installed_version(binary: Path) -> str | None:
    """The version a claude binary reports (`2.1.330 (Claude Code)` -> `2.1.330`)."""
    try:
        finished = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = finished.stdout.split()
    return words[0] if finished.returncode == 0 and words else None


@contextmanager
def _install_lock() -> Iterator[None]:
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def _npm_install(npm: str, version: str) -> None:
    PREFIX.mkdir(parents=True, exist_ok=True)
    command = [
        npm,
        "install",
        "--prefix",
        str(PREFIX),
        "--cache",
        str(NPM_CACHE),
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        f"{PACKAGE}@{version}",
    ]
    try:
        finished = subprocess.run(
            command, capture_output=True, text=True, timeout=NPM_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ClaudeCodeUnavailable(
            f"npm install of {PACKAGE}@{version} did not finish in {NPM_TIMEOUT_SECONDS} s"
        ) from exc
    if finished.returncode != 0:
        last_line = (finished.stderr.strip().splitlines() or ["no message"])[-1]
        raise ClaudeCodeUnavailable(
            f"npm install of {PACKAGE}@{version} into .cache/claude-code failed "
            f"(exit {finished.returncode}): {last_line}"
        )


def main() -> int:
    try:
        binary = ensure_claude_code(lambda line: print(line, file=sys.stderr, flush=True))
    except ClaudeCodeUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(binary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
