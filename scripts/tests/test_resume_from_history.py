"""A new `run` over an unfinished run says so; `resume --from-history` brings it back.

Issue 11 item 2. Real loops in `tmp_path`; only the terminal is captured.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, cli_in_process, write_loop

from little_loops.cli import main_loop
from little_loops.fsm.store.run_history import (
    archived_status,
    history_dir,
    latest_unfinished_run,
    restore_archived_run,
)
from little_loops.fsm.store.state_files import LoopState, StatePersistence

PAUSING_LOOP = """\
name: tour
initial: wave
max_iterations: 10
states:
  wave:
    action: >-
      if [ ${handoff.count} -eq 0 ]; then echo "CONTEXT_HANDOFF: prompt of run ${context.run}";
      else echo "resumed: ${handoff.prompt}"; fi
    next: done
  done:
    terminal: true
context:
  run: one
"""


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _state(tmp_path: Path) -> dict[str, object]:
    data = json.loads((tmp_path / ".loops/.running/tour.state.json").read_text())
    assert isinstance(data, dict)
    return data


def _history(tmp_path: Path) -> list[Path]:
    return sorted(history_dir(tmp_path / ".loops", "tour").iterdir())


def test_run_over_a_paused_run_says_where_it_went_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "tour", PAUSING_LOOP)
    assert main_loop(["run", "tour", "-q"]) == 3
    capsys.readouterr()
    code, out, err = cli_in_process(capsys, "run", "tour", "-q")
    assert (code, out) == (3, "Resume with: ll-loop resume tour\n")
    [folder] = _history(tmp_path)
    assert err == (
        "A new run of tour started; the unfinished one (awaiting_continuation at state "
        f"'wave', iteration 1) is kept in {folder.relative_to(tmp_path)}. To go back to it "
        "once the new run has ended: ll-loop resume tour --from-history\n"
    )


def test_run_over_a_finished_run_archives_it_without_a_word(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert main_loop(["run", "simple", "-q"]) == 0
    assert cli_in_process(capsys, "run", "simple", "-q") == (0, "", "")


def test_resume_from_history_brings_back_the_archived_paused_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_loop(tmp_path, "tour", PAUSING_LOOP)
    assert main_loop(["run", "tour", "-q"]) == 3  # paused with "prompt of run one"
    path.write_text(PAUSING_LOOP.replace("run: one", "run: two"), encoding="utf-8")
    assert main_loop(["run", "tour", "-q"]) == 3  # archives the first run
    assert main_loop(["resume", "tour", "-q"]) == 0  # the second run completes
    capsys.readouterr()

    code, out, err = cli_in_process(capsys, "resume", "tour", "--from-history")

    assert (code, err) == (0, "")
    assert "Brought back the run of tour archived in .loops/.history/tour/" in out
    assert "Continuation context: prompt of run one" in out
    assert _state(tmp_path)["status"] == "completed"
    # The completed second run was archived in turn; the first one's folder is gone.
    assert [archived_status(folder, "tour") for folder in _history(tmp_path)] == ["completed"]


def test_resume_from_history_refuses_while_the_current_run_is_unfinished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "tour", PAUSING_LOOP)
    assert main_loop(["run", "tour", "-q"]) == 3
    assert main_loop(["run", "tour", "-q"]) == 3
    before = _state(tmp_path)
    capsys.readouterr()
    assert cli_in_process(capsys, "resume", "tour", "--from-history") == (
        1,
        "",
        "[T] the current run of 'tour' is itself unfinished (awaiting_continuation at state "
        "'wave'): continue it with ll-loop resume tour; --from-history brings back an "
        "archived run once the current one has ended\n",
    )
    assert _state(tmp_path) == before
    assert len(_history(tmp_path)) == 1


def test_resume_from_history_refuses_when_there_is_no_unfinished_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "tour", PAUSING_LOOP)
    assert cli_in_process(capsys, "resume", "tour", "--from-history") == (
        1,
        "",
        "[T] nothing to bring back: .loops/.history/tour/ holds no unfinished run of 'tour' "
        "(the runs kept: ll-loop history tour --runs)\n",
    )


def _archive(tmp_path: Path, folder: str, status: str) -> Path:
    path = history_dir(tmp_path / ".loops", "demo") / folder
    path.mkdir(parents=True)
    state = LoopState("demo", "a", 1, {}, None, None, "2025-01-01T00:00:00+00:00", "", status)
    (path / "demo.state.json").write_text(json.dumps(state.to_dict()))
    return path


def test_latest_unfinished_run_skips_finished_and_orders_same_second_runs(
    tmp_path: Path,
) -> None:
    loops = tmp_path / ".loops"
    assert latest_unfinished_run(loops, "demo") is None
    _archive(tmp_path, "20250101T000000.000000Z", "interrupted")
    _archive(tmp_path, "20250101T000000.000000Z-2", "stalled")
    wanted = _archive(tmp_path, "20250101T000000.000000Z-10", "stalled")
    _archive(tmp_path, "20250102T000000.000000Z", "completed")
    (history_dir(loops, "demo") / "20250103T000000.000000Z").mkdir()  # no state file
    assert latest_unfinished_run(loops, "demo") == wanted


def test_restore_archived_run_moves_every_file_back(tmp_path: Path) -> None:
    folder = _archive(tmp_path, "20250101T000000.000000Z", "interrupted")
    (folder / "demo.logs").mkdir()
    (folder / "demo.logs" / "1-a.log").write_text("out\n")
    persistence = StatePersistence("demo", tmp_path / ".loops")
    restore_archived_run(persistence, folder)
    assert not folder.exists()
    loaded = persistence.load_state()
    assert loaded is not None and loaded.status == "interrupted"
    assert (persistence.logs_dir / "1-a.log").read_text() == "out\n"


def test_run_in_the_background_over_a_paused_run_says_so_before_detaching(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "tour", PAUSING_LOOP)
    assert main_loop(["run", "tour", "-q"]) == 3
    capsys.readouterr()
    code, _, err = cli_in_process(capsys, "run", "tour", "--background", "-q")
    assert code == 0
    assert err == (
        "A new run of tour starts; the unfinished one (awaiting_continuation at state 'wave') "
        "is kept in .loops/.history/tour/. To go back to it once the new run has ended: "
        "ll-loop resume tour --from-history\n"
    )
    log = tmp_path / ".loops/.running/tour.log"
    deadline = time.monotonic() + 30
    while "Resume with" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline, "the background run never paused"
        time.sleep(0.05)
