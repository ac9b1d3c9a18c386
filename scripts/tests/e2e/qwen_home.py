"""The environment that runs the real Qwen Code CLI offline against the fake Anthropic API.

`qwen_env(base_url=..., root=tmp, qwen_bin=..., work=...)` puts HOME under `root` with
`~/.qwen/settings.json` choosing the `anthropic` auth type (so Qwen Code sends
`POST /v1/messages` to `ANTHROPIC_BASE_URL`, the runner's existing fake) and switching off
usage statistics, telemetry and auto-update (/work/shared/spec/agent-hosts.md §4: with
these, no name is looked up).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

SETTINGS = {
    "security": {"auth": {"selectedType": "anthropic"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False},
}
_DROPPED = ("ANTHROPIC_", "OPENAI_", "QWEN_", "DASHSCOPE_", "LL_QWEN_BIN")


def qwen_env(
    *,
    base_url: str,
    root: Path,
    qwen_bin: Path,
    work: Path,
    extra_path: list[Path] | None = None,
) -> dict[str, str]:
    """Environment for `ll-loop` and the real `qwen` it starts: offline, HOME in `root`."""
    home = root / "home"
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {key: value for key, value in os.environ.items() if not key.startswith(_DROPPED)}
    env.update(
        {
            "HOME": str(home),
            "PWD": str(work),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-fake-key",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
            "LL_QWEN_BIN": str(qwen_bin),
        }
    )
    path = env.get("PATH", "/usr/bin:/bin")
    env["PATH"] = os.pathsep.join([*(str(p) for p in extra_path or []), path])
    return env
