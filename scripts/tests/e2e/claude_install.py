"""Install the pinned Claude Code CLI for the end-to-end tests, on first use.

The README's `pytest` runs the e2e tests on a fresh clone: the first session that needs the
CLI installs `@anthropic-ai/claude-code` at the version in `.ci/claude-code-version` with
npm into `.cache/claude-code/` (see `npm_cli.py`, which installs every agent CLI the tests
drive). `LL_E2E_CLAUDE` names another binary to use instead.

`python3 scripts/tests/e2e/claude_install.py` (what `.ci/install-claude-code` runs) does the
same from a shell and prints the binary's path.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from npm_cli import CLAUDE_CODE, CliUnavailable, ensure, installed_version, main

__all__ = ["ClaudeCodeUnavailable", "ensure_claude_code", "installed_version", "pinned_version"]

ClaudeCodeUnavailable = CliUnavailable


def pinned_version() -> str:
    return CLAUDE_CODE.pinned_version()


def ensure_claude_code(announce: Callable[[str], None]) -> Path:
    """The Claude Code binary the e2e tests run, installed first if needed."""
    return ensure(CLAUDE_CODE, announce)


if __name__ == "__main__":
    sys.exit(main([CLAUDE_CODE.name]))
