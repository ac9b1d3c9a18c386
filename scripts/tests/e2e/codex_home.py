"""A Codex home in tmp_path that keeps the real `codex` offline, and its environment.

`codex_env(...)` gives the variables for `codex` (or `ll-loop` starting it): `CODEX_HOME`
is a folder in the test's tmp_path holding the `config.toml` of spec agent-hosts.md §1 — a
custom provider at the fake Responses API (`fake_openai.py`), plugins, analytics, update
checks and the endless reconnects switched off — so no run looks anything up beyond
127.0.0.1. `stream_max_retries`/`request_max_retries` are codex's own retries of a 5xx or
429 (kept low: each round waits).
"""

from __future__ import annotations

import os
from pathlib import Path

FAKE_KEY_ENV = "LL_E2E_CODEX_KEY"
FAKE_KEY = "sk-e2e-fake-openai-key"

# Variables of the calling shell that would send codex elsewhere.
_DROPPED = ("CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "LL_CODEX_BIN", "NO_COLOR")


def write_config(
    codex_home: Path, base_url: str, *, stream_max_retries: int = 0, request_max_retries: int = 0
) -> Path:
    """`config.toml` pointing codex at `base_url` with nothing else reaching out."""
    codex_home.mkdir(parents=True, exist_ok=True)
    config = codex_home / "config.toml"
    config.write_text(
        f"""model = "gpt-fake"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
env_key = "{FAKE_KEY_ENV}"
wire_api = "responses"
request_max_retries = {request_max_retries}
stream_max_retries = {stream_max_retries}
stream_idle_timeout_ms = 20000

[analytics]
enabled = false
[feedback]
enabled = false
[otel]
exporter = "none"

[features]
plugins = false
unbounded_connection_retries = false
""",
        encoding="utf-8",
    )
    return config


def codex_env(
    *, codex_home: Path, codex_bin: Path, extra_path: list[Path] | None = None
) -> dict[str, str]:
    """Environment for `codex` (and `ll-loop` starting it): its home in tmp, the fake key.

    `TZ=UTC` makes the time of day in codex's usage-limit message a UTC one.
    """
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED}
    env.update(
        {
            "CODEX_HOME": str(codex_home),
            FAKE_KEY_ENV: FAKE_KEY,
            "LL_CODEX_BIN": str(codex_bin),
            "TZ": "UTC",
        }
    )
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([*(str(p) for p in extra_path or []), path])
    return env
