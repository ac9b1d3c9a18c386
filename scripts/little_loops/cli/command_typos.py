"""Telling a mistyped subcommand (`ll-loop stauts x`) from a loop name (`ll-loop tour`).

`ll-loop <word>` runs the loop `<word>`, so a word is only taken for a typo when it names
no loop file and is close to one of the commands.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

# How alike a word and a command must be (difflib ratio): `stauts`/`status` is 0.83,
# `hist`/`history` 0.73, `tour`/`stop` 0.5.
SIMILARITY = 0.7


def misspelt_command(word: str, commands: Sequence[str]) -> str | None:
    """The command `word` is a typo of, or None (a flag, a loop, or nothing close)."""
    if word.startswith("-") or "/" in word or "." in word:
        return None
    close = difflib.get_close_matches(word, commands, n=1, cutoff=SIMILARITY)
    if not close or _names_a_loop(word):
        return None
    return close[0]


def _names_a_loop(word: str) -> bool:
    from little_loops.cli.resolve import resolve_loop_path
    from little_loops.fsm.errors import LoopError

    try:
        resolve_loop_path(word)
    except LoopError:
        return False
    return True
