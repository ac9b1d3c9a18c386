"""The environment that runs the real OpenCode CLI offline against the fake Chat API.

`opencode_env(base_url=..., root=tmp, opencode_bin=...)` puts HOME and every XDG directory
under `root`, writes `opencode.json` there (a provider `fake` at `base_url`, no autoupdate
or sharing; no `permission` block: the adapter's `--auto` must be what lets tools run) and
the settings of /work/shared/spec/agent-hosts.md §3 that keep opencode from reaching past
127.0.0.1: the
`OPENCODE_DISABLE_*` variables and a pre-seeded `package-lock.json` in the config dir, which
stops the background `npm install @opencode-ai/plugin` it would otherwise start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FAKE_MODEL = "fake/gpt-fake"
FAKE_API_KEY = "dummy-key"

_OFFLINE = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
}
# Variables of the calling shell that would point opencode at another config or binary.
_DROPPED = ("OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENCODE_CONFIG_DIR", "LL_OPENCODE_BIN")


def opencode_config(base_url: str, cost: dict[str, float] | None = None) -> dict[str, object]:
    """opencode.json with the one provider `fake` at `base_url` (`cost`: $ per MTok)."""
    model: dict[str, object] = {"name": "gpt-fake", "limit": {"context": 128000, "output": 8192}}
    if cost is not None:
        model["cost"] = cost
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Fake",
        "options": {"baseURL": base_url, "apiKey": FAKE_API_KEY},
        "models": {"gpt-fake": model},
    }
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": FAKE_MODEL,
        "small_model": FAKE_MODEL,
        "provider": {"fake": provider},
    }


def opencode_env(
    *,
    base_url: str,
    root: Path,
    opencode_bin: Path,
    work: Path,
    cost: dict[str, float] | None = None,
    extra_path: list[Path] | None = None,
) -> dict[str, str]:
    """Environment for `ll-loop` and the real `opencode` it starts: offline, all in `root`.

    `PWD` is set to `work`, the directory the process starts in: opencode takes `$PWD`, not
    its real working directory, as the project (its bash tool runs there).
    """
    xdg = {name: root / "xdg" / name.lower() for name in ("CONFIG", "DATA", "CACHE", "STATE")}
    config_dir = xdg["CONFIG"] / "opencode"
    config_dir.mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(parents=True, exist_ok=True)
    (config_dir / "opencode.json").write_text(json.dumps(opencode_config(base_url, cost)))
    _preseed_plugin(config_dir)
    env = {key: value for key, value in os.environ.items() if key not in _DROPPED}
    env.update(_OFFLINE)
    env.update({f"XDG_{name}_HOME": str(path) for name, path in xdg.items()})
    env["HOME"] = str(root / "home")
    env["PWD"] = str(work)
    env["LL_OPENCODE_BIN"] = str(opencode_bin)
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([*(str(p) for p in extra_path or []), path])
    return env


def _preseed_plugin(config_dir: Path) -> None:
    """What makes opencode believe `@opencode-ai/plugin` is installed in its config dir."""
    (config_dir / "node_modules").mkdir(exist_ok=True)
    lock = {"packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}
    (config_dir / "package-lock.json").write_text(json.dumps(lock))
