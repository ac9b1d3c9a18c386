"""Where a run's notify command's calls are logged: every run archives that file with
its other files, so the name is kept apart from `notifier` (loaded only by a run that
notifies)."""

from __future__ import annotations

from pathlib import Path

from little_loops.fsm.store.state_files import StatePersistence

__all__ = ["notify_log_path"]


def notify_log_path(persistence: StatePersistence) -> Path:
    """Where the calls of a run's notify command are logged, one line each."""
    return persistence.running_dir / f"{persistence.loop_name}.notify.log"
