"""`ll-loop report` in this process (docs/report.md; issue 26 item 3), after real runs of
shell-only loops run in this process too: the table a person reads for every loop, the
`--json` document, `--since`, and the one line when no run is kept.

(test_report.py drives the same command as a subprocess, where coverage is not kept.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.cli_support import SIMPLE_LOOP, write_loop

from little_loops.cli import main_loop

# `fix` fails once (its marker file is missing), so `check` runs twice: a no, then a yes.
RETRYING_LOOP = """\
name: retrying
initial: check
max_iterations: 6
states:
  check:
    action: "test -f fixed"
    on_success: done
    on_failure: fix
  fix:
    action: touch fixed
    next: check
  done:
    terminal: true
"""

_CLOCK = re.compile(r"started \d\d:\d\d:\d\d, \S+,")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _run(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main_loop(list(argv))
    out, err = capsys.readouterr()
    return code, _CLOCK.sub("started T, D,", out), err


def _two_loops_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`simple` twice (the first run is archived to .loops/.history), `retrying` once."""
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    write_loop(tmp_path, "retrying", RETRYING_LOOP)
    for name in ("simple", "simple", "retrying"):
        assert main_loop([name, "-q"]) == 0
    capsys.readouterr()


def test_report_without_a_loop_prints_every_loop_with_runs_in_name_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/report.md: `ll-loop report` with no loop reports each loop with runs kept."""
    _two_loops_run(tmp_path, capsys)

    code, out, err = _run("report", capsys=capsys)

    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "retrying run 1 (latest): completed, started T, D, 3 actions, 0 retries, "
        "0 limit waits, $0.0000, 0 tokens",
        "  state  visits       cost         tokens  verdicts",
        "  check       2    $0.0000       0 tokens  failure 1, success 1",
        "  fix         1    $0.0000       0 tokens  -",
        "",
        "retrying totals: 1 run, 1 completed, $0.0000, 0 tokens; $0.0000 per completed run",
        "  state  visits       cost         tokens    per yes  verdicts",
        "  check       2    $0.0000       0 tokens    $0.0000  failure 1, success 1",
        "  fix         1    $0.0000       0 tokens          -  -",
        "",
        "simple run 1: completed, started T, D, 1 action, 0 retries, 0 limit waits, "
        "$0.0000, 0 tokens",
        "  state  visits       cost         tokens  verdicts",
        "  check       1    $0.0000       0 tokens  success 1",
        "",
        "simple run 2 (latest): completed, started T, D, 1 action, 0 retries, "
        "0 limit waits, $0.0000, 0 tokens",
        "  state  visits       cost         tokens  verdicts",
        "  check       1    $0.0000       0 tokens  success 1",
        "",
        "simple totals: 2 runs, 2 completed, $0.0000, 0 tokens; $0.0000 per completed run",
        "  state  visits       cost         tokens    per yes  verdicts",
        "  check       2    $0.0000       0 tokens    $0.0000  success 2",
        "",
    ]


def test_report_json_of_one_loop_is_one_document_with_its_runs_and_totals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_loops_run(tmp_path, capsys)

    code, out, err = _run("report", "simple", "--json", capsys=capsys)

    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["since"] is None
    assert [(run["loop"], run["run"], run["latest"]) for run in document["runs"]] == [
        ("simple", 1, False),
        ("simple", 2, True),
    ]
    assert [run["states"] for run in document["runs"]] == [
        {"check": {"visits": 1, "cost_usd": 0.0, "tokens": 0, "verdicts": {"success": 1}}}
    ] * 2
    assert list(document["loops"]) == ["simple"]
    assert document["loops"]["simple"]["runs"] == 2
    assert document["loops"]["simple"]["states"]["check"]["yes"] == 2


def test_report_since_a_later_time_keeps_no_run_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--since` after every run: one line on stderr, exit 1; `--json` is an empty report."""
    _two_loops_run(tmp_path, capsys)

    assert _run("report", "--since", "2999-01-01T00:00+00:00", capsys=capsys) == (
        1,
        "",
        "No runs of any loop kept since 2999-01-01T00:00+00:00\n",
    )
    code, out, _ = _run("report", "--since", "2999-01-01T00:00+00:00", "--json", capsys=capsys)
    assert (code, json.loads(out)) == (
        0,
        {"since": "2999-01-01T00:00:00+00:00", "runs": [], "loops": {}},
    )


def test_report_of_a_loop_without_runs_and_of_no_loop_at_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _run("report", "never-ran", capsys=capsys) == (
        1,
        "",
        "No runs of 'never-ran' kept\n",
    )
    assert _run("report", capsys=capsys) == (1, "", "No runs of any loop kept\n")


def test_a_run_whose_state_file_lacks_its_start_and_status_shows_question_marks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A state file written by hand (or half-written): unknown figures are `?`, not a
    traceback."""
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    assert main_loop(["simple", "-q"]) == 0
    state_file = tmp_path / ".loops" / ".running" / "simple.state.json"
    state = json.loads(state_file.read_text())
    state.update(started_at="not a time", status=None, elapsed_ms=None)
    state_file.write_text(json.dumps(state))

    code, out, _ = _run("report", "simple", capsys=capsys)

    assert code == 0
    assert out.splitlines()[0] == (
        "simple run 1 (latest): ?, started --:--:--, ?, 1 action, 0 retries, 0 limit waits, "
        "$0.0000, 0 tokens"
    )
    assert "simple totals: 1 run, 0 completed, $0.0000, 0 tokens; no completed run" in out


def test_a_real_run_without_its_state_file_keeps_the_status_it_was_saved_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/report.md: a run without a state file is read from the ends of its events.
    Its `loop_complete` says how it ended (`terminal`, `max_iterations`); the report said
    that word as the status, so a completed run was no `completed` one (0 completed, no
    cost per completed run). Now it is the status such a run is saved with."""
    write_loop(tmp_path, "simple", SIMPLE_LOOP)
    write_loop(
        tmp_path, "retrying", RETRYING_LOOP.replace("max_iterations: 6", "max_iterations: 1")
    )
    assert main_loop(["simple", "-q"]) == 0
    assert main_loop(["retrying", "-q"]) == 4  # max_iterations reached
    for name in ("simple", "retrying"):
        (tmp_path / ".loops" / ".running" / f"{name}.state.json").unlink()
    capsys.readouterr()

    code, out, _ = _run("report", "--json", capsys=capsys)

    document = json.loads(out)
    assert code == 0
    assert [(run["loop"], run["status"]) for run in document["runs"]] == [
        ("retrying", "interrupted"),
        ("simple", "completed"),
    ]
    assert document["loops"]["simple"]["completed"] == 1
    assert document["loops"]["simple"]["cost_per_completed_run"] == 0.0
