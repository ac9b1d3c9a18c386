"""Which actions are slash commands: a fact of the loop file's action text (pure).

In the bottom layer so that the run core (`engine/action_step`) tells the kinds apart
without importing the process layer; `process.runner` re-exports it under its old name.
"""

from __future__ import annotations

__all__ = ["is_slash_command"]


def is_slash_command(action: str) -> bool:
    """True when `action` starts with `/` and its first word has no other `/`.

    So `/ll:check_code types` is a slash command and `/usr/bin/env make` is a shell command.
    """
    if not action.startswith("/"):
        return False
    first_word = action.split(maxsplit=1)[0]
    return "/" not in first_word[1:]
