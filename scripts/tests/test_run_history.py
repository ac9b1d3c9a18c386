"""run_history: the previous run's files move to `.loops/.history/<loop>/<start>/`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from little_loops.fsm.store.run_history import archive_previous_run, history_dir
from little_loops.fsm.store.state_files import LoopState, StatePersistence


def files(tmp_path: Path) -> StatePersistence:
    persistence = StatePersistence("demo", tmp_path / ".loops")
    persistence.initialize()
    return persistence


def save_state(persistence: StatePersistence, started_at: str) -> None:
    state = LoopState("demo", "a", 1, {}, None, None, started_at, "", "completed")
    persistence.save_state(state)


def folder_names(tmp_path: Path) -> list[str]:
    return sorted(path.name for path in history_dir(tmp_path / ".loops", "demo").iterdir())


def test_nothing_to_move_is_no_history(tmp_path: Path) -> None:
    assert archive_previous_run(files(tmp_path), [tmp_path / "missing.log"]) is None
    assert not (tmp_path / ".loops" / ".history").exists()


def test_the_folder_is_named_after_the_start_in_utc(tmp_path: Path) -> None:
    persistence = files(tmp_path)
    save_state(persistence, "2025-03-04T05:06:07.089000+02:00")
    persistence.append_event({"event": "loop_start", "ts": "2020-01-01T00:00:00+00:00"})
    persistence.logs_dir.mkdir()
    (persistence.logs_dir / "1-a.log").write_text("out\n")
    folder = archive_previous_run(persistence)
    assert folder == history_dir(tmp_path / ".loops", "demo") / "20250304T030607.089000Z"
    assert sorted(path.name for path in folder.iterdir()) == [
        "demo.events.jsonl",
        "demo.logs",
        "demo.state.json",
    ]
    assert (folder / "demo.logs" / "1-a.log").read_text() == "out\n"
    assert json.loads((folder / "demo.state.json").read_text())["status"] == "completed"
    assert list(persistence.running_dir.iterdir()) == []


def test_without_a_readable_state_the_first_event_names_the_run(tmp_path: Path) -> None:
    persistence = files(tmp_path)
    persistence.state_file.write_text("{ damaged")
    persistence.append_event({"event": "loop_start", "ts": "2024-12-31T23:59:59.000001"})
    archive_previous_run(persistence)
    assert folder_names(tmp_path) == ["20241231T235959.000001Z"]  # no zone: taken as UTC
    assert (history_dir(tmp_path / ".loops", "demo") / folder_names(tmp_path)[0]).is_dir()


def test_without_any_start_time_the_oldest_file_names_the_run(tmp_path: Path) -> None:
    persistence = files(tmp_path)
    persistence.events_file.write_text("not json\n")
    extra = tmp_path / "demo.handoff.log"
    extra.write_text("spawned\n")
    os.utime(extra, (1_700_000_000, 1_700_000_000))
    archive_previous_run(persistence, [extra])
    assert folder_names(tmp_path) == ["20231114T221320.000000Z"]
    assert not extra.exists()


def test_a_start_time_that_does_not_parse_falls_back_to_the_files(tmp_path: Path) -> None:
    persistence = files(tmp_path)
    save_state(persistence, "yesterday")
    os.utime(persistence.state_file, (1_600_000_000, 1_600_000_000))
    archive_previous_run(persistence)
    assert folder_names(tmp_path) == ["20200913T122640.000000Z"]


def test_two_runs_with_the_same_start_get_their_own_folders(tmp_path: Path) -> None:
    persistence = files(tmp_path)
    for _ in range(3):
        save_state(persistence, "2025-01-01T00:00:00+00:00")
        archive_previous_run(persistence)
    assert folder_names(tmp_path) == [
        "20250101T000000.000000Z",
        "20250101T000000.000000Z-2",
        "20250101T000000.000000Z-3",
    ]


def test_an_events_file_that_cannot_be_read_falls_back_to_the_files(tmp_path: Path) -> None:
    persistence = files(tmp_path)
    persistence.events_file.mkdir()  # exists, but reading it fails
    os.utime(persistence.events_file, (1_500_000_000, 1_500_000_000))
    archive_previous_run(persistence)
    assert folder_names(tmp_path) == ["20170714T024000.000000Z"]
