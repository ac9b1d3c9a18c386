"""Where the real Claude Code CLI is, and the environment that keeps it offline.

The pinned `@anthropic-ai/claude-code` lives in `.cache/claude-code/`, installed there by
the first test session that needs it (`claude_install.py`); `LL_E2E_CLAUDE` names another
binary to use instead.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
E2E_CLAUDE_ENV = "LL_E2E_CLAUDE"
CACHED_CLAUDE = REPO_ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
PINNED_VERSION_FILE = REPO_ROOT / ".ci" / "claude-code-version"
FAKE_API_KEY = "sk-ant-e2e-fake-key"
FAKE_OAUTH_TOKEN = "sk-ant-oat01-e2e-fake-token"

# Variables of the calling shell that would send the CLI elsewhere or change its mind.
_DROPPED = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",
    "CLAUDECODE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "IS_SANDBOX",
    "LL_CLAUDE_BIN",
    "NO_COLOR",
)


def claude_env(
    *,
    base_url: str,
    home: Path,
    claude_bin: Path,
    extra_path: list[Path] | None = None,
    subscriber: bool = False,
    max_retries: int = 0,
) -> dict[str, str]:
    """Environment for `ll-loop` and the real `claude` it starts: offline, HOME in tmp.

    `IS_SANDBOX=1` is set only for root, where Claude Code refuses
    `--dangerously-skip-permissions` without it. `extra_path` goes before PATH (the
    folder of `ll-loop`, so a Bash tool call of the model can run it).
    `subscriber` makes claude a subscription (OAuth) user instead of an API-key user:
    only then does it read the API's usage-limit headers. `max_retries` is how often
    claude retries a 429/529 itself (0: it gives up at once; with `retry-after: 1`
    from `fake_anthropic.rate_limited` each retry waits about a second).
    """
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED}
    env.update(
        {
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": base_url,
            "LL_CLAUDE_BIN": str(claude_bin),
            # No telemetry, error reports, update checks or other calls home.
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # 0: an API error ends claude at once instead of after minutes of retries.
            "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
    )
    if subscriber:
        env["CLAUDE_CODE_OAUTH_TOKEN"] = FAKE_OAUTH_TOKEN
    else:
        env["ANTHROPIC_API_KEY"] = FAKE_API_KEY
    if os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([*(str(p) for p in extra_path or []), path])
    return env
