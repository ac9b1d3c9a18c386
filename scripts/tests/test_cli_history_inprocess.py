"""`ll-loop history` in this process (docs/user-guide.md, history; issue 23 item 14): the
runs kept (`--runs`, its JSON forms and `--since`), the events of run N (`--run N`), the
raw outputs, the errors that name what was asked for, and a damaged events file.

Three real runs of a shell-only loop, run here: two stopped after one iteration (kept in
`.loops/.history/`), then the latest (three iterations, in `.loops/.running/`).
(test_history_query.py covers the same listing as a slow subprocess test.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.cli_support import FAILING_LOOP, cli_in_process, write_loop

from little_loops.cli import main_loop

_CLOCK = re.compile(r"\b\d\d:\d\d:\d\d\b")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def three_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    write_loop(tmp_path, "failing", FAILING_LOOP)
    for argv in (["-n", "1"], ["-n", "1"], []):
        assert main_loop(["failing", "-q", *argv]) == 4  # max_iterations reached
    capsys.readouterr()
    return tmp_path


def _history(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code, out, err = cli_in_process(capsys, "history", "failing", *argv)
    return code, _CLOCK.sub("T", out), err


def test_runs_lists_the_kept_runs_oldest_first_and_marks_the_latest(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(capsys, "--runs") == (
        0,
        " run  started   status                 iterations     final state\n"
        "   1  T  interrupted            1 iteration    fix\n"
        "   2  T  interrupted            1 iteration    fix\n"
        "   3  T  interrupted            3 iterations   fix  (latest)\n",
        "",
    )


def test_runs_as_json_lines_name_each_runs_folder(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _history(capsys, "--runs", "--jsonl")

    runs = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(run["run"], run["latest"], run["iterations"]) for run in runs] == [
        (1, False, 1),
        (2, False, 1),
        (3, True, 3),
    ]
    assert [run["folder"].startswith(".loops/.history/failing/") for run in runs] == [
        True,
        True,
        False,
    ]
    assert runs[2]["folder"] == ".loops/.running"
    assert {run["status"] for run in runs} == {"interrupted"}
    assert {run["final_state"] for run in runs} == {"fix"}


def test_runs_since_a_later_time_lists_none(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(capsys, "--runs", "--since", "2999-01-01") == (
        0,
        "No history for: failing\n",
        "",
    )
    assert _history(capsys, "--runs", "--json", "--since", "2999-01-01") == (0, "[]\n", "")


def test_run_n_shows_the_events_of_that_run(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _history(capsys, "--run", "1", "--event", "route")

    assert (code, out) == (0, "T check  ✗ failure -> fix  (Ns)\n")


def test_run_n_past_the_last_run_is_one_line_naming_the_runs_kept(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(capsys, "--run", "4") == (
        1,
        "",
        "[T] No run 4 of failing (runs 1-3; list them: ll-loop history failing --runs)\n",
    )


def test_run_n_of_a_loop_without_runs_says_none_are_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli_in_process(capsys, "history", "never", "--run", "1") == (
        1,
        "",
        "[T] No run 1 of never (no runs kept; list them: ll-loop history never --runs)\n",
    )


def test_raw_tail_0_prints_every_event_of_the_latest_run_as_the_reference_did(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _history(capsys, "--raw", "--tail", "0")

    lines = out.splitlines()
    assert code == 0
    assert len(lines) == 16
    assert re.fullmatch(r"\S+ loop_start: \{'loop': 'failing'\}", lines[0])
    assert lines[-1].endswith(
        " loop_complete: {'final_state': 'fix', 'iterations': 3, 'terminated_by': 'max_iterations'}"
    )


def test_jsonl_and_json_keep_the_last_tail_events(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _history(capsys, "--jsonl", "--tail", "2")
    json_code, json_out, _ = _history(capsys, "--json", "--tail", "1")

    assert (code, json_code) == (0, 0)
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["route", "loop_complete"]
    (last,) = json.loads(json_out)
    assert (last["event"], last["terminated_by"]) == ("loop_complete", "max_iterations")


def test_a_state_and_an_event_together_keep_that_states_routes(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _history(capsys, "--state", "fix", "--event", "route")

    assert (code, out) == (0, "T fix  -> check (next)  (Ns)\n")


def test_nothing_after_since_says_no_events_match(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(capsys, "--since", "2999-01-01") == (0, "No events match\n", "")


def test_an_unknown_state_names_the_loops_states(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _history(capsys, "--state", "nosuch") == (
        1,
        "",
        "[T] --state nosuch: failing has no such state (its states: check, fix, done)\n",
    )


def test_an_unknown_state_of_a_run_whose_loop_file_is_gone_is_no_error(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's events decide when the loop's file cannot be read."""
    (three_runs / ".loops" / "failing.yaml").unlink()

    assert _history(capsys, "--state", "nosuch") == (0, "No events match\n", "")


def test_a_loop_that_never_ran_has_no_history_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_in_process(capsys, "history", "never") == (1, "No history for: never\n", "")
    assert cli_in_process(capsys, "history", "never", "--json") == (1, "[]\n", "")


def test_lines_that_are_not_events_are_skipped_and_counted(
    three_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = three_runs / ".loops" / ".running" / "failing.events.jsonl"
    events.write_text("not an event\n" + events.read_text() + '{"half": \n')

    code, out, err = _history(capsys, "--event", "loop_complete")

    assert code == 0
    assert out.startswith("T loop_complete ")
    assert err == "note: 2 lines of .loops/.running/failing.events.jsonl skipped: not an event\n"
