"""What `show` draws of a loop's latest run: its state record, current state and visits.

Visits come from the state file's `visits` (saved for loops that use `max_visits`),
else they are counted from the run's `state_enter` events. A state file that cannot be
read leaves the picture without a run (the problem is said once on stderr).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from little_loops.cli.diagram import RunMarks
from little_loops.cli.output import Logger
from little_loops.fsm.engine.events import STATE_ENTER
from little_loops.fsm.errors import StateFileError
from little_loops.fsm.persistence import LoopState, StatePersistence


def latest_run(loop_name: str, loops_dir: Path) -> LoopState | None:
    """The saved state of `loop_name`'s latest run, or None (none, or unreadable)."""
    try:
        return StatePersistence(loop_name, loops_dir).load_state_checked()
    except StateFileError as exc:
        Logger().warning(f"Not showing the run: unreadable state file {exc.path}: {exc.problem}")
        return None


def run_marks(state: LoopState, loops_dir: Path) -> RunMarks:
    """The current state and the visits per state of the run `state` records."""
    visits = dict(state.visits)
    if not visits:
        events = StatePersistence(state.loop_name, loops_dir).read_events()
        entered = Counter(
            str(event["state"])
            for event in events
            if event.get("event") == STATE_ENTER and "state" in event
        )
        visits = dict(entered)
    return RunMarks(current_state=state.current_state, visits=visits)
