"""Keeping a run's action logs bounded: the logs of its last `logs_keep` actions stay.

Each action leaves up to two files in the run's log folder, `<iteration>-<state>.log`
(stdout) and `<iteration>-<state>.stderr.log`; together they are that action's logs.
`LogRetention` remembers, oldest first, the actions that left logs (on its first use it
counts those already in the folder, so a resumed run goes on from what the earlier
process left) and deletes an action's logs once `keep` newer actions have some. Logs
still in use are never deleted, whatever their age: those a capture or `${prev}` still
names (the state file names them too). The action just run (which its evaluator may
read) is the newest, so it is kept. So the folder holds the logs of the last `keep`
actions, plus older ones still in use.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from pathlib import Path

from little_loops.fsm.process.output_files import STDERR_LOG_SUFFIX, stderr_log_path

__all__ = ["LogRetention", "action_name"]

# `<iteration>-<state>` of an action's log file (see `output_files.action_log_name`).
_LOG_NAME = re.compile(r"^(\d+)-.*\.log$")


def action_name(name: str) -> str:
    """The stdout log name of the action that owns the log file called `name`."""
    if name.endswith(STDERR_LOG_SUFFIX):
        return name.removesuffix(STDERR_LOG_SUFFIX) + ".log"
    return name


class LogRetention:
    """The logs of the last `keep` actions of a run in `log_dir` (`keep` >= 1)."""

    def __init__(self, log_dir: Path, keep: int) -> None:
        self.log_dir = log_dir
        self.keep = keep
        self._actions: dict[str, None] | None = None  # stdout log names, oldest first

    def add(self, log_path: Path, in_use: Iterable[str]) -> None:
        """Note the action whose stdout log is (or would be) `log_path`, then delete the
        logs of the actions older than the last `keep`, except those named in `in_use`.
        """
        actions = self._known_actions()
        name = log_path.name
        actions.pop(name, None)  # a state run again under the same number: now newest
        actions[name] = None
        if len(actions) <= self.keep:
            return
        # By name: the folder is this run's, and a path saved by an earlier process may
        # be spelled differently (relative or absolute).
        spared = {name, *(Path(path).name for path in in_use)}
        for old in list(actions)[: len(actions) - self.keep]:
            if old not in spared:
                _delete_logs(self.log_dir / old)
                del actions[old]

    def _known_actions(self) -> dict[str, None]:
        if self._actions is None:
            self._actions = dict.fromkeys(_existing_actions(self.log_dir))
        return self._actions


def _existing_actions(log_dir: Path) -> list[str]:
    """The names of the actions that have logs in `log_dir`, oldest first."""
    found: dict[str, int] = {}
    with contextlib.suppress(FileNotFoundError), os.scandir(log_dir) as entries:
        for entry in entries:
            match = _LOG_NAME.match(entry.name)
            if match is not None:
                found[action_name(entry.name)] = int(match.group(1))
    return sorted(found, key=lambda name: (found[name], name))


def _delete_logs(log_path: Path) -> None:
    for path in (log_path, stderr_log_path(log_path)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
