"""The names of the agent CLIs a prompt state can run on, and what chooses one.

Records only (names and the variable that picks a default), in the bottom layer so that
the loaders can refuse an unknown `host:` and the run core can name hosts in events
without importing the process layer that drives the CLIs (`process.hosts`).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_HOST",
    "HOST_ALIASES",
    "HOST_ENV",
    "HOST_NAMES",
    "canonical_host",
]

HOST_NAMES = ("claude", "codex", "gemini", "opencode", "qwen")
"""Every host, by the name a loop file uses for it."""

DEFAULT_HOST = "claude"

HOST_ENV = "LL_HOST_CLI"
"""little-loops' variable naming the host when neither the state nor the loop does."""

HOST_ALIASES = {"claude-code": "claude", "gemini-cli": "gemini", "qwen-code": "qwen"}
"""Other spellings accepted for a host (little-loops calls Claude Code `claude-code`)."""


def canonical_host(name: str) -> str | None:
    """The host `name` stands for (`claude-code` -> `claude`), or None when unknown."""
    spelled = name.strip().lower()
    spelled = HOST_ALIASES.get(spelled, spelled)
    return spelled if spelled in HOST_NAMES else None
