"""The files of earlier runs, kept in `<loops_dir>/.history/<loop>/<started>/`.

When `ll-loop run` starts a loop again, the previous run's state file, events file, action
logs and handoff session log are moved (renamed, so it costs the same whatever their
size) into a folder of their own named after the run's start, in UTC:
`.loops/.history/<loop>/20250101T120000.123456Z/`. Nothing is deleted: the history grows
until you remove what you no longer want (`rm -r .loops/.history/<loop>`, or a single run's
folder). A resume continues the same run, so it moves nothing.

An unfinished run moved away this way (a new `run` over a paused, interrupted or stalled
one) can be brought back: `latest_unfinished_run` finds the newest such folder and
`restore_archived_run` moves its files back into `.running/` (`ll-loop resume <loop>
--from-history`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from little_loops.fsm.model.approval import AWAITING_APPROVAL
from little_loops.fsm.store.loop_state import WAITING as WAITING
from little_loops.fsm.store.state_files import StatePersistence, parse_event_line

HISTORY_DIR = ".history"
# `WAITING` (loop_state): the status of a run waiting for a usage limit to reset.

LIVE_STATUSES = ("running", WAITING, AWAITING_APPROVAL)
"""Statuses of a run whose process is (or was, if it died) still at work."""

UNFINISHED_STATUSES = (
    "running",
    "awaiting_continuation",
    "interrupted",
    "stalled",
    WAITING,
    "budget_exhausted",
    AWAITING_APPROVAL,
    "usage_limited",
)
"""Saved statuses of a run that `resume` could still continue (running: its process died)."""
_STAMP_FORMAT = "%Y%m%dT%H%M%S.%fZ"


def history_dir(loops_dir: Path, loop_name: str) -> Path:
    """Where the earlier runs of `loop_name` are kept."""
    return loops_dir / HISTORY_DIR / loop_name


def archive_previous_run(
    persistence: StatePersistence, extra_files: Iterable[Path] = ()
) -> Path | None:
    """Move the previous run's files into the history; return its folder (None: no run).

    `extra_files` are other files of that run (such as a handoff session's log), moved
    along when they exist.
    """
    paths = [persistence.state_file, persistence.events_file, persistence.logs_dir]
    present = [path for path in [*paths, *extra_files] if path.exists()]
    if not present:
        return None
    stamp = _run_start(persistence, present)
    folder = _new_folder(history_dir(persistence.loops_dir, persistence.loop_name), stamp)
    for path in present:
        os.replace(path, folder / path.name)
    return folder


def _run_start(persistence: StatePersistence, files: list[Path]) -> str:
    """The run's start as a folder name: from its state, its first event, or its files."""
    state = persistence.load_state()
    started = state.started_at if state is not None else _first_event_time(persistence)
    moment = _parse_time(started) if started else None
    if moment is None:
        oldest = min(path.stat().st_mtime for path in files)
        moment = datetime.fromtimestamp(oldest, UTC)
    return moment.strftime(_STAMP_FORMAT)


def _first_event_time(persistence: StatePersistence) -> str | None:
    try:
        with persistence.events_file.open("rb") as handle:
            event = parse_event_line(handle.readline())
    except OSError:
        return None
    stamp = event.get("ts") if event is not None else None
    return stamp if isinstance(stamp, str) else None


def _parse_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _new_folder(parent: Path, stamp: str) -> Path:
    """Create `parent/stamp`, or `parent/stamp-2`, `-3`... if a run already has that name."""
    parent.mkdir(parents=True, exist_ok=True)
    candidate, number = parent / stamp, 1
    while True:
        try:
            candidate.mkdir()
        except FileExistsError:
            number += 1
            candidate = parent / f"{stamp}-{number}"
            continue
        return candidate


def latest_unfinished_run(loops_dir: Path, loop_name: str) -> Path | None:
    """The newest history folder of `loop_name` whose saved run is unfinished, if any."""
    parent = history_dir(loops_dir, loop_name)
    try:
        folders = [path for path in parent.iterdir() if path.is_dir()]
    except OSError:  # no history yet (or unreadable: nothing we can bring back)
        return None
    for folder in sorted(folders, key=folder_order, reverse=True):
        if archived_status(folder, loop_name) in UNFINISHED_STATUSES:
            return folder
    return None


def archived_status(folder: Path, loop_name: str) -> str | None:
    """The status saved in an archived run's state file (None: missing or unreadable)."""
    try:
        data = json.loads((folder / f"{loop_name}.state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    status = data.get("status") if isinstance(data, dict) else None
    return status if isinstance(status, str) else None


def restore_archived_run(persistence: StatePersistence, folder: Path) -> None:
    """Move an archived run's files back into the running directory (which must hold no
    run of that loop now: archive it first) and remove the emptied folder."""
    persistence.initialize()
    for path in sorted(folder.iterdir()):
        os.replace(path, persistence.running_dir / path.name)
    folder.rmdir()


def folder_order(folder: Path) -> tuple[str, int]:
    """`<stamp>` before `<stamp>-2` before `<stamp>-10` (see `_new_folder`)."""
    stamp, _, number = folder.name.partition("-")
    return stamp, int(number) if number.isdigit() else 1
