"""The runs of a loop that `ll-loop history` can show: those archived in
`.loops/.history/<loop>/<started>/` (oldest first) and then the latest, in `.running/`.

`history <loop> --runs` lists them, numbered from 1 (one line a run: number, start, status,
iterations, final state); `history <loop> --run N` shows the events of run N.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from little_loops.cli.history_lines import clock_time
from little_loops.cli.output import plural
from little_loops.cli.spending_text import spent_text
from little_loops.fsm.store.run_history import folder_order, history_dir


@dataclass(frozen=True)
class Run:
    """One run of a loop: where its files are, and what its state file says."""

    number: int
    folder: Path
    latest: bool
    state: dict[str, Any]

    @property
    def events_file(self) -> Path:
        return self.folder / f"{self.state_name}.events.jsonl"

    @property
    def state_name(self) -> str:
        return str(self.state.get("loop_name", ""))

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.number,
            "folder": str(self.folder),
            "latest": self.latest,
            "started_at": self.state.get("started_at"),
            "status": self.state.get("status"),
            "iterations": self.state.get("iteration"),
            "final_state": self.state.get("current_state"),
            "spending": self.state.get("spending") or None,
        }

    def line(self) -> str:
        started = _moment(self.state.get("started_at"))
        status = str(self.state.get("status") or "?")
        iterations = self.state.get("iteration")
        count = plural(iterations, "iteration") if isinstance(iterations, int) else "?"
        where = self.state.get("current_state") or "?"
        latest = "  (latest)" if self.latest else ""
        spent = spent_text(self.state.get("spending")).removeprefix(", ")
        spent = f"  {spent}" if spent else ""
        return (
            f"{self.number:>4}  {clock_time(started)}  {status:<22} {count:<14} "
            f"{where}{spent}{latest}"
        )


def runs_of(loops_dir: Path, running_dir: Path, loop_name: str) -> list[Run]:
    """Every run of `loop_name` with files, oldest first."""
    folders = _archived_folders(history_dir(loops_dir, loop_name))
    has_latest = any(
        (running_dir / f"{loop_name}{suffix}").exists()
        for suffix in (".state.json", ".events.jsonl")
    )
    if has_latest:
        folders.append(running_dir)
    return [
        Run(number, folder, folder == running_dir, _state(folder, loop_name))
        for number, folder in enumerate(folders, start=1)
    ]


def _archived_folders(parent: Path) -> list[Path]:
    try:
        folders = [path for path in parent.iterdir() if path.is_dir()]
    except OSError:  # no history yet
        return []
    return sorted(folders, key=folder_order)


def _state(folder: Path, loop_name: str) -> dict[str, Any]:
    """The run's saved state (its loop name at least, when missing or unreadable)."""
    try:
        data = json.loads((folder / f"{loop_name}.state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    return {**data, "loop_name": loop_name} if isinstance(data, dict) else {"loop_name": loop_name}


def _moment(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None
