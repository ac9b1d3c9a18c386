"""`run --context KEY=VALUE`: the argparse type, and the values a saved run keeps.

`resume` loads the loop with the values its run was started with (the state file's
`context_overrides`), before the loop file is checked, so a `${context.KEY}` that only
the command line defined still passes. A state file that cannot be read gives none here;
`resume` then reports it as usual.
"""

from __future__ import annotations

import argparse

from little_loops.cli.resolve import LOOPS_DIR, loop_name_for
from little_loops.fsm.errors import StateFileError
from little_loops.fsm.loading.context_overrides import parse_assignment
from little_loops.fsm.persistence import StatePersistence


def context_assignment(text: str) -> tuple[str, str]:
    """argparse `type=` for `--context`: a bad one is a usage error (exit 2), one line."""
    try:
        return parse_assignment(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def saved_context_overrides(loop_arg: str) -> dict[str, str]:
    """The `--context` values of the saved run of `loop_arg` (empty when there are none)."""
    try:
        state = StatePersistence(loop_name_for(loop_arg), LOOPS_DIR).load_state_checked()
    except StateFileError:
        return {}
    return dict(state.context_overrides) if state is not None else {}
