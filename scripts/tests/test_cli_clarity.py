"""Clear answers from the read-only commands and the parser (issue 11 items 8, 9, 11, 16;
issue 10 item 5): an unusable run directory, pure JSON on stdout, typo suggestions,
subcommand usage for a bad flag, `history` as in the reference."""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.cli_support import (
    HANDOFF_LOOP,
    SIMPLE_LOOP,
    cli_in_process,
    normalize,
    run_cli,
    save_state,
    write_loop,
)

from little_loops.cli import running_dir
from little_loops.fsm.persistence import StatePersistence


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


# --- item 8: an unusable .loops/.running/ ----------------------------------------------

IN_THE_WAY = (
    "[T] .loops/.running: cannot write run files: a file is in the way (it must be a directory)\n"
    "  ll-loop keeps each run's state, events and lock there; it must be a writable directory\n"
)
READ_COMMANDS = [
    ("history", "simple"),
    ("stop", "simple"),
    ("status", "simple"),
    ("list", "--running"),
    ("resume", "simple"),
]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: " ".join(c))
def test_a_file_in_place_of_the_run_directory_gives_runs_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: tuple[str, str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    Path(".loops/.running").write_text("not a directory")
    assert cli_in_process(capsys, "run", "simple") == (1, "", IN_THE_WAY)
    assert cli_in_process(capsys, *command) == (1, "", IN_THE_WAY)


def test_a_dangling_link_as_the_run_directory_is_a_file_in_the_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    os.symlink("nowhere", ".loops/.running")
    assert cli_in_process(capsys, "history", "simple") == (1, "", IN_THE_WAY)


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: " ".join(c))
def test_an_unreadable_run_directory_gives_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: tuple[str, str],
) -> None:
    """Root reads any directory, so the refusal is simulated where the OS gives it."""
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    save_state("simple", "interrupted")
    real_listdir = os.listdir

    def listdir(path: Any) -> list[str]:
        if str(path).endswith(".running"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_listdir(path)

    monkeypatch.setattr(running_dir.os, "listdir", listdir)
    assert cli_in_process(capsys, *command) == (
        1,
        "",
        "[T] .loops/.running: cannot write run files: Permission denied\n"
        "  ll-loop keeps each run's state, events and lock there; it must be a writable "
        "directory\n",
    )


def test_no_run_directory_is_no_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "list", "--running") == (0, "No running loops\n", "")
    assert cli_in_process(capsys, "status", "x") == (1, "", "[T] No state found for: x\n")


# --- item 9: warnings on stderr, JSON alone on stdout ----------------------------------


def test_list_running_json_with_a_damaged_state_file_is_pure_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    save_state("good", "interrupted")
    Path(".loops/.running/broken.state.json").write_text("{")
    code, out, err = cli_in_process(capsys, "list", "--running", "--json")
    assert code == 0
    assert [row["loop_name"] for row in json.loads(out)] == ["good"]
    assert err.startswith("[T] Skipping unreadable state file .loops/.running/broken.state.json: ")


def test_every_json_output_is_one_document_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert cli_in_process(capsys, "run", "simple")[0] == 0
    Path(".loops/.running/broken.state.json").write_text("{")
    for command in (
        ("list", "--json"),
        ("list", "--running", "--json"),
        ("status", "simple", "--json"),
        ("history", "simple", "--json"),
    ):
        code, out, _ = cli_in_process(capsys, *command)
        assert code == 0, command
        json.loads(out)  # one document, nothing before or after it


# --- item 11: typos and usage ----------------------------------------------------------


def test_a_misspelt_command_suggests_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_in_process(capsys, "stauts", "tour") == (
        2,
        "",
        "usage: ll-loop [-h] [--version] command ...\n"
        "ll-loop: error: unknown command 'stauts' (did you mean 'status'?)\n",
    )
    assert cli_in_process(capsys, "histroy", "tour")[2].endswith(
        "ll-loop: error: unknown command 'histroy' (did you mean 'history'?)\n"
    )


def test_a_loop_named_like_a_typo_still_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ll-loop <loop>` means `ll-loop run <loop>` (reference): a loop file wins."""
    write_loop(tmp_path, "stats", SIMPLE_LOOP.replace("name: simple", "name: stats"))
    code, out, err = cli_in_process(capsys, "stats")
    assert (code, err) == (0, "")
    assert out.startswith("Running loop: stats\n")


def test_a_word_far_from_every_command_is_a_loop_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "tour") == (
        1,
        "",
        "[T] Loop not found: tour\n"
        "  looked in: tour, .loops/tour.fsm.yaml, .loops/tour.yaml, .loops/tour.yml\n",
    )


def test_a_bad_flag_shows_the_subcommands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "status", "tour", "--bogus") == (
        2,
        "",
        "usage: ll-loop status [-h] [--json] [--engine {local,temporal}] loop\n"
        "ll-loop status: error: unrecognized arguments: --bogus\n",
    )
    code, _, err = cli_in_process(capsys, "tour", "--bogus")
    assert code == 2
    assert err.startswith("usage: ll-loop run ")
    assert err.endswith("ll-loop run: error: unrecognized arguments: --bogus\n")


WORK_LOOP = """\
name: worker
initial: work
states:
  work:
    action: echo working
    next: done
  done:
    terminal: true
"""


def test_resume_background_continues_the_run_detached(tmp_path: Path) -> None:
    write_loop(tmp_path, "worker", WORK_LOOP)
    save_state("worker", "interrupted", phase="routed")
    started = run_cli(tmp_path, "resume", "worker", "--background")
    assert (started.returncode, started.stderr) == (0, "")
    assert normalize(started.stdout) == (
        "[T] Started worker in the background (pid N)\n"
        "  log:    .loops/.running/worker.log\n"
        "  status: ll-loop status worker\n"
        "  stop:   ll-loop stop worker\n"
    )
    state_file = tmp_path / ".loops/.running/worker.state.json"
    deadline = time.monotonic() + 20
    while json.loads(state_file.read_text())["status"] != "completed":
        assert time.monotonic() < deadline, "the background resume did not finish"
        time.sleep(0.05)
    log = (tmp_path / ".loops/.running/worker.log").read_text()
    assert log.startswith("Resuming loop 'worker' from state 'work' (iteration 3)\n")


def test_resume_background_refuses_up_front(tmp_path: Path) -> None:
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    refused = run_cli(tmp_path, "resume", "simple", "--background")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.endswith("] Nothing to resume for: simple\n")


def test_resume_background_refuses_a_changed_loop_file_before_detaching(tmp_path: Path) -> None:
    """The same check as a resume here (the saved state must still be in the loop file),
    made before anything starts: the refusal is seen, not buried in the background log."""
    write_loop(tmp_path, "handoff", HANDOFF_LOOP)
    assert run_cli(tmp_path, "handoff").returncode == 3
    write_loop(tmp_path, "handoff", HANDOFF_LOOP.replace("step", "stride"))
    refused = run_cli(tmp_path, "resume", "handoff", "--background")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert normalize(refused.stderr) == (
        "[T] loop 'handoff' stopped at state 'step', which the loop file no longer has; "
        "restore state 'step' in the file, then: ll-loop resume handoff\n"
    )
    assert not (tmp_path / ".loops/.running/handoff.log").exists()


# --- item 16 / issue 10 item 5: history ------------------------------------------------


def test_history_tail_zero_shows_every_event_as_in_the_reference(
    capsys: pytest.CaptureFixture[str],
) -> None:
    persistence = StatePersistence("many", Path(".loops"))
    persistence.initialize()
    for number in range(60):
        persistence.append_event({"event": "tick", "ts": "2026-11-21T23:18:41+00:00", "n": number})
    code, out, _ = cli_in_process(capsys, "history", "many", "--raw", "--tail", "0")
    assert code == 0
    assert len(out.splitlines()) == 60
    assert out.splitlines()[0] == "2026-11-21T23:18:41+00:00 tick: {'n': 0}"
    assert len(json.loads(cli_in_process(capsys, "history", "many", "-n", "0", "--json")[1])) == 60
    assert len(cli_in_process(capsys, "history", "many", "--raw")[1].splitlines()) == 50
    assert len(cli_in_process(capsys, "history", "many")[1].splitlines()) == 50
