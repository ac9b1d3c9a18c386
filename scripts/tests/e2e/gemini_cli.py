"""The environment that runs the real Gemini CLI offline, its home in a temporary folder.

The pinned `@google/gemini-cli` lives in `.cache/gemini-cli/` (`npm_cli.GEMINI_CLI`,
installed by the first test session that needs it; `LL_E2E_GEMINI` names another binary).
`gemini_env` writes the settings that keep it from looking up anything beyond 127.0.0.1
(docs: /work/shared/spec/agent-hosts.md, Gemini CLI): API-key auth, no update checks, no
usage statistics, no telemetry, and `general.maxAttempts` (how often it tries a failed API
call itself; low, so error tests are quick).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FAKE_API_KEY = "gemini-e2e-fake-key"
FAKE_MODEL = "gemini-2.5-flash"

# Variables of the calling shell that would send the CLI elsewhere or change its mind.
_DROPPED = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GEMINI_MODEL",
    "GEMINI_CLI_HOME",
    "GEMINI_SYSTEM_MD",
    "LL_GEMINI_BIN",
    "NO_COLOR",
)


def write_settings(home: Path, *, max_attempts: int = 1) -> Path:
    """`<home>/.gemini/settings.json` with the offline settings."""
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "maxAttempts": max_attempts,
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    return path


def gemini_env(
    *,
    base_url: str,
    home: Path,
    gemini_bin: Path,
    extra_path: list[Path] | None = None,
    max_attempts: int = 1,
    api_key: str = FAKE_API_KEY,
    model: str | None = None,
) -> dict[str, str]:
    """Environment for `ll-loop` and the real `gemini` it starts: offline, home in tmp.

    `home` holds the CLI's configuration (`GEMINI_CLI_HOME`) and is HOME too; its
    `settings.json` is written here. `TMPDIR` is `home/tmp` (the CLI writes an error
    report there for each failed API call). `extra_path` goes before PATH. `model` is
    the user's own default model (`GEMINI_MODEL`), for runs that pass no `--model`.
    """
    write_settings(home, max_attempts=max_attempts)
    tmp = home / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED}
    env.update(
        {
            "HOME": str(home),
            "GEMINI_CLI_HOME": str(home),
            "GEMINI_API_KEY": api_key,
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_TELEMETRY_ENABLED": "false",
            "LL_GEMINI_BIN": str(gemini_bin),
            "TMPDIR": str(tmp),
        }
    )
    if model is not None:
        env["GEMINI_MODEL"] = model
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([*(str(p) for p in extra_path or []), path])
    return env
